"""An Embedding compiled with XLA looks up an index out of range without a word, returning the
last row, where eager and graph mode refuse it (TF's CPU gather kernel checks its indices;
XLA's gather clamps them). Exits 1 while the bug is present, 0 once XLA refuses the index
too. Needs TensorFlow, Keras and NumPy only."""

import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

tokens = keras.Input(shape=(3,), dtype="float64")
embedding = keras.layers.Embedding(input_dim=2, output_dim=2, dtype="float64")
model = keras.Model(tokens, embedding(tokens))
embedding.set_weights([np.array([[0.5, -1.0], [2.0, 3.0]])])
x = tf.constant([[0.0, 1.0, 2.0]], dtype="float64")  # 2 is not a row of a 2-row table


def why(e):
    """The line of TF's message that says which index is out of range."""
    lines = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).splitlines()
    return next((ln.strip() for ln in lines if "is not in [" in ln), lines[0])[:160]


for name, run in [
    ("eager", lambda: model(x, training=False)),
    ("graph", tf.function(lambda: model(x, training=False))),
]:
    try:
        print(name, "ran:", np.asarray(run()).tolist())
    except tf.errors.InvalidArgumentError as e:
        print(name, "refused:", why(e))

xla = tf.function(lambda: model(x, training=False), jit_compile=True)
try:
    out = np.asarray(xla())
except tf.errors.InvalidArgumentError as e:
    print("xla refused:", why(e))
    sys.exit(0)
print("xla ran:", out.tolist(), "- index 2 gave row", out[0, 2].tolist(), "(the last row, clamped)")
sys.exit(1)
