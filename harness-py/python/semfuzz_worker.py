"""The Python half of semfuzz's worker, run inside the interpreter the worker embeds.

The Rust side calls `setup` once, then `handle` for every request frame. Requests and
answers are JSON headers plus a binary payload; every answer has `"ok": true` or
`"ok": false` with an `"error": {"type", "message"}`.
"""

import json
import os
import site
import sys

_env = {}


def setup(python, sys_path):
    """Activate the selected environment's packages and import TensorFlow."""
    for entry in sys_path:
        if entry in sys.path:
            continue
        if entry.endswith("site-packages"):
            site.addsitedir(entry)  # also runs the environment's .pth files
        else:
            sys.path.append(entry)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy
    import tensorflow
    import keras

    _env.update(python=python, numpy=numpy, tensorflow=tensorflow, keras=keras)


def _hello(_request, _payload):
    return {
        "versions": {
            "python": "%d.%d.%d" % sys.version_info[:3],
            "tensorflow": _env["tensorflow"].__version__,
            "keras": _env["keras"].__version__,
            "numpy": _env["numpy"].__version__,
            "environment": _env["python"],
        }
    }, b""


_OPS = {"hello": _hello}


def handle(header, payload):
    """Answer one request frame: (header JSON, payload bytes) -> (header JSON, payload bytes)."""
    try:
        request = json.loads(header)
        op = _OPS.get(request.get("op"))
        if op is None:
            raise ValueError("unknown request %r" % request.get("op"))
        body, data = op(request, payload)
        body["ok"] = True
        return json.dumps(body), data
    except Exception as e:  # every failure becomes an answer; the worker keeps serving
        return json.dumps({"ok": False, "error": {"type": type(e).__name__, "message": str(e)}}), b""
