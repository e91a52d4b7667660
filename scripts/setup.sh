#!/usr/bin/env bash
# Set up semfuzz: the pinned Python environment (TensorFlow CPU, JAX and PyTorch, the Keras
# backends it runs) and the release binary.
#
# Idempotent. The environment lives in a cache outside the clone, keyed by the hash of
# python/requirements.lock, python/torch.lock and the base Python's version, and .venv links
# to it; a complete cached environment is reused as it is, so a second run takes seconds.
# PyTorch is installed last: where it cannot be, the set-up says so, TensorFlow and JAX still
# work, and the next set-up tries again.
#
# Environment:
#   PYTHON            base interpreter for the venv (default: python3); its minor version
#                     is the one the binary embeds
#   SEMFUZZ_CACHE     where environments are kept (default: ${XDG_CACHE_HOME:-~/.cache}/semfuzz)
#   SEMFUZZ_SKIP_BUILD=1  set up the environment only
#   SEMFUZZ_SKIP_BROWSER=1  do not install Chromium (the HTML report's browser test needs it)
#
# Other targets (environments to fuzz besides the pinned one; see scripts/target_env.sh):
#   KERAS=3.x.y [TF=2.y.z]  a cached environment with this Keras and its TensorFlow
#                           (python/targets.tsv gives TF for each Keras minor)
#   TARGET=nightly          tf-nightly-cpu and keras-nightly, cached apart; REFRESH=1 renews it
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
CACHE=${SEMFUZZ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/semfuzz}
LOCK=python/requirements.lock
TORCH_LOCK=python/torch.lock

say() { printf 'setup: %s\n' "$*" >&2; }

if [ -n "${KERAS:-}" ] || [ -n "${TARGET:-}" ]; then
    exec scripts/target_env.sh
fi

command -v "$PYTHON" >/dev/null || { say "no '$PYTHON' on PATH; set PYTHON=/path/to/python3.11"; exit 2; }
pyver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$pyver" = "3.11" ] || say "warning: $PYTHON is Python $pyver; the lock was made for 3.11"

key=$( { cat "$LOCK" "$TORCH_LOCK"; echo "$pyver"; } | sha256sum | cut -c1-16)
venv="$CACHE/venv-py$pyver-$key"
mkdir -p "$CACHE"

exec 9>"$CACHE/.lock-$key"
flock 9  # two set-ups at once (CI and a user) must not build the same venv twice

pip_check() {
    # torch.lock leaves out the CUDA packages a CPU run never loads (see its header); pip
    # reports exactly those as missing, and nothing else may be.
    { "$venv/bin/python" -m pip check --disable-pip-version-check || true; } \
        | grep -v -E '^(torch [^ ]+ requires (cuda-bindings|cuda-toolkit|triton)|nvidia-nvshmem-cu13 [^ ]+ requires nvidia-cuda-cccl|nvidia-(cusparse|cufft) [^ ]+ requires nvidia-nvjitlink), which is not installed\.$' \
        | grep -v -x 'No broken requirements found\.'
}

if [ -f "$venv/.semfuzz-complete" ]; then
    say "reusing $venv"
else
    say "creating $venv (TensorFlow CPU and JAX, pinned; a few minutes)"
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
        --require-hashes -r "$LOCK"
    TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" -c 'import tensorflow, keras, jax' 2>/dev/null \
        || { say "TensorFlow, JAX or Keras does not import in $venv"; exit 1; }
    touch "$venv/.semfuzz-complete"
fi
if [ ! -f "$venv/.semfuzz-torch" ]; then
    say "installing PyTorch into $venv (CPU use of the PyPI build, pinned; 2.3 GB to download)"
    if "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
        --require-hashes -r "$TORCH_LOCK" \
        && "$venv/bin/python" -c 'import torch, numpy; torch.ones(1)' 2>/dev/null; then
        touch "$venv/.semfuzz-torch"
    else
        say "warning: PyTorch could not be installed; the torch backend is unavailable until a later set-up installs it"
    fi
fi
if problems=$(pip_check); then
    printf '%s\n' "$problems" >&2
    say "inconsistent environment in $venv"
    exit 1
fi
exec 9>&-

ln -sfn "$venv" .venv

# A headless browser: fuzzer/tests/triage_browser.rs loads the triage report's HTML page in
# it. Installed from the distribution where absent, without prompting (CI has no stdin).
if [ "${SEMFUZZ_SKIP_BROWSER:-0}" != 1 ] && ! command -v chromium >/dev/null \
    && ! command -v chromium-browser >/dev/null; then
    if command -v apt-get >/dev/null; then
        sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo -n)
        say "installing Chromium from the distribution (under a minute)"
        apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dpkg::Use-Pty=0)
        { "${apt[@]}" update && "${apt[@]}" install --no-install-recommends chromium fonts-dejavu-core; } \
            </dev/null >/dev/null \
            || say "warning: could not install Chromium; the HTML report's browser test will fail until it is installed"
    else
        say "warning: no chromium on PATH and no apt-get; install Chromium for the HTML report's browser test"
    fi
fi

if [ "${SEMFUZZ_SKIP_BUILD:-0}" != 1 ]; then
    say "building the release binary"
    cargo build --release --quiet
fi
say "ready: $(readlink .venv)"
