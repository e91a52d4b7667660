"""On Keras's JAX backend, MultiHeadAttention with value_dim != key_dim raises a TypeError
("cannot reshape array of shape (1, 2, 1, 1, 2) (size 4) into shape (1, 2, 1, 4)"), eagerly
and under jax.jit. The same layer runs on the TensorFlow backend.

keras/src/backend/jax/nn.py, dot_product_attention, reshapes the attention output to
`query.shape` at its end, but the output's last axis is the value's head size, not the
query's: the two differ whenever value_dim != key_dim.

Exits 1 while the bug is present, 0 once fixed. Needs only JAX, Keras and NumPy.
"""

import os
import sys

os.environ["KERAS_BACKEND"] = "jax"

import numpy as np  # noqa: E402
import keras  # noqa: E402

query = np.random.default_rng(0).standard_normal((1, 2, 3)).astype("float32")
value = np.random.default_rng(1).standard_normal((1, 2, 3)).astype("float32")
layer = keras.layers.MultiHeadAttention(num_heads=1, key_dim=4, value_dim=2)
try:
    out = layer(query, value)
except Exception as e:  # noqa: BLE001
    print(f"MultiHeadAttention(num_heads=1, key_dim=4, value_dim=2) raised {type(e).__name__}: {e}")
    sys.exit(1)
print("output shape", tuple(out.shape), "(expected (1, 2, 3))")
sys.exit(0 if tuple(out.shape) == (1, 2, 3) else 1)
