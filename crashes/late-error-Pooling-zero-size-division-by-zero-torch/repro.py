"""Standalone repro of the semfuzz case crashes/late-error-Pooling-zero-size-division-by-zero-torch/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
PyTorch (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree (or when PyTorch accepts a model the reference calls invalid),
0 when they agree. Needs only PyTorch, Keras and NumPy.
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

input_layer_0 = keras.Input(batch_shape=(None, 1, 1,), dtype="float32", name="input_layer")
max_pooling1d_ = layers.MaxPooling1D(strides=[0], name="max_pooling1d")
max_pooling1d_0 = max_pooling1d_(input_layer_0)
model = keras.Model(input_layer_0, max_pooling1d_0)

inputs = [np.array([0.0], dtype="float32").reshape([1, 1, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

# The reference calls this model invalid: MaxPooling1D 'max_pooling1d': strides[0]=0 is not positive (expected a positive integer)
try:
    out = model(feed, training=False)
except Exception as e:
    print("PyTorch refuses it:", type(e).__name__, e)
    sys.exit(0)
print("PyTorch runs it:", out)
sys.exit(1)
