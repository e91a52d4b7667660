"""TimeDistributed runs the wrapped layer on each time slice without the wrapped layer's
input checks: MaxPooling1D, which refuses rank-4 inputs on its own, pools two axes of the
rank-4 slices of a rank-5 input. Exits 1 while the bug is present, 0 once fixed (a refusal
counts as fixed). Needs TensorFlow, Keras and NumPy only."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

x = keras.Input((4, 5, 6, 7))
try:
    y = keras.layers.TimeDistributed(keras.layers.MaxPooling1D(2))(x)
    out = keras.Model(x, y)(np.zeros((2, 4, 5, 6, 7)))
except ValueError as e:
    print("refused:", str(e).splitlines()[0])
    sys.exit(0)
print("MaxPooling1D on rank-4 slices ran and gave", tuple(out.shape), "(two axes pooled)")
sys.exit(1)
