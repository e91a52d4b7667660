"""Standalone repro of the semfuzz case crashes/unexpected-nan-Conv-torch-float32-batched-same-padding-nonfinite-weight/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
PyTorch (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree, 0 when they agree.
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

input_layer_0 = keras.Input(batch_shape=(None, 1, 1,), dtype="float32", name="input_layer")
conv1d_ = layers.Conv1D(filters=1, kernel_size=[3], strides=[1], padding="same", data_format="channels_last", dilation_rate=[1], groups=1, activation="linear", use_bias=False, name="conv1d")
conv1d_0 = conv1d_(input_layer_0)
model = keras.Model(input_layer_0, conv1d_0)

model.get_layer("conv1d").set_weights([np.array([np.inf, 1.0, 1.0], dtype="float32").reshape([3, 1, 1])])
inputs = [np.array([2.0, 3.0], dtype="float32").reshape([2, 1, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([np.nan, np.nan], dtype="float64").reshape([2, 1, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 8.58306884765625e-6, 1.9073486328125e-6  # loosest layer tolerance x depth 2

actual = model(feed, training=False)
actual = actual if isinstance(actual, (list, tuple)) else [actual]
ok = True
for i, (e, a) in enumerate(zip(expected, actual)):
    a = np.asarray(ops.convert_to_numpy(a), dtype=np.float64)
    print(f"output {i}: PyTorch {a.tolist()}")
    print(f"output {i}: reference  {e.tolist()}")
    if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
        print(f"output {i} DISAGREES")
        ok = False
sys.exit(0 if ok else 1)
