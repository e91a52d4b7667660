"""Float64 Rescaling, Normalization and Masking compute with float32 copies of their Python
float constants. Exits 1 while the bug is present, 0 once fixed. Needs TensorFlow, Keras and
NumPy only."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

ok = True
y = np.asarray(keras.layers.Rescaling(0.1, dtype="float64")(np.ones((1, 1))))
print("Rescaling(0.1) on 1.0 in float64:", repr(y[0, 0]), "expected 0.1")
ok &= y[0, 0] == 0.1

y = np.asarray(keras.layers.Normalization(mean=0.1, variance=1.0, dtype="float64")(np.full((1, 1), 0.1)))
print("Normalization(mean=0.1) on 0.1 in float64:", repr(y[0, 0]), "expected 0.0")
ok &= y[0, 0] == 0.0

m = keras.layers.Masking(0.1, dtype="float64")(np.full((1, 1, 2), 0.1))._keras_mask
print("Masking(0.1) mask of a step of 0.1 in float64:", np.asarray(m).tolist(), "expected [[False]]")
ok &= not bool(np.asarray(m)[0, 0])
sys.exit(0 if ok else 1)
