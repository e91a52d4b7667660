"""Standalone repro of the semfuzz case case.case.json.

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

keras.config.set_floatx("float64")
keras.config.set_dtype_policy("float64")

# The reference calls this model invalid: UnitNormalization 'l': axis[1]=7 is out of range for an input of rank 3 (expected an axis in -3..3)
error = None
try:
    input_layer_0 = keras.Input(batch_shape=(None, 2, 3,), dtype="float64", name="input_layer")
    l_ = layers.UnitNormalization(axis=[2, 7], name="l")
    l_0 = l_(input_layer_0)
    model = keras.Model(input_layer_0, l_0)

    inputs = [np.array([-1.0, 0.236, -0.528, 0.708, -0.056, -0.82], dtype="float64").reshape([1, 2, 3])]
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
