"""XLA on CPU (float64): an infinite input to a depthwise convolution makes the other
channels' outputs at that position NaN.

A depthwise convolution filters each channel on its own: an `inf` in channel 0 can only
reach channel 0's outputs. Eager TF (both dtypes) and XLA float32 do so; XLA float64 gives
NaN in channel 1 as well, as if each channel's kernel were multiplied by the other channels'
inputs with zero weights (0 * inf = NaN). Exits 1 while the bug is present, 0 once fixed.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

keras.config.set_floatx("float64")
x = keras.Input((1, 2, 2))
layer = keras.layers.DepthwiseConv2D((1, 2), use_bias=False)
model = keras.Model(x, layer(x))
layer.set_weights([np.ones((1, 2, 2, 1))])

data = np.ones((1, 1, 2, 2))
data[0, 0, 0, 0] = np.inf  # channel 0 only
expected = np.array([np.inf, 2.0])  # channel 0: inf + 1; channel 1: 1 + 1

ok = True
for mode, f in [("eager", model), ("xla", tf.function(model, jit_compile=True))]:
    out = np.asarray(f(data)).ravel()
    print(f"{mode:5}: {out.tolist()}")
    ok &= np.array_equal(out, expected)
print(f"expected: {expected.tolist()}")
sys.exit(0 if ok else 1)
