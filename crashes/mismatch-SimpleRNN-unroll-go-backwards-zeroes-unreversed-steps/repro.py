"""Standalone repro of the semfuzz case crashes/mismatch-SimpleRNN-unroll-go-backwards-zeroes-unreversed-steps/case.case.json.

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

input_layer_0 = keras.Input(batch_shape=(None, 3, 2,), dtype="float32", name="input_layer")
masking_ = layers.Masking(mask_value=0.0, name="masking")
masking_0 = masking_(input_layer_0)
simple_rnn_ = layers.SimpleRNN(return_sequences=True, return_state=False, go_backwards=True, stateful=False, unroll=True, zero_output_for_mask=True, units=1, activation="linear", use_bias=True, dropout=0.0, recurrent_dropout=0.0, name="simple_rnn")
simple_rnn_0 = simple_rnn_(masking_0)
model = keras.Model(input_layer_0, simple_rnn_0)

model.get_layer("simple_rnn").set_weights([np.array([1.0, 1.0], dtype="float32").reshape([2, 1]), np.array([0.0], dtype="float32").reshape([1, 1]), np.array([0.0], dtype="float32").reshape([1])])
inputs = [np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0], dtype="float32").reshape([1, 3, 2])]
feed = inputs[0] if len(inputs) == 1 else inputs

def run_eager(feed):
    return model(feed, training=False)

expected = [np.array([2.0, 2.0, 0.0], dtype="float64").reshape([1, 3, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 4.0054325381789065e-5, 2.86102294921875e-6  # loosest layer tolerance x depth 3

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
