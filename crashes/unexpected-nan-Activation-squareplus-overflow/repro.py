"""Keras's squareplus gives +inf for inputs beyond the square root of the dtype's largest
value, where the function is finite.

`squareplus(x, b=4) = (x + sqrt(x**2 + b)) / 2` is about `x` for a large positive `x` and
about `1 / |x|` for a large negative one. Keras's TensorFlow backend computes the formula as
written, so `x**2` overflows once |x| passes 1.8e19 (float32) or 1.3e154 (float64) and the
result is +inf on both sides. Exits 1 while the bug is present, 0 once fixed.
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


def exact(x):
    # The same function, written so that nothing overflows or cancels.
    root = math.hypot(x, 2.0)
    return (x + root) / 2 if x >= 0 else 2.0 / (root - x)


ok = True
for dtype, big in [("float32", 1e20), ("float64", 1e155)]:
    x = np.array([-big, big], dtype)
    got = np.asarray(keras.activations.squareplus(x)).tolist()
    want = [float(np.asarray(exact(float(v)), dtype)) for v in x]
    print(f"{dtype}: squareplus({x.tolist()}) = {got}, expected {want}")
    # Also as a layer's activation.
    layer = keras.layers.Dense(1, activation="squareplus", use_bias=False, dtype=dtype)
    layer.build((None, 1))
    layer.set_weights([np.ones((1, 1), dtype)])
    dense = np.asarray(layer(x.reshape(-1, 1))).ravel().tolist()
    print(f"{dtype}: Dense(1, activation='squareplus') with kernel 1: {dense}")
    ok &= all(math.isfinite(v) for v in got + dense)
sys.exit(0 if ok else 1)
