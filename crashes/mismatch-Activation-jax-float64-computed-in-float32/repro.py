"""On Keras's JAX backend, float64 layers compute in float32 where they go through
keras.ops.tanh (and the other unary math ops: sin, cos, tan, their inverses and hyperbolic
forms, ceil, floor, sinc) or keras.ops.mean / keras.ops.var: these ops promote with
`dtypes.result_type(x.dtype, float)` (or `"float32"`), which maps float64 to float32 on every
backend but TensorFlow (BIT64_TO_BIT32_DTYPE), even with JAX's 64-bit mode on.

A float64 Activation("tanh") returns a float32 tensor; a float64 BatchNormalization and
LayerNormalization return float64 tensors with float32 accuracy. The same layers on the
TensorFlow backend compute in float64.

Exits 1 while the bug is present, 0 once fixed. Needs only JAX, Keras and NumPy.
"""

import os
import sys

os.environ["KERAS_BACKEND"] = "jax"

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # float64 arrays stay float64 in JAX itself

import numpy as np  # noqa: E402
import keras  # noqa: E402

x = np.array([[0.5, 1.0, -0.3, 2.0]], dtype=np.float64)
bad = False

tanh = keras.layers.Activation("tanh", dtype="float64")
y = tanh(x)
err = np.abs(np.asarray(y, dtype=np.float64) - np.tanh(x)).max()
print(f"Activation('tanh', dtype='float64'): output dtype {y.dtype}, max abs error {err:.2e}")
bad |= str(y.dtype) != "float64" or err > 1e-13

bn = keras.layers.BatchNormalization(dtype="float64")  # mean 0, variance 1, epsilon 1e-3
y = bn(x)
err = np.abs(np.asarray(y) - x / np.sqrt(1.0 + 1e-3)).max()
print(f"BatchNormalization(dtype='float64'): output dtype {y.dtype}, max abs error {err:.2e}")
bad |= err > 1e-13

ln = keras.layers.LayerNormalization(dtype="float64")
y = ln(x)
want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3)
err = np.abs(np.asarray(y) - want).max()
print(f"LayerNormalization(dtype='float64'): output dtype {y.dtype}, max abs error {err:.2e}")
bad |= err > 1e-13

print("float64 eps is 2.2e-16; float32's is 1.2e-7")
sys.exit(1 if bad else 0)
