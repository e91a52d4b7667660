"""Standalone repro of the semfuzz case crashes/missing-validation-AdaptivePooling-rank-torch/case.case.json.

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

keras.config.set_floatx("float64")
keras.config.set_dtype_policy("float64")

input_layer_2_0 = keras.Input(batch_shape=(None, 3,), dtype="float64", name="input_layer_2")
adaptive_average_pooling1d_1_ = layers.AdaptiveAveragePooling1D(output_size=[4], name="adaptive_average_pooling1d_1")
adaptive_average_pooling1d_1_0 = adaptive_average_pooling1d_1_(input_layer_2_0)
input_layer_1_0 = keras.Input(batch_shape=(None, 1, 4,), dtype="float64", name="input_layer_1")
minimum_ = layers.Minimum(name="minimum")
minimum_0 = minimum_([adaptive_average_pooling1d_1_0, adaptive_average_pooling1d_1_0, input_layer_1_0])
model = keras.Model([input_layer_1_0, input_layer_2_0], [adaptive_average_pooling1d_1_0, minimum_0])

inputs = []
feed = inputs[0] if len(inputs) == 1 else inputs

# The reference calls this model invalid: AdaptiveAveragePooling1D 'adaptive_average_pooling1d_1': input[0]=rank 2 has the wrong rank (expected rank 3)
try:
    out = model(feed, training=False)
except Exception as e:
    print("PyTorch refuses it:", type(e).__name__, e)
    sys.exit(0)
print("PyTorch runs it:", out)
sys.exit(1)
