"""JAX backend: an Embedding looks up an out-of-range index in eager without an error.

`Embedding(input_dim=1)` on the tokens [[1], [0]]: index 1 is not a row of a 1-row table
(TensorFlow eager and PyTorch refuse it). On JAX, eager (and jit) return NaN for that row:
Keras's JAX `take` is `jnp.take`, whose default out-of-bounds mode is "fill".

Exits 1 while JAX eager runs the lookup, 0 once it refuses the index.
Needs only JAX, Keras and NumPy.
"""

import os
import sys

# The backend, chosen before Keras is imported.
os.environ["KERAS_BACKEND"] = "jax"
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # as semfuzz's worker runs it

import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

tokens = keras.Input(batch_shape=(None, 1), dtype="float32", name="input_layer")
embedding = layers.Embedding(input_dim=1, output_dim=1, name="embedding")
model = keras.Model(tokens, embedding(tokens))
embedding.set_weights([np.array([[0.5]], dtype="float32")])
x = np.array([[1.0], [0.0]], dtype="float32")  # 1 is not a row of a 1-row table

jitted = jax.jit(lambda t: model(t, training=False))
try:
    print("jit ran:", np.asarray(jitted(x)).ravel().tolist())
except Exception as e:  # noqa: BLE001
    print("jit refused:", type(e).__name__)
try:
    out = np.asarray(model(x, training=False))
except Exception as e:  # noqa: BLE001
    print("eager refused:", type(e).__name__, str(e).splitlines()[0][:160])
    sys.exit(0)
print("eager ran:", out.ravel().tolist(), "- index 1 of a 1-row table gave", out[0].ravel().tolist())
sys.exit(1)
