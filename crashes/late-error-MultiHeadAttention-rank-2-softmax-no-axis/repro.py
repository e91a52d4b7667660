"""MultiHeadAttention on rank-2 inputs (batch, features) builds, with an output of the
query's shape, and then fails when it runs: its Softmax gets an empty tuple of axes and
raises IndexError ("tuple index out of range"). Exits 1 while the bug is present, 0 once the
layer refuses rank-2 inputs when it is built (or runs them). Needs TensorFlow, Keras and
NumPy only."""

import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

x = keras.Input(shape=(2,))
layer = keras.layers.MultiHeadAttention(num_heads=1, key_dim=1)
try:
    y = layer(x, x)
except Exception as e:
    print("refused when built:", type(e).__name__, e)
    sys.exit(0)
print("built: output shape", y.shape, "- softmax axes", layer._softmax.axis)
model = keras.Model(x, y)
try:
    out = model(np.array([[0.5, -1.0]]), training=False)
except IndexError as e:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    print("fails when run: IndexError:", " ".join(text.split())[:160])
    sys.exit(1)
print("runs:", np.asarray(out).tolist())
sys.exit(0)
