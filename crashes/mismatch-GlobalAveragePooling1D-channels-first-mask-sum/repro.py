"""Standalone repro of the semfuzz case mismatch-GlobalAveragePooling1D-channels-first-mask-sum/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
TensorFlow (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree (or when TensorFlow accepts a model the reference calls invalid),
0 when they agree. Needs only TensorFlow, Keras and NumPy. A second model shows the same mask
failing in a kernel where it does not broadcast.
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

keras.config.set_floatx("float64")
keras.config.set_dtype_policy("float64")

input_layer_0 = keras.Input(batch_shape=(None, 1, 2,), dtype="float64", name="input_layer")
masking_ = layers.Masking(name="masking")
masking_0 = masking_(input_layer_0)
global_average_pooling1d_ = layers.GlobalAveragePooling1D(data_format="channels_first", name="global_average_pooling1d")
global_average_pooling1d_0 = global_average_pooling1d_(masking_0)
model = keras.Model(input_layer_0, global_average_pooling1d_0)

inputs = [np.array([1.0, 0.0], dtype="float64").reshape([1, 1, 2])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.5], dtype="float64").reshape([1, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 7.993605777301127e-15, 5.329070518200751e-15  # loosest layer tolerance x depth 3

actual = model(feed, training=False)
actual = actual if isinstance(actual, (list, tuple)) else [actual]
ok = True
for i, (e, a) in enumerate(zip(expected, actual)):
    a = np.asarray(a, dtype=np.float64)
    print(f"output {i}: TensorFlow {a.tolist()}")
    print(f"output {i}: reference  {e.tolist()}")
    if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
        print(f"output {i} DISAGREES")
        ok = False

# The same wrong-axis mask where its length neither is 1 nor broadcasts against the channels
# (steps 2, channels 5): the model builds, then fails in a kernel instead of averaging.
x = keras.Input(batch_shape=(None, 2, 5), dtype="float64")
y = layers.GlobalAveragePooling1D(data_format="channels_first")(layers.Masking()(x))
try:
    out = keras.Model(x, y)(np.arange(10, dtype="float64").reshape([1, 2, 5]) - 3.0)
    print(f"Masking on (None, 2, 5), channels_first: {np.asarray(out).tolist()}")
except Exception as e:
    print(f"Masking on (None, 2, 5), channels_first: {type(e).__name__}: {' '.join(str(e).split())[:160]}")
    ok = False
sys.exit(0 if ok else 1)
