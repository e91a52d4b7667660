"""EinsumDense with a left ellipsis over two or more axes declares its output with those axes
in reverse order: `...b,bc->...c` on (None, 2, 3, 5) is declared (None, 3, 2, 4) and computes
(None, 2, 3, 4). Layers after it are built for the declared shape. Exits 1 while the bug is
present, 0 once fixed. Needs TensorFlow, Keras and NumPy only."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

x = keras.Input((2, 3, 5))
y = keras.layers.EinsumDense("...b,bc->...c", output_shape=4)(x)
model = keras.Model(x, y)
actual = tuple(model(np.zeros((1, 2, 3, 5))).shape)
print("declared", tuple(y.shape), "computed", actual)
sys.exit(0 if tuple(y.shape)[1:] == actual[1:] else 1)
