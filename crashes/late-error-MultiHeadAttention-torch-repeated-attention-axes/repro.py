"""Standalone repro of the semfuzz case late-error-MultiHeadAttention-torch-repeated-attention-axes/case.case.json.

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

# The reference calls this model invalid: MultiHeadAttention 'multi_head_attention': attention_axes=[2, 2] makes a degenerate einsum (a repeated output label) (expected distinct axes other than the features)
error = None
try:
    input_layer_0 = keras.Input(batch_shape=(None, 3, 2, 4,), dtype="float32", name="input_layer")
    multi_head_attention_ = layers.MultiHeadAttention(num_heads=1, key_dim=1, attention_axes=[2, 2], name="multi_head_attention")
    multi_head_attention_0 = multi_head_attention_(input_layer_0, value=input_layer_0)
    model = keras.Model(input_layer_0, multi_head_attention_0)

    inputs = [np.array([0.273923, -0.460427, -0.918053, -0.966945, 0.62654, 0.825511, 0.213272, 0.458993, 0.08725, 0.870145, 0.631707, -0.994523, 0.714809, -0.932829, 0.459311, -0.648689, 0.726358, 0.082922, -0.400576, -0.154626, -0.943361, -0.751433, 0.341249, 0.294379, 0.23077, -0.232645, 0.99442, 0.961671, 0.371084, 0.300919, 0.376893, -0.222157, -0.729807, 0.442977, 0.050709, -0.379516, -0.028329, 0.778976, 0.868087, -0.28441, 0.14306, -0.356261, 0.1886, -0.324178, -0.216762, 0.780549, -0.545685, 0.246374], dtype="float32").reshape([2, 3, 2, 4])]
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
