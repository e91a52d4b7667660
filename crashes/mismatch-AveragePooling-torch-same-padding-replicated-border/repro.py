"""Standalone repro of the semfuzz case crashes/mismatch-AveragePooling-torch-same-padding-replicated-border/case.case.json.

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

input_1_0 = keras.Input(batch_shape=(None, 8, 1, 1,), dtype="float32", name="input_1")
average_pooling2d_ = layers.AveragePooling2D(pool_size=[3, 1], padding="same", name="average_pooling2d")
average_pooling2d_0 = average_pooling2d_(input_1_0)
model = keras.Model(input_1_0, average_pooling2d_0)

inputs = [np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], dtype="float32").reshape([1, 8, 1, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.3333333333333333, 0.0, 0.5], dtype="float64").reshape([1, 3, 1, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 3.814697265625e-6, 1.9073486328125e-6  # loosest layer tolerance x depth 2

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
