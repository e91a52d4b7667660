"""XLA on CPU turns a float32 softmax of large dot-product scores into NaN when it fuses the
matmul with the softmax (Keras's Attention, use_scale=True, and MultiHeadAttention); and a
softmax of a large product, float32 or float64, likewise.

Each row of scores is 2.1e10 twice, so softmax is exactly 0.5 everywhere: eager mode and XLA on
the precomputed scores say so; XLA compiling the matmul and the softmax together gives NaN.
Exits 1 while the bug is present, 0 once fixed.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

row = [431.9, 105.3, 905.4, 205.4, 3318.6, -2428.4, -6250.8, -447.0, -3978.9, 123.4, 7973.2]
q = tf.constant(np.array([row, row], "float32"))


def attention_weights(x):
    return tf.nn.softmax(tf.matmul(x, x, transpose_b=True) * 156.25)


def scaled_softmax(x, c):
    return tf.nn.softmax(x * c)


present = False
eager = attention_weights(q).numpy()
xla = tf.function(attention_weights, jit_compile=True)(q).numpy()
print("attention, eager:", eager.ravel().tolist())
print("attention, xla:  ", xla.ravel().tolist())
present |= not np.allclose(eager, xla)

# The same with a plain softmax of a product: [0, 1, 0] exactly, eager; NaN under XLA.
for dtype, scale in [(tf.float64, 1e20), (tf.float32, 1e10)]:
    x = tf.constant([[-0.6596864102887254, 0.460364449353039, 0.27108265333026305]], dtype)
    c = tf.constant([[scale]], dtype)
    eager = scaled_softmax(x, c).numpy()
    xla = tf.function(scaled_softmax, jit_compile=True)(x, c).numpy()
    print(f"softmax(x * {scale:g}), {dtype.name}, eager:", eager.ravel().tolist())
    print(f"softmax(x * {scale:g}), {dtype.name}, xla:  ", xla.ravel().tolist())
    present |= not np.allclose(eager, xla)

# Keras's MultiHeadAttention (float32, one head of size 1, query and key kernels of 3e4):
# scores up to 6.7e9. Each row of attention weights sums to 1 in eager mode; under XLA a row
# sums to NaN, or, where the two roundings differ by less than exp's range, to a finite value
# far from 1 (campaign 20: a row summing to 5.1e14).
import keras  # noqa: E402

rng = np.random.default_rng(0)
mha = keras.layers.MultiHeadAttention(num_heads=1, key_dim=1, use_bias=False, dtype="float32")
query = rng.uniform(-1, 1, (1, 4, 8)).astype("float32")
value = rng.uniform(-1, 1, (1, 6, 8)).astype("float32")
mha(query, value, value)
kernels = mha.get_weights()
mha.set_weights([np.full_like(kernels[0], 3e4), np.full_like(kernels[1], 3e4), kernels[2], kernels[3]])


def mha_weights(q, v):
    return mha(q, v, v, return_attention_scores=True)[1]


eager = mha_weights(query, value).numpy().sum(-1)
xla = tf.function(mha_weights, jit_compile=True)(query, value).numpy().sum(-1)
print("multi-head attention, row sums, eager:", eager.ravel().tolist())
print("multi-head attention, row sums, xla:  ", xla.ravel().tolist())
present |= not np.allclose(eager, xla)

sys.exit(1 if present else 0)
