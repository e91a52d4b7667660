"""TF graph mode (float32) drops NaN in Conv2D/Conv3D/Dense with a bias and a relu.

In a tf.function, Grappler's remapper fuses Conv2D (Conv3D, MatMul) + BiasAdd + Relu into
one oneDNN kernel whose relu is max(x, 0) without NaN propagation: a NaN pre-activation
comes out as 0. Eagerly the ops run separately and `relu(NaN)` is NaN (as in float64, and
with any activation that is not fused). Exits 1 while the bug is present, 0 once fixed.
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

keras.config.set_floatx("float32")
x = keras.Input((2, 2, 1))
layer = keras.layers.Conv2D(1, 2, padding="same", activation="relu")
model = keras.Model(x, layer(x))
layer.set_weights([np.ones((2, 2, 1, 1), "float32"), np.zeros(1, "float32")])

data = np.ones((1, 2, 2, 1), "float32")
data[0, 0, 0, 0] = np.nan  # reaches output (0, 0) only
expected = np.array([np.nan, 2.0, 2.0, 1.0], "float32")

ok = True
for mode, f in [("eager", model), ("graph", tf.function(model))]:
    out = np.asarray(f(data)).ravel()
    print(f"{mode:5}: {out.tolist()}")
    ok &= np.array_equal(out, expected, equal_nan=True)
print(f"expected: {expected.tolist()}")
sys.exit(0 if ok else 1)
