"""Standalone repro of crashes/unexpected-rejection-Dot-build-shapes-as-lists.

A model with one `Dot` layer on two inputs, rebuilt from its config after a JSON round trip
(what loading a saved model does: the build shapes come back as lists, not tuples). Exits 1
when Keras refuses to rebuild it, 0 when the rebuilt model computes the dot product. Needs
only TensorFlow, Keras and NumPy.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

a = keras.Input((3,), name="a")
b = keras.Input((3,), name="b")
model = keras.Model([a, b], layers.Dot(axes=1, name="dot")([a, b]))
config = json.loads(json.dumps(model.get_config()))
try:
    rebuilt = keras.Model.from_config(config)
except ValueError as e:
    print(f"Keras {keras.__version__} cannot rebuild the model: {e}")
    sys.exit(1)
x = np.array([[1.0, 2.0, 3.0]], dtype="float32")
y = np.array([[0.5, -1.0, 2.0]], dtype="float32")
got = np.asarray(rebuilt([x, y]))
print(f"Keras {keras.__version__}: {got.tolist()} (expected [[4.5]])")
sys.exit(0 if np.allclose(got, [[4.5]]) else 1)
