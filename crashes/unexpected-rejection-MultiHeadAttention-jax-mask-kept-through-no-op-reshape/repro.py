"""Standalone repro of the semfuzz case unexpected-rejection-MultiHeadAttention-jax-mask-kept-through-no-op-reshape/case.case.json.

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

input_layer_0 = keras.Input(batch_shape=(None, 2, 1, 1,), dtype="float32", name="input_layer")
masking_ = layers.Masking(mask_value=0.0, name="masking")
masking_0 = masking_(input_layer_0)
reshape_ = layers.Reshape(target_shape=[2, 1, 1], name="reshape")
reshape_0 = reshape_(masking_0)
multi_head_attention_ = layers.MultiHeadAttention(num_heads=1, key_dim=1, value_dim=1, dropout=0.0, use_bias=False, use_gate=False, output_shape=None, attention_axes=[1, 2], sliding_window=None, seed=None, name="multi_head_attention")
multi_head_attention_0 = multi_head_attention_(reshape_0, input_layer_0)
model = keras.Model(input_layer_0, multi_head_attention_0)

model.get_layer("multi_head_attention").set_weights([np.array([0.3161], dtype="float32").reshape([1, 1, 1]), np.array([0.0085], dtype="float32").reshape([1, 1, 1]), np.array([-0.0459], dtype="float32").reshape([1, 1, 1]), np.array([-1.0866], dtype="float32").reshape([1, 1, 1])])
inputs = [np.array([0.125, 0.25, 0.375, 0.5], dtype="float32").reshape([2, 2, 1, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.009351616682852794, 0.009351682115705527, 0.02182048254855815, 0.021820547981410598], dtype="float64").reshape([2, 2, 1, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 1.2787945352668657e-5, 3.814697265625e-6  # loosest layer tolerance x depth 4

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
