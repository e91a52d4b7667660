"""Standalone repro of the semfuzz case crashes/mismatch-Activation-torch-softplus-linear-above-20/case.case.json.

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

keras.config.set_floatx("float64")
keras.config.set_dtype_policy("float64")

input_1_0 = keras.Input(batch_shape=(None, 4,), dtype="float64", name="input_1")
activation_ = layers.Activation(activation="softplus", name="activation")
activation_0 = activation_(input_1_0)
model = keras.Model(input_1_0, activation_0)

inputs = [np.array([-1.0, 19.5, 20.5, 25.0], dtype="float64").reshape([1, 4])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.31326168751822286, 19.500000003398267, 20.500000001250154, 25.000000000013888], dtype="float64").reshape([1, 4])]  # semfuzz's reference (f64)
ATOL, RTOL = 8.881784197001252e-14, 3.552713678800501e-15  # loosest layer tolerance x depth 2

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
