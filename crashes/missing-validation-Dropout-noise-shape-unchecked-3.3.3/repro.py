"""Standalone repro of the semfuzz case case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, and runs it in
TensorFlow (eager).

The reference calls the model invalid: exits 1 while TensorFlow takes it (runs it, or
builds 'dropout' and only a later layer refuses while the model is built), 0 once it
is refused at 'dropout' (or before), built or run.

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

keras.config.set_floatx("float64")
keras.config.set_dtype_policy("float64")

# The reference calls this model invalid: Dropout 'dropout': noise_shape=2 is not a list (expected null or a list of positive integers and nulls)
error = None
try:
    input_layer_0 = keras.Input(batch_shape=(None,), dtype="float64", name="input_layer")
    dropout_ = layers.Dropout(rate=0.43370137646122187, noise_shape=2, name="dropout")
    dropout_0 = dropout_(input_layer_0)
    model = keras.Model(input_layer_0, dropout_0)

    inputs = [np.array([0.0], dtype="float64").reshape([1])]
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
# missing-validation: whether every call of the invalid layer was made when a later layer
# refused, while the model was built.
past = "model" not in globals() and all(c in globals() for c in ["dropout_0"])
sys.exit(1 if error is None or past else 0)
