"""Standalone repro of the semfuzz case crashes/unexpected-nan-Activation-torch-float32-gelu-inf/case.case.json.

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

input_layer_0 = keras.Input(batch_shape=(None, 2,), dtype="float32", name="input_layer")
activation_ = layers.Activation(activation="gelu", name="activation")
activation_0 = activation_(input_layer_0)
model = keras.Model(input_layer_0, activation_0)

inputs = [np.array([np.inf, 1.0, 2.0, 3.0], dtype="float32").reshape([2, 2])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([np.inf, 0.8413447460685429, 1.9544997361036416, 2.99595030590511], dtype="float64").reshape([2, 2])]  # semfuzz's reference (f64)
ATOL, RTOL = 5.7220458984375e-6, 1.9073486328125e-6  # loosest layer tolerance x depth 2

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
