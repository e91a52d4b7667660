"""Standalone repro of the semfuzz case case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
JAX (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree, 0 when they agree.
Needs only JAX, Keras and NumPy.
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

input_layer_0 = keras.Input(batch_shape=(None, 2, 2,), dtype="float64", name="input_layer")
separable_conv1d_ = layers.SeparableConv1D(filters=1, kernel_size=[2], strides=1, padding="valid", data_format="channels_last", dilation_rate=1, depth_multiplier=1, activation="sigmoid", use_bias=False, name="separable_conv1d")
separable_conv1d_0 = separable_conv1d_(input_layer_0)
model = keras.Model(input_layer_0, separable_conv1d_0)

model.get_layer("separable_conv1d").set_weights([np.array([1.0, 1.0, 1.0, 1.0], dtype="float64").reshape([2, 2, 1]), np.array([1.0, 1.0], dtype="float64").reshape([1, 2, 1])])
inputs = [np.array([np.inf, 1.0, 1.0, 1.0], dtype="float64").reshape([1, 2, 2])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([1.0], dtype="float64").reshape([1, 1, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 2.1316282072803006e-14, 7.105427357601002e-15  # loosest layer tolerance x depth 2

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
