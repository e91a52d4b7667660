"""Standalone repro of the semfuzz case case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, and runs it in
PyTorch (eager).

The reference calls the model invalid: exits 1 while PyTorch takes it (runs it, or
builds 'conv_lstm1d' and only a later layer refuses while the model is built), 0 once it
is refused at 'conv_lstm1d' (or before), built or run.

Needs only PyTorch, Keras and NumPy.
"""

import os

# The backend, chosen before Keras is imported.
os.environ["KERAS_BACKEND"] = "torch"
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

# The reference calls this model invalid: ConvLSTM1D 'conv_lstm1d': mask=[1, 2, 8] does not broadcast to the state (expected a (batch, time, ...) mask that fits the state of (None, 2, 8, 1))
error = None
try:
    input_1_0 = keras.Input(batch_shape=(None, 2, 8, 1,), dtype="float32", name="input_1")
    not_equal_0 = keras.src.ops.numpy.NotEqual(name="not_equal")(input_1_0, 0.0)
    masking_ = layers.Masking(mask_value=0.0, name="masking")
    masking_0 = masking_(input_1_0)
    any_0 = keras.src.ops.numpy.Any(name="any", axis=-1, keepdims=False)(not_equal_0)
    conv_lstm1d_ = layers.ConvLSTM1D(return_sequences=False, return_state=False, go_backwards=False, stateful=False, unroll=False, zero_output_for_mask=False, filters=3, kernel_size=[1], strides=[8], padding="valid", data_format="channels_last", dilation_rate=[1], activation="tanh", recurrent_activation="sigmoid", use_bias=True, unit_forget_bias=True, dropout=0.0, recurrent_dropout=0.0, seed=None, name="conv_lstm1d")
    conv_lstm1d_0 = conv_lstm1d_(masking_0, training=False, mask=any_0)
    model = keras.Model(input_1_0, conv_lstm1d_0)

    inputs = [np.array([0.0625, 0.125, 0.1875, 0.25, 0.3125, 0.375, 0.4375, 0.5, 0.5625, 0.625, 0.6875, 0.75, 0.8125, 0.875, 0.9375, 1.0], dtype="float32").reshape([1, 2, 8, 1])]
    feed = inputs[0] if len(inputs) == 1 else inputs
    out = model(feed, training=False)
except Exception as e:  # noqa: BLE001
    error = e
if error is None:
    print("PyTorch runs it:", out)
else:
    print("PyTorch refuses it:", type(error).__name__, error)
# missing-validation: whether every call of the invalid layer was made when a later layer
# refused, while the model was built.
past = "model" not in globals() and all(c in globals() for c in ["conv_lstm1d_0"])
sys.exit(1 if error is None or past else 0)
