"""Writes harness-py/data/keras-<version>.json: the layer classes and nested objects the
installed Keras offers, with their constructors' arguments and defaults, as the worker
reports them. semfuzz adapts cases written for that release to other targets with it.
Run with the project's environment: .venv/bin/python scripts/make_offers.py"""

import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "harness-py", "python"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy  # noqa: E402
import tensorflow  # noqa: E402

import semfuzz_worker  # noqa: E402

semfuzz_worker._env.update(
    python=sys.executable, numpy=numpy, tensorflow=tensorflow, jax=None, torch=None, keras=keras, backend="tensorflow"
)
target = semfuzz_worker._target(None, None)[0]["target"]
offers = {k: target[k] for k in ("layers", "base_layer", "objects", "aliases", "activations")}
path = os.path.join(here, "..", "harness-py", "data", "keras-%s.json" % keras.__version__)
with open(path, "w") as f:
    json.dump({"keras": keras.__version__, **offers}, f, indent=1, sort_keys=True)
    f.write("\n")
print(path)
