"""Standalone repro of the semfuzz case mismatch-LSTM-jax-unroll-ignores-zero-output-for-mask/case.case.json.

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

input_layer_0 = keras.Input(batch_shape=(None, 2, 1,), dtype="float32", name="input_layer")
not_equal_0 = keras.src.ops.numpy.NotEqual(name="not_equal")(input_layer_0, 0.0)
masking_ = layers.Masking(mask_value=0.0, name="masking")
masking_0 = masking_(input_layer_0)
any_0 = keras.src.ops.numpy.Any(name="any", axis=-1, keepdims=False)(not_equal_0)
lstm_ = layers.LSTM(return_sequences=False, return_state=False, go_backwards=False, stateful=False, unroll=True, zero_output_for_mask=True, units=1, activation="linear", recurrent_activation="sigmoid", use_bias=True, unit_forget_bias=True, dropout=0.0, recurrent_dropout=0.0, seed=None, name="lstm")
lstm_0 = lstm_(masking_0)
model = keras.Model(input_layer_0, lstm_0)

model.get_layer("lstm").set_weights([np.array([1.0, 1.0, 1.0, 1.0], dtype="float32").reshape([1, 4]), np.array([1.0, 1.0, 1.0, 1.0], dtype="float32").reshape([1, 4]), np.array([1.0, 1.0, 1.0, 1.0], dtype="float32").reshape([4])])
inputs = [np.array([1.0, 0.0], dtype="float32").reshape([1, 2, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.0], dtype="float64").reshape([1, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 0.0005965679697930552, 4.76837158203125e-6  # loosest layer tolerance x depth 5

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
