"""XLA on CPU turns a float32 softmax of large dot-product scores into NaN when it fuses the
matmul with the softmax (Keras's Attention, use_scale=True).

Each row of scores is 2.1e10 twice, so softmax is exactly 0.5 everywhere: eager mode and XLA on
the precomputed scores say so; XLA compiling the matmul and the softmax together gives NaN.
Exits 1 while the bug is present, 0 once fixed.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

row = [431.9, 105.3, 905.4, 205.4, 3318.6, -2428.4, -6250.8, -447.0, -3978.9, 123.4, 7973.2]
q = tf.constant(np.array([row, row], "float32"))


def attention_weights(x):
    return tf.nn.softmax(tf.matmul(x, x, transpose_b=True) * 156.25)


eager = attention_weights(q).numpy()
xla = tf.function(attention_weights, jit_compile=True)(q).numpy()
print("eager:", eager.ravel().tolist())
print("xla:  ", xla.ravel().tolist())
sys.exit(0 if np.allclose(eager, xla) else 1)
