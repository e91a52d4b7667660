"""Standalone repro of the semfuzz case crashes/unexpected-rejection-Softmax-jax-mask-kept-through-no-op-flatten/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
JAX (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree (or when JAX accepts a model the reference calls invalid),
0 when they agree. Needs only JAX, Keras and NumPy.
"""

import os

# The backend, chosen before Keras is imported.
os.environ["KERAS_BACKEND"] = "jax"
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # float64 computed in float64
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

input_layer_1_0 = keras.Input(batch_shape=(None, 1,), dtype="float64", name="input_layer_1")
masking_ = layers.Masking(name="masking")
masking_0 = masking_(input_layer_1_0)
flatten_ = layers.Flatten(name="flatten")
flatten_0 = flatten_(masking_0)
softmax_ = layers.Softmax(name="softmax")
softmax_0 = softmax_(flatten_0)
model = keras.Model(input_layer_1_0, softmax_0)

inputs = [np.array([0.0, 0.0], dtype="float64").reshape([2, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([1.0, 1.0], dtype="float64").reshape([2, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 1.7763568394002505e-15, 1.0658141036401503e-14  # loosest layer tolerance x depth 4

actual = model(feed, training=False)
actual = actual if isinstance(actual, (list, tuple)) else [actual]
ok = True
for i, (e, a) in enumerate(zip(expected, actual)):
    a = np.asarray(ops.convert_to_numpy(a), dtype=np.float64)
    print(f"output {i}: JAX {a.tolist()}")
    print(f"output {i}: reference  {e.tolist()}")
    if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
        print(f"output {i} DISAGREES")
        ok = False
sys.exit(0 if ok else 1)
