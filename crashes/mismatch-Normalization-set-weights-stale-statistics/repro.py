"""Normalization caches its statistics when it is built; `set_weights` changes the variables
but not the cache, so the layer keeps normalising with the old statistics. Exits 1 while the
bug is present, 0 once fixed. Needs TensorFlow, Keras and NumPy only."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

layer = keras.layers.Normalization(dtype="float64")
layer.build((None, 2))
layer.set_weights([np.array([1.0, 2.0]), np.array([4.0, 4.0]), np.array(0)])
y = np.asarray(layer(np.zeros((1, 2))))
print("after set_weights(mean=[1, 2], variance=[4, 4]), zeros normalise to", y.tolist())
print("expected [[-0.5, -1.0]]")
sys.exit(0 if np.allclose(y, [[-0.5, -1.0]]) else 1)
