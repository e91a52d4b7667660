"""Standalone repro of the semfuzz case crashes/mismatch-Rescaling-float64-constants-float32-torch/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
PyTorch (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree (or when PyTorch accepts a model the reference calls invalid),
0 when they agree. Needs only PyTorch, Keras and NumPy.

The Keras bug kept as mismatch-Rescaling-float64-constants-float32, at Masking: the second
input, float32(mask_value), is masked (0) although it is not mask_value.
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

# As semfuzz runs a float64 case: floatx stays float32, the layers' dtype policy is float64
# (torch makes a Python float mask_value a floatx tensor, so it is rounded to float32 only
# then; TensorFlow rounds it with floatx float64 too).
keras.config.set_floatx("float32")
keras.config.set_dtype_policy("float64")

input_1_0 = keras.Input(batch_shape=(None, 1,), dtype="float64", name="input_1")
masking_ = layers.Masking(mask_value=3.5887727321840406, name="masking")
masking_0 = masking_(input_1_0)
model = keras.Model(input_1_0, masking_0)

inputs = [np.array([0.006646020974005573, 3.588772773742676], dtype="float64").reshape([2, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.006646020974005573, 3.588772773742676], dtype="float64").reshape([2, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 1e-300, 2.220446049250313e-16  # loosest layer tolerance x depth 2

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
