"""Standalone repro of the semfuzz case case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, and runs it in
TensorFlow (eager).

The reference calls the model invalid and the finding is an unclear error: prints the
error's message and exits 1 while it names neither layer 'l' (quoted, or by its
class) nor the argument `head_dim`, 0 once it names either or the model runs.

Needs only TensorFlow, Keras and NumPy.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers, ops  # noqa: E402,F401

keras.config.set_floatx("float32")
keras.config.set_dtype_policy("float32")

# The reference calls this model invalid: GroupQueryAttention 'l': head_dim=-1 is not positive (expected a positive integer)
error = None
try:
    x_0 = keras.Input(batch_shape=(None, 2, 3,), dtype="float32", name="x")
    l_ = layers.GroupQueryAttention(head_dim=-1, num_query_heads=1, num_key_value_heads=1, name="l")
    l_0 = l_(x_0, x_0)
    model = keras.Model(x_0, l_0)

    inputs = [np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.5], dtype="float32").reshape([1, 2, 3])]
    feed = inputs[0] if len(inputs) == 1 else inputs

    def run_eager(feed):
        return model(feed, training=False)
    out = run_eager(feed)
except Exception as e:  # noqa: BLE001
    error = e
if error is None:
    print("TensorFlow runs it:", out)
else:
    print("TensorFlow refuses it:", type(error).__name__, error)
# unclear-error: what names the problem in a message (semfuzz's rule): the layer's name
# quoted or as a variable path, its class, or the argument's name in any case.
NAMES = ["'l'", "\"l\"", "Layer l ", "'l/", "GroupQueryAttention", "GroupedQueryAttention"]
ARGUMENT = "head_dim"
message = "" if error is None else str(error)[:2000]  # as semfuzz keeps it
named = any(n in message for n in NAMES) or (
    ARGUMENT is not None and ARGUMENT.lower() in message.lower()
)
sys.exit(1 if error is not None and not named else 0)
