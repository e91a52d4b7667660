"""keras.ops.add on the TensorFlow backend adds a bias along the wrong axis.

When the second operand has exactly one axis longer than 1 and its length equals the first
operand's last axis, the TF backend turns the addition into tf.nn.bias_add(x, y, "NHWC"),
which adds along the LAST axis whatever axis y was laid out on. Broadcasting says otherwise.
A channels_first Conv2D whose last spatial size equals its number of filters gets its bias
added along the width instead of the channels.

Exits 1 while the bug is present, 0 once fixed. Needs only TensorFlow, Keras and NumPy.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

x = np.zeros((1, 3, 3), "float32")
y = np.array([1.0, 2.0, 3.0], "float32").reshape(1, 3, 1)
actual = np.asarray(keras.ops.add(x, y))
expected = x + y  # NumPy broadcasting: row i gets y[i]
print("ops.add actual  ", actual[0].tolist())
print("ops.add expected", expected[0].tolist())

conv = keras.layers.Conv2D(2, 1, data_format="channels_first", kernel_initializer="zeros")
conv.build((1, 3, 2, 2))
conv.bias.assign([1.0, 2.0])
out = np.asarray(conv(np.zeros((1, 3, 2, 2), "float32")))
print("Conv2D channel 0", out[0, 0].tolist(), "(expected all 1.0)")
print("Conv2D channel 1", out[0, 1].tolist(), "(expected all 2.0)")
bad = not np.array_equal(actual, expected) or not (np.all(out[0, 0] == 1.0) and np.all(out[0, 1] == 2.0))
sys.exit(1 if bad else 0)
