"""Standalone repro of the semfuzz case crashes/late-error-Attention-rank-4-unchecked-mask/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, and runs it in
PyTorch (eager).

The reference calls the model invalid and the finding is a late error: exits 1 while
PyTorch refuses it only with an error of its kernels or an internal Python error (one of
LATE_ERRORS), 0 once Keras refuses it with its own error or the model runs.

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

# The reference calls this model invalid: Attention 'attention': mask the scores mask [1, 4, 1] broadcasts the result to a larger shape (expected a mask that fits (None, 4, 1, 1))
error = None
try:
    input_1_0 = keras.Input(batch_shape=(None, 4, 1, 7,), dtype="float32", name="input_1")
    masking_ = layers.Masking(mask_value=0.0, name="masking")
    masking_0 = masking_(input_1_0)
    attention_ = layers.Attention(use_scale=False, score_mode="dot", dropout=0.0, seed=None, name="attention")
    attention_0 = attention_([masking_0, masking_0])
    model = keras.Model(input_1_0, attention_0)

    inputs = [np.array([0.03125, 0.0625, 0.09375, 0.125, 0.15625, 0.1875, 0.21875, 0.25, 0.28125, 0.3125, 0.34375, 0.375, 0.40625, 0.4375, 0.46875, 0.5, 0.53125, 0.5625, 0.59375, 0.625, 0.65625, 0.6875, 0.71875, 0.75, 0.78125, 0.8125, 0.84375, 0.875, 0.90625, 0.9375, 0.96875, 1.0, 1.03125, 1.0625, 1.09375, 1.125, 1.15625, 1.1875, 1.21875, 1.25, 1.28125, 1.3125, 1.34375, 1.375, 1.40625, 1.4375, 1.46875, 1.5, 1.53125, 1.5625, 1.59375, 1.625, 1.65625, 1.6875, 1.71875, 1.75], dtype="float32").reshape([2, 4, 1, 7])]
    feed = inputs[0] if len(inputs) == 1 else inputs
    out = model(feed, training=False)
except Exception as e:  # noqa: BLE001
    error = e
if error is None:
    print("PyTorch runs it:", out)
else:
    print("PyTorch refuses it:", type(error).__name__, error)
# late-error: the error types semfuzz takes for a kernel's refusal or an accident of
# Keras's code, and what Python says for such an accident (or a math function outside its
# domain). semfuzz builds models from their config, where Keras wraps a failing
# constructor's error ("... Exception encountered: <message>"); this script calls the
# constructors, which raise it unwrapped.
LATE_ERRORS = ["RuntimeError", "ZeroDivisionError", "IndexError", "AttributeError", "AssertionError", "UnboundLocalError"]
INTERNAL_MESSAGES = ["division by zero", "modulo by zero", "math domain error", "index out of range", "object has no attribute", "unsupported operand type"]
message = "" if error is None else str(error)[:2000]  # as semfuzz keeps it
inner = message.rsplit("Exception encountered: ", 1)[-1]
late = error is not None and (
    type(error).__name__ in LATE_ERRORS or any(m in inner for m in INTERNAL_MESSAGES)
)
sys.exit(1 if late else 0)
