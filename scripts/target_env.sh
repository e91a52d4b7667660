#!/usr/bin/env bash
# Another target to fuzz besides the pinned environment: a cached Python environment with a
# given Keras and TensorFlow (KERAS=3.x.y [TF=2.y.z]) or the nightlies (TARGET=nightly).
# Unpinned by purpose (only Keras and TensorFlow are fixed), each records what it installed
# (`pip freeze`) in semfuzz-freeze.txt beside itself; it is made once and reused, and
# REFRESH=1 makes it again (the nightlies move). Prints the --python to give semfuzz, and
# links .venv-<name> to it (PRINT=interpreter prints the interpreter's path alone;
# PRINT=packages prints what it would install and does nothing).
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
CACHE=${SEMFUZZ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/semfuzz}

say() { printf 'setup: %s\n' "$*" >&2; }

command -v "$PYTHON" >/dev/null || { say "no '$PYTHON' on PATH; set PYTHON=/path/to/python3.11"; exit 2; }
pyver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

if [ "${TARGET:-}" = nightly ]; then
    name=nightly
    packages=(tf-nightly keras-nightly)
    pre=(--pre)
elif [ -n "${TARGET:-}" ]; then
    say "TARGET=$TARGET: expected TARGET=nightly, or KERAS=3.x.y [TF=2.y.z]"
    exit 2
else
    [[ "$KERAS" =~ ^3\.[0-9]+\.[0-9]+$ ]] \
        || { say "KERAS=$KERAS: expected a Keras 3 release such as 3.3.3"; exit 2; }
    minor=$(cut -d. -f1,2 <<<"$KERAS")
    tf=${TF:-$(awk -v m="$minor" '$1 "" == m { print $2 }' python/targets.tsv)}  # as text: 3.1 is not 3.10
    [ -n "$tf" ] || { say "no TensorFlow for Keras $minor in python/targets.tsv: give TF=2.y.z"; exit 2; }
    name=keras-$KERAS-tf-$tf
    packages=("tensorflow-cpu==$tf" "keras==$KERAS")
    pre=()
fi

# PRINT=packages: what would be installed, one per line, and nothing done.
if [ "${PRINT:-}" = packages ]; then
    printf '%s\n' "${packages[@]}"
    exit 0
fi

venv="$CACHE/target-$name-py$pyver"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock-target-$name-py$pyver"
flock 9

if [ -f "$venv/.semfuzz-complete" ] && [ "${REFRESH:-0}" != 1 ]; then
    say "reusing $venv (installed $(date -r "$venv/.semfuzz-complete" +%F); REFRESH=1 renews it)"
else
    say "creating $venv (${packages[*]}; a few minutes)"
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${pre[@]}" "${packages[@]}"
    TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" -c 'import tensorflow, keras' 2>/dev/null \
        || { say "TensorFlow or Keras does not import in $venv"; exit 1; }
    "$venv/bin/python" -m pip freeze --all --disable-pip-version-check >"$venv/semfuzz-freeze.txt"
    touch "$venv/.semfuzz-complete"
fi
exec 9>&-

ln -sfn "$venv" ".venv-$name"
say "ready: $(grep -iE '^(keras|keras-nightly|tensorflow[-_]cpu|tf[-_]nightly)==' "$venv/semfuzz-freeze.txt" | tr '\n' ' ')"
# PRINT=interpreter: the interpreter's path alone (what `semfuzz bisect` reads).
if [ "${PRINT:-}" = interpreter ]; then
    echo "$venv/bin/python"
else
    echo "--python $venv/bin/python"
fi
