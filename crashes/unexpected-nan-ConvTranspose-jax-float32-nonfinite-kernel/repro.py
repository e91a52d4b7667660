"""Standalone repro of the semfuzz case C3T/minimized/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
JAX (jit) and prints each model output next to semfuzz's reference output.
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

keras.config.set_floatx("float32")
keras.config.set_dtype_policy("float32")

input_layer_0 = keras.Input(batch_shape=(None, 1, 1, 1, 5,), dtype="float32", name="input_layer")
conv3d_transpose_ = layers.Conv3DTranspose(filters=7, kernel_size=[2, 2, 1], activation="soft_shrink", name="conv3d_transpose")
conv3d_transpose_0 = conv3d_transpose_(input_layer_0)
model = keras.Model(input_layer_0, conv3d_transpose_0)

model.get_layer("conv3d_transpose").set_weights([np.array([-3.0, 4.0, -2.0, 1.0, -2.0, 1.0, 2.0, -4.0, 4.0, 3.0, 0.0, 2.0, -4.0, 3.0, 2.0, -4.0, 4.0, -4.0, 4.0, -3.0, 4.0, 3.0, -3.0, 3.0, 0.0, 1.0, 1.0, 0.0, 4.0, -3.0, 2.0, 3.0, 1.0, 1.0, -4.0, -4.0, -1.0, 4.0, 3.0, 4.0, -3.0, 3.0, 2.0, -1.0, -1.0, 1.0, -1.0, -4.0, -4.0, -4.0, -4.0, 1.0, -2.0, -4.0, -3.0, 1.0, -2.0, 3.0, -1.0, -1.0, -4.0, np.inf, 1.0, 4.0, 4.0, -1.0, -2.0, -1.0, 2.0, -1.0, -4.0, -4.0, 1.0, -3.0, 4.0, -3.0, 4.0, 0.0, 1.0, 3.0, -3.0, 0.0, 2.0, 1.0, -1.0, 2.0, 1.0, 4.0, -3.0, 2.0, -1.0, 0.0, 2.0, 1.0, -2.0, -3.0, 2.0, 0.0, 4.0, 4.0, -1.0, -1.0, 3.0, -3.0, 2.0, -1.0, 2.0, -3.0, 4.0, 0.0, -3.0, 3.0, 2.0, -2.0, 2.0, 3.0, 3.0, 0.0, 0.0, 0.0, -1.0, 2.0, 2.0, 4.0, -2.0, 4.0, 4.0, -2.0, 0.0, -1.0, 0.0, 1.0, -2.0, -3.0, -3.0, -3.0, -1.0, 2.0, -1.0, -4.0], dtype="float32").reshape([2, 2, 1, 7, 5]), np.array([0.0, -1.0, -2.0, -3.0, 0.0, -3.0, -1.0], dtype="float32").reshape([7])])
inputs = [np.array([0.0, 0.0, 0.0, 0.0, 0.0], dtype="float32").reshape([1, 1, 1, 1, 5])]
feed = inputs[0] if len(inputs) == 1 else inputs

# jax.jit of the model's stateless call, the weights passed as arguments.
jitted = jax.jit(lambda trainable, fixed, feed: model.stateless_call(trainable, fixed, feed, training=False)[0])


def run_jit(feed):
    trainable = [v.value for v in model.trainable_variables]
    fixed = [v.value for v in model.non_trainable_variables]
    return jitted(trainable, fixed, feed)

expected = [np.array([0.0, -0.5, -1.5, -2.5, 0.0, -2.5, -0.5, 0.0, -0.5, -1.5, -2.5, 0.0, 0.0, -0.5, 0.0, -0.5, -1.5, -2.5, 0.0, -2.5, -0.5, 0.0, -0.5, -1.5, -2.5, 0.0, -2.5, -0.5], dtype="float64").reshape([1, 2, 2, 1, 7])]  # semfuzz's reference (f64)
ATOL, RTOL = 6.008148193359375e-5, 3.814697265625e-6  # loosest layer tolerance x depth 2

ok = True
for mode, run in [("jit", run_jit)]:
    actual = run(feed)
    actual = actual if isinstance(actual, (list, tuple)) else [actual]
    for i, (e, a) in enumerate(zip(expected, actual)):
        a = np.asarray(ops.convert_to_numpy(a), dtype=np.float64)
        print(f"output {i} ({mode}): JAX {a.tolist()}")
        print(f"output {i} ({mode}): reference  {e.tolist()}")
        if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
            print(f"output {i} ({mode}) DISAGREES")
            ok = False
sys.exit(0 if ok else 1)
