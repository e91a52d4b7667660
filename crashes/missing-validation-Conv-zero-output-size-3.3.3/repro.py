"""Standalone repro of the semfuzz case case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, and runs it in
TensorFlow (eager).

The reference calls the model invalid: exits 1 while TensorFlow takes it (runs it, or
builds 'l' and only a later layer refuses while the model is built), 0 once it
is refused at 'l' (or before), built or run.

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

# The reference calls this model invalid: Conv2D 'l': kernel_size[0]=2 exceeds spatial axis 0 of size 1 (padding "valid") (expected a dilated kernel of at most 1)
error = None
try:
    input_layer_0 = keras.Input(batch_shape=(None, 1, 3, 1,), dtype="float64", name="input_layer")
    l_ = layers.Conv2D(filters=2, kernel_size=[2, 1], name="l")
    l_0 = l_(input_layer_0)
    model = keras.Model(input_layer_0, l_0)

    inputs = [np.array([-1.0, 0.236, -0.528], dtype="float64").reshape([1, 1, 3, 1])]
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
past = "model" not in globals() and all(c in globals() for c in ["l_0"])
sys.exit(1 if error is None or past else 0)
