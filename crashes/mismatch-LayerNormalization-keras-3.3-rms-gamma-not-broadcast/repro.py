"""Standalone repro of the semfuzz case crashes/mismatch-LayerNormalization-keras-3.3-rms-gamma-not-broadcast/case.case.json.

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

keras.config.set_floatx("float64")
keras.config.set_dtype_policy("float64")

input_layer_0 = keras.Input(batch_shape=(None, 3, 3,), dtype="float64", name="input_layer")
layer_normalization_ = layers.LayerNormalization(axis=1, epsilon=1e-6, center=True, scale=True, rms_scaling=True, name="layer_normalization")
layer_normalization_0 = layer_normalization_(input_layer_0)
model = keras.Model(input_layer_0, layer_normalization_0)

model.get_layer("layer_normalization").set_weights([np.array([1.0, 2.0, 3.0], dtype="float64").reshape([3])])
inputs = [np.array([1.0, 2.0, 4.0, 2.0, -1.0, 3.0, -3.0, 1.0, 2.0], dtype="float64").reshape([1, 3, 3])]
feed = inputs[0] if len(inputs) == 1 else inputs

def run_eager(feed):
    return model(feed, training=False)

expected = [np.array([0.4629100002887783, 1.6035669360423999, 4.898975811335876, 1.8516400011551133, -1.6035669360423999, 7.348463717003813, -4.166190002599005, 2.4053504040636, 7.348463717003813], dtype="float64").reshape([1, 3, 3])]  # semfuzz's reference (f64)
ATOL, RTOL = 6.526746891392156e-14, 3.5527136788005025e-15  # loosest layer tolerance x depth 2

ok = True
for mode, run in [("eager", run_eager)]:
    actual = run(feed)
    actual = actual if isinstance(actual, (list, tuple)) else [actual]
    for i, (e, a) in enumerate(zip(expected, actual)):
        a = np.asarray(ops.convert_to_numpy(a), dtype=np.float64)
        print(f"output {i} ({mode}): TensorFlow {a.tolist()}")
        print(f"output {i} ({mode}): reference  {e.tolist()}")
        if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
            print(f"output {i} ({mode}) DISAGREES")
            ok = False
sys.exit(0 if ok else 1)
