"""Keras's EinsumDense (through `keras.ops.einsum` on the TensorFlow backend) never checks that
its input has the rank the equation names, and runs some equations as a batched matmul.

`EinsumDense("ab,bc->ac", output_shape=4)` expects a rank-2 input (batch, features). Given a
rank-3 input (batch, 3, 3), it builds a (3, 4) kernel from the input's second axis, declares
an output of shape (None, 4, 3), and runs: the TF backend's einsum turns "ab,bc->ac" into
`tf.matmul` without comparing ranks, and matmul broadcasts the extra axis. The result has
shape (2, 3, 4), neither the declared shape nor anything the equation defines. `tf.einsum`
and `numpy.einsum` both refuse the same operands. Exits 1 while the layer accepts the input,
0 once it refuses it.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

x = (np.arange(18, dtype="float32") / 10).reshape(2, 3, 3)  # rank 3; the equation's input is rank 2
kernel = np.ones((3, 4), "float32")

accepted = False
layer = keras.layers.EinsumDense("ab,bc->ac", output_shape=4, kernel_initializer="ones")
try:
    declared = layer.compute_output_shape((None, 3, 3))
    out = np.asarray(layer(x))
    accepted = True
    print(f"EinsumDense('ab,bc->ac') on {x.shape}: kernel {tuple(layer.kernel.shape)}, "
          f"declared output {declared}, actual output {out.shape}")
except Exception as e:  # the fixed behaviour: the rank is refused
    print(f"EinsumDense: refused: {type(e).__name__}: {str(e).splitlines()[0]}")

try:
    out = np.asarray(keras.ops.einsum("ab,bc->ac", x, kernel))
    accepted = True
    print(f"keras.ops.einsum('ab,bc->ac') on {x.shape} and {kernel.shape}: output {out.shape}")
except Exception as e:
    print(f"keras.ops.einsum: refused: {type(e).__name__}: {str(e).splitlines()[0]}")

for name, einsum in [("tf.einsum", tf.einsum), ("numpy.einsum", np.einsum)]:
    try:
        einsum("ab,bc->ac", x, kernel)
        print(f"{name}: runs")
    except Exception as e:
        print(f"{name} refuses it: {type(e).__name__}")
print("expected: a ValueError naming the input's rank (2, as the equation's 'ab')")
sys.exit(1 if accepted else 0)
