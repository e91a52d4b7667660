"""A fault planted in the JAX backend's path only (see SEMFUZZ_WORKER_PLANT): Keras's JAX
`relu` adds 0.25 to every output above 1. The TensorFlow backend's relu is untouched, so a
worker on TensorFlow agrees and one on JAX shows a `mismatch` at the layer that applies it."""

import keras
from keras.src.backend.jax import nn as jax_nn

_relu = jax_nn.relu


def _planted(x):
    y = _relu(x)
    return y + keras.ops.cast(y > 1.0, y.dtype) * 0.25


jax_nn.relu = _planted
