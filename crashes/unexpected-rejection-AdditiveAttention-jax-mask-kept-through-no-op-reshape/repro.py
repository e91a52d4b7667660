"""Standalone repro of the semfuzz case unexpected-rejection-AdditiveAttention-jax-mask-kept-through-no-op-reshape/case.case.json.

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

keras.config.set_floatx("float32")
keras.config.set_dtype_policy("float32")

input_layer_0 = keras.Input(batch_shape=(None, 3, 2, 1,), dtype="float32", name="input_layer")
masking_ = layers.Masking(mask_value=0.0, name="masking")
masking_0 = masking_(input_layer_0)
reshape_ = layers.Reshape(target_shape=[3, 2, 1], name="reshape")
reshape_0 = reshape_(masking_0)
additive_attention_ = layers.AdditiveAttention(use_scale=True, dropout=0.0, seed=None, name="additive_attention")
additive_attention_0 = additive_attention_([reshape_0, reshape_0])
model = keras.Model(input_layer_0, additive_attention_0)

model.get_layer("additive_attention").set_weights([np.array([-0.8348], dtype="float32").reshape([1])])
inputs = [np.array([0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 1.5], dtype="float32").reshape([2, 3, 2, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.18454287656215013, 0.18479485842042118, 0.4357068031383792, 0.43599534069243684, 0.6866771679744089, 0.686839448556396, 0.9371694817167509, 0.9372395877366967, 1.1873742867392458, 1.1874016692766454, 1.4374531753007407, 1.437463474390049], dtype="float64").reshape([2, 3, 2, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 7.44873046875e-5, 3.814697265625e-6  # loosest layer tolerance x depth 4

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
