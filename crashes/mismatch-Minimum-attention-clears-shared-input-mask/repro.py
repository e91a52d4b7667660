"""Standalone repro of the semfuzz case crashes/mismatch-Minimum-attention-clears-shared-input-mask/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
TensorFlow (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree, 0 when they agree.
Needs only TensorFlow, Keras and NumPy.
"""

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

input_layer_0 = keras.Input(batch_shape=(None, 2, 2,), dtype="float32", name="input_layer")
masking_ = layers.Masking(mask_value=0.5, name="masking")
masking_0 = masking_(input_layer_0)
multi_head_attention_ = layers.MultiHeadAttention(num_heads=1, key_dim=2, value_dim=2, dropout=0.0, use_bias=True, use_gate=False, output_shape=None, attention_axes=[1], sliding_window=None, seed=None, name="multi_head_attention")
multi_head_attention_0 = multi_head_attention_(input_layer_0, masking_0)
dense_ = layers.Dense(units=2, activation="linear", use_bias=True, name="dense")
dense_0 = dense_(masking_0)
re_lu_ = layers.ReLU(max_value=None, negative_slope=0.0, threshold=0.0, name="re_lu")
re_lu_0 = re_lu_(multi_head_attention_0)
minimum_ = layers.Minimum(name="minimum")
minimum_0 = minimum_([dense_0, input_layer_0])
rms_normalization_ = layers.RMSNormalization(axis=[-1], epsilon=1e-6, name="rms_normalization")
rms_normalization_0 = rms_normalization_(re_lu_0)
model = keras.Model(input_layer_0, [minimum_0, rms_normalization_0])

model.get_layer("multi_head_attention").set_weights([np.array([0.274, -0.46, -0.918, -0.967], dtype="float32").reshape([2, 1, 2]), np.array([0.627, 0.826], dtype="float32").reshape([1, 2]), np.array([0.213, 0.459, 0.087, 0.87], dtype="float32").reshape([2, 1, 2]), np.array([0.632, -0.995], dtype="float32").reshape([1, 2]), np.array([0.715, -0.933, 0.459, -0.649], dtype="float32").reshape([2, 1, 2]), np.array([0.726, 0.083], dtype="float32").reshape([1, 2]), np.array([-0.401, -0.155, -0.943, -0.751], dtype="float32").reshape([1, 2, 2]), np.array([0.341, 0.294], dtype="float32").reshape([2])])
model.get_layer("dense").set_weights([np.array([1.0, 1.0, 1.0, 1.0], dtype="float32").reshape([2, 2]), np.array([-2.0, -2.0], dtype="float32").reshape([2])])
model.get_layer("rms_normalization").set_weights([np.array([0.377, -0.222], dtype="float32").reshape([2])])
inputs = [np.array([0.5, 0.5, 2.0, 3.0], dtype="float32").reshape([1, 2, 2])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.5, 0.5, 2.0, 3.0], dtype="float64").reshape([1, 2, 2]), np.array([0.3689103755183448, -0.22666352393171715, 0.3689103755183448, -0.22666352393171715], dtype="float64").reshape([1, 2, 2])]  # semfuzz's reference (f64)
ATOL, RTOL = 0.007308318633145356, 6.67572021484375e-6  # loosest layer tolerance x depth 7

actual = model(feed, training=False)
actual = actual if isinstance(actual, (list, tuple)) else [actual]
ok = True
for i, (e, a) in enumerate(zip(expected, actual)):
    a = np.asarray(ops.convert_to_numpy(a), dtype=np.float64)
    print(f"output {i}: TensorFlow {a.tolist()}")
    print(f"output {i}: reference  {e.tolist()}")
    if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
        print(f"output {i} DISAGREES")
        ok = False
sys.exit(0 if ok else 1)
