"""Standalone repro of the semfuzz case unexpected-nan-Softmax-float32-onednn-inf/case.case.json.

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

keras.config.set_floatx("float32")
keras.config.set_dtype_policy("float32")

input_layer_0 = keras.Input(batch_shape=(None, 2,), dtype="float32", name="input_layer")
softmax_ = layers.Softmax(axis=-1, name="softmax")
softmax_0 = softmax_(input_layer_0)
model = keras.Model(input_layer_0, softmax_0)

inputs = [np.array([np.inf, 1.0], dtype="float32").reshape([1, 2])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([np.nan, np.nan], dtype="float64").reshape([1, 2])]  # semfuzz's reference (f64)
ATOL, RTOL = 4.76837158203125e-7, 3.814697265625e-6  # loosest layer tolerance x depth 2

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
