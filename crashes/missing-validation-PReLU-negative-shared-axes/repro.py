"""PReLU(shared_axes=[-1]) shares the second-to-last axis instead of the last: Keras uses a
negative axis as a Python index into the non-batch shape after subtracting one. Exits 1 while
the bug is present, 0 once fixed (a refusal of negative axes counts as fixed). Needs
TensorFlow, Keras and NumPy only."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import keras  # noqa: E402

layer = keras.layers.PReLU(shared_axes=[-1])
try:
    layer.build((None, 2, 3, 4))
except ValueError as e:
    print("refused:", e)
    sys.exit(0)
print("alpha shape", tuple(layer.alpha.shape), "expected (2, 3, 1): one slope shared along the last axis")
sys.exit(0 if tuple(layer.alpha.shape) == (2, 3, 1) else 1)
