"""MultiHeadAttention resolves a negative `attention_axes` entry against the rank of the
projected query (the input's rank plus one, for the heads) rather than the input's rank:
`attention_axes=-1` names the feature axis and the call raises ValueError (an einsum equation
with a repeated label), and `attention_axes=-2` runs but attends over another axis than
`attention_axes=2` on a rank-4 input, so the two differ. Exits 1 while either shows, 0 once
negative and positive axes agree. Needs TensorFlow, Keras and NumPy only."""

import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

print("Keras", keras.__version__)
x = np.random.default_rng(0).normal(size=(2, 3, 4, 8)).astype("float32")
bug = False

layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=-1)
try:
    layer(x, x)
    print("attention_axes=-1: runs")
except ValueError as e:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    line = next((s for s in text.splitlines() if "subscripts" in s), text.splitlines()[0])
    print("attention_axes=-1: ValueError:", line.strip()[:160])
    bug = True

positive = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=(2,))
negative = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=(-2,))
a = positive(x, x)
negative(x, x)
negative.set_weights(positive.get_weights())
b = negative(x, x)
diff = float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
print("attention_axes=(2,) against (-2,), same weights: max |difference|", diff)
if diff > 1e-5:
    bug = True
sys.exit(1 if bug else 0)
