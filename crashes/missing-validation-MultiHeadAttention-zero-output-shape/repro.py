"""MultiHeadAttention takes a 0 in `output_shape` without a word and builds an empty output,
where Dense refuses `units=0`. A later layer that meets the empty output refuses it with a
message that names neither the attention layer nor `output_shape`. Exits 1 while the bug is
present, 0 once the layer refuses the 0. Needs TensorFlow, Keras and NumPy only."""

import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

try:
    keras.layers.Dense(0)
except ValueError as e:
    print("Dense(0) refused:", e)

x = keras.Input(shape=(3, 2))
try:
    layer = keras.layers.MultiHeadAttention(num_heads=1, key_dim=1, output_shape=[0])
    y = layer(x, x)
except ValueError as e:
    print("MultiHeadAttention(output_shape=[0]) refused:", e)
    sys.exit(0)
out = keras.Model(x, y)(np.arange(6.0).reshape(1, 3, 2) / 10, training=False)
print("MultiHeadAttention(output_shape=[0]) builds and runs: output shape", tuple(out.shape))
try:
    keras.layers.Multiply()([y, x])
except ValueError as e:
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", str(e)).split())
    print("a later Multiply refuses the empty output:", text[:160])
sys.exit(1)
