"""Standalone repro of the semfuzz case crashes/unexpected-rejection-SeparableConv2D-channels-first-cpu-nhwc-only/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
TensorFlow (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree (or when TensorFlow accepts a model the reference calls invalid),
0 when they agree. Needs only TensorFlow, Keras and NumPy.
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

input_layer_0 = keras.Input(batch_shape=(None, 1, 1, 1,), dtype="float64", name="input_layer")
separable_conv2d_ = layers.SeparableConv2D(filters=4, kernel_size=[2, 3], data_format="channels_first", padding="same", name="separable_conv2d")
separable_conv2d_0 = separable_conv2d_(input_layer_0)
model = keras.Model(input_layer_0, separable_conv2d_0)

model.get_layer("separable_conv2d").set_weights([np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype="float64").reshape([2, 3, 1, 1]), np.array([0.0, 0.0, 0.0, 0.0], dtype="float64").reshape([1, 1, 1, 4]), np.array([0.0, 0.0, 0.0, 0.0], dtype="float64").reshape([4])])
inputs = [np.array([0.0], dtype="float64").reshape([1, 1, 1, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.0, 0.0, 0.0, 0.0], dtype="float64").reshape([1, 4, 1, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 1e-300, 3.552713678800501e-15  # loosest layer tolerance x depth 2

actual = model(feed, training=False)
actual = actual if isinstance(actual, (list, tuple)) else [actual]
ok = True
for i, (e, a) in enumerate(zip(expected, actual)):
    a = np.asarray(a, dtype=np.float64)
    print(f"output {i}: TensorFlow {a.tolist()}")
    print(f"output {i}: reference  {e.tolist()}")
    if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
        print(f"output {i} DISAGREES")
        ok = False
sys.exit(0 if ok else 1)
