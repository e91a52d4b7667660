"""Standalone repro of the semfuzz case crashes/mismatch-Dense-torch-float64-computed-in-float32/case.case.json.

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

input_1_0 = keras.Input(batch_shape=(None, 1,), dtype="float64", name="input_1")
dense_ = layers.Dense(units=6, name="dense")
dense_0 = dense_(input_1_0)
model = keras.Model(input_1_0, dense_0)

model.get_layer("dense").set_weights([np.array([0.7647838422575846, 0.976094586471898, 0.08304803775928526, -0.20957654565038597, -0.5908664358726434, 0.09678406044326726], dtype="float64").reshape([1, 6]), np.array([-0.31356703267723285, 0.8099121204655138, 0.5190114386045854, 0.5875312899663303, -0.5803527309847314, -0.15543732354285833], dtype="float64").reshape([6])])
inputs = [np.array([1.0], dtype="float64").reshape([1, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.4512168095803517, 1.7860067069374117, 0.6020594763638707, 0.37795474431594434, -1.1712191668573748, -0.05865326309959107], dtype="float64").reshape([1, 6])]  # semfuzz's reference (f64)
ATOL, RTOL = 6.34517045816598e-15, 3.552713678800501e-15  # loosest layer tolerance x depth 2

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
