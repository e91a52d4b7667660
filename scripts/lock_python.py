"""Regenerate python/requirements.lock from python/requirements.in.

Installs the top-level requirements into a scratch environment, records every installed
distribution with its exact version, and pins the sha256 of the wheel pip chose for this
platform, so `pip install --no-deps --require-hashes` reproduces the environment exactly.

Usage: python3 scripts/lock_python.py
"""

import hashlib
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
IN = ROOT / "python" / "requirements.in"
LOCK = ROOT / "python" / "requirements.lock"
TOOLING = {"pip", "setuptools"}  # the venv brings them


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        venv = pathlib.Path(tmp) / "venv"
        run(sys.executable, "-m", "venv", str(venv))
        pip = str(venv / "bin" / "pip")
        run(pip, "install", "-q", "-r", str(IN))
        pins = [
            line
            for line in run(pip, "freeze", "--all").splitlines()
            if line and line.split("==")[0].lower() not in TOOLING
        ]
        wheels = pathlib.Path(tmp) / "wheels"
        run(pip, "download", "-q", "--no-deps", "-d", str(wheels), *pins)
        files = {
            p.name.split("-")[0].lower().replace("_", "-").replace(".", "-"): p
            for p in wheels.iterdir()
        }
        out = [
            "# The project's Python environment: every installed distribution, exact version and",
            f"# wheel hash (Linux x86_64, CPython {sys.version_info.major}.{sys.version_info.minor}).",
            "# Made by scripts/lock_python.py from python/requirements.in; installed by scripts/setup.sh",
            "# with pip install --no-deps --require-hashes.",
        ]
        for pin in sorted(pins, key=str.lower):
            name = pin.split("==")[0].lower().replace("_", "-").replace(".", "-")
            digest = hashlib.sha256(files[name].read_bytes()).hexdigest()
            out.append(f"{pin} \\\n    --hash=sha256:{digest}")
        LOCK.write_text("\n".join(out) + "\n")
    print(f"wrote {LOCK} ({len(pins)} distributions)")


if __name__ == "__main__":
    main()
