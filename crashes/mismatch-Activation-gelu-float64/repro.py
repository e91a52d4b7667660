"""float64 GELU (approximate=False) in TensorFlow is only float32-accurate.

tf.nn.gelu computes 0.5 * x * erfc(-x * cast(0.7071067811865476, dtype)). The Python float
is first converted to a float32 constant and only then cast to float64, so the factor is
0.70710676908493042 instead of 0.70710678118654757 and every float64 GELU carries a relative
error of about 5e-9 (millions of ulps). keras.activations.gelu, keras.layers.Activation("gelu")
and Dense(..., activation="gelu") all go through it.

Exits 1 while the bug is present, 0 once fixed. Needs only TensorFlow, Keras and NumPy.
"""

import math
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

x = np.array([0.5, 1.0, -0.3, 2.0], dtype=np.float64)
layer = keras.layers.Activation("gelu", dtype="float64")
actual = np.asarray(layer(x))
expected = np.array([0.5 * v * math.erfc(-v / math.sqrt(2.0)) for v in x])
rel = np.abs(actual - expected) / np.abs(expected)
print("x        ", x.tolist())
print("expected ", expected.tolist())
print("actual   ", actual.tolist())
print("rel error", rel.tolist(), "(float64 eps is 2.2e-16)")
sys.exit(1 if rel.max() > 1e-13 else 0)
