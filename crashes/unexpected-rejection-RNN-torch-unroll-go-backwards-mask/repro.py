"""Standalone repro of the semfuzz case crashes/unexpected-rejection-RNN-torch-unroll-go-backwards-mask/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
PyTorch (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree (or when PyTorch accepts a model the reference calls invalid),
0 when they agree. Needs only PyTorch, Keras and NumPy.
"""

import os

# The backend, chosen before Keras is imported.
os.environ["KERAS_BACKEND"] = "torch"
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

input_layer_0 = keras.Input(batch_shape=(None, 1,), dtype="float32", name="input_layer")
embedding_ = layers.Embedding(input_dim=1, output_dim=1, mask_zero=True, name="embedding")
embedding_0 = embedding_(input_layer_0)
simple_rnn_ = layers.SimpleRNN(units=7, go_backwards=True, unroll=True, name="simple_rnn")
simple_rnn_0 = simple_rnn_(embedding_0)
model = keras.Model(input_layer_0, simple_rnn_0)

model.get_layer("embedding").set_weights([np.array([0.0], dtype="float32").reshape([1, 1])])
model.get_layer("simple_rnn").set_weights([np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype="float32").reshape([1, 7]), np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype="float32").reshape([7, 7]), np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype="float32").reshape([7])])
inputs = [np.array([0.0], dtype="float32").reshape([1, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype="float64").reshape([1, 7])]  # semfuzz's reference (f64)
ATOL, RTOL = 3.363116314379561e-44, 2.86102294921875e-6  # loosest layer tolerance x depth 3

actual = model(feed, training=False)
actual = actual if isinstance(actual, (list, tuple)) else [actual]
ok = True
for i, (e, a) in enumerate(zip(expected, actual)):
    a = np.asarray(ops.convert_to_numpy(a), dtype=np.float64)
    print(f"output {i}: PyTorch {a.tolist()}")
    print(f"output {i}: reference  {e.tolist()}")
    if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
        print(f"output {i} DISAGREES")
        ok = False
sys.exit(0 if ok else 1)
