"""Standalone repro of the semfuzz case crashes/late-error-ConvLSTM1D-unchecked-mask-shape/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, and runs it in
TensorFlow (eager).

The reference calls the model invalid and the finding is a late error: exits 1 while
TensorFlow refuses it only with an error of its kernels or an internal Python error (one of
LATE_ERRORS), 0 once Keras refuses it with its own error or the model runs.

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

# The reference calls this model invalid: ConvLSTM1D 'conv_lstm1d': mask=[1, 1, 8] does not broadcast to the state (expected a (batch, time, ...) mask that fits the state of (None, 1, 8, 1))
error = None
try:
    input_layer_0 = keras.Input(batch_shape=(None, 1, 8, 1,), dtype="float32", name="input_layer")
    masking_ = layers.Masking(mask_value=0.0, name="masking")
    masking_0 = masking_(input_layer_0)
    conv_lstm1d_ = layers.ConvLSTM1D(filters=1, kernel_size=[2], name="conv_lstm1d")
    conv_lstm1d_0 = conv_lstm1d_(masking_0)
    model = keras.Model(input_layer_0, conv_lstm1d_0)

    inputs = [np.array([0.273923, -0.460427, -0.918053, -0.966945, 0.62654, 0.825511, 0.213272, 0.458993, 0.08725, 0.870145, 0.631707, -0.994523, 0.714809, -0.932829, 0.459311, -0.648689], dtype="float32").reshape([2, 1, 8, 1])]
    feed = inputs[0] if len(inputs) == 1 else inputs
    out = model(feed, training=False)
except Exception as e:  # noqa: BLE001
    error = e
if error is None:
    print("TensorFlow runs it:", out)
else:
    print("TensorFlow refuses it:", type(error).__name__, error)
# late-error: the error types semfuzz takes for a kernel's refusal or an accident of
# Keras's code, and what Python says for such an accident (or a math function outside its
# domain). semfuzz builds models from their config, where Keras wraps a failing
# constructor's error ("... Exception encountered: <message>"); this script calls the
# constructors, which raise it unwrapped.
LATE_ERRORS = ["InvalidArgumentError", "InternalError", "UnknownError", "ResourceExhaustedError", "FailedPreconditionError", "AbortedError", "OutOfRangeError", "UnimplementedError", "NotFoundError", "ZeroDivisionError", "IndexError", "AttributeError", "AssertionError", "UnboundLocalError"]
INTERNAL_MESSAGES = ["division by zero", "modulo by zero", "math domain error", "index out of range", "object has no attribute", "unsupported operand type"]
message = "" if error is None else str(error)[:2000]  # as semfuzz keeps it
inner = message.rsplit("Exception encountered: ", 1)[-1]
late = error is not None and (
    type(error).__name__ in LATE_ERRORS or any(m in inner for m in INTERNAL_MESSAGES)
)
sys.exit(1 if late else 0)
