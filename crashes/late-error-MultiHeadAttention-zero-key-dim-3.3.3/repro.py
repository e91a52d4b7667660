"""Standalone repro of the semfuzz case case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, and runs it in
TensorFlow (eager).

MultiHeadAttention(key_dim=0) is invalid: exits 1 while Keras takes it or fails only with a
bare ZeroDivisionError at build (`1.0 / math.sqrt(float(self._key_dim))`), 0 once it is refused
with an error naming `key_dim` (Keras 3.15.0 and later: ValueError in the constructor).

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

# The reference calls this model invalid: MultiHeadAttention 'multiheadattention': key_dim=0 is not a legal value (expected a positive integer)
error = None
try:
    input_layer_0 = keras.Input(batch_shape=(None, 1, 1,), dtype="float32", name="input_layer")
    multiheadattention_ = layers.MultiHeadAttention(num_heads=1, key_dim=0, name="multiheadattention")
    multiheadattention_0 = multiheadattention_(input_layer_0, input_layer_0)
    model = keras.Model(input_layer_0, multiheadattention_0)

    inputs = [np.array([-1.0], dtype="float32").reshape([1, 1, 1])]
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
sys.exit(1 if error is None or "key_dim" not in str(error) else 0)
