"""Standalone repro of the semfuzz case missing-validation-ConvTranspose-torch-same-even-kernel-output-length/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, and runs it in
PyTorch (eager).

The reference calls the model invalid: exits 1 while PyTorch takes it (runs it, or
builds 'conv1d_transpose' and only a later layer refuses while the model is built), 0 once it
is refused at 'conv1d_transpose' (or before), built or run.

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

# The reference calls this model invalid: Conv1DTranspose 'conv1d_transpose': output_padding[0]=0 gives an output length 2 from which TF derives another input length than 3 (expected output_padding >= 1 with an even dilated kernel and padding "same")
error = None
try:
    input_layer_0 = keras.Input(batch_shape=(None, 3, 1,), dtype="float32", name="input_layer")
    conv1d_transpose_ = layers.Conv1DTranspose(filters=1, kernel_size=[2], strides=1, padding="same", output_padding=0, data_format="channels_last", use_bias=True, name="conv1d_transpose")
    conv1d_transpose_0 = conv1d_transpose_(input_layer_0)
    model = keras.Model(input_layer_0, conv1d_transpose_0)

    model.get_layer("conv1d_transpose").set_weights([np.array([0.5, -0.25], dtype="float32").reshape([2, 1, 1]), np.array([0.5], dtype="float32").reshape([1])])
    inputs = [np.array([1.0, 2.0, -1.0], dtype="float32").reshape([1, 3, 1])]
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
past = "model" not in globals() and all(c in globals() for c in ["conv1d_transpose_0"])
sys.exit(1 if error is None or past else 0)
