"""keras.layers.RNN(GRUCell(4)) runs a rank-4 input instead of refusing it: the model declares
an output of shape (None, 4) and returns one of shape (1, 1, 4). Exits 1 while the bug is
present, 0 once fixed (a refusal of the rank-4 input counts as fixed). Needs only TensorFlow,
Keras and NumPy.
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

input_layer_0 = keras.Input(batch_shape=(None, 1, 1, 1,), dtype="float64", name="input_layer")
rnn_ = layers.RNN(cell=keras.saving.deserialize_keras_object({"module": "keras.layers", "class_name": "GRUCell", "config": {"units": 4, "activation": "relu"}}), name="rnn")
rnn_0 = rnn_(input_layer_0)
model = keras.Model(input_layer_0, rnn_0)

inputs = [np.array([0.0], dtype="float64").reshape([1, 1, 1, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

# The reference calls this model invalid: RNN 'rnn': input[0]=rank 4 has the wrong rank (expected rank 3 (batch, time, features))
present = False
try:
    out = model(feed, training=False)
    print("TensorFlow runs it:", out)
    print("declared output shape:", rnn_0.shape, "actual:", tuple(out.shape))
    present = True
except Exception as e:
    print("TensorFlow refuses it:", type(e).__name__, e)

# The same RNN inside a Bidirectional: built on a rank-4 input, refused only in a kernel.
x = keras.Input(batch_shape=(None, 4, 4, 4), dtype="float32")
try:
    y = layers.Bidirectional(layers.RNN(layers.LSTMCell(2), return_sequences=True))(x)
except Exception as e:
    print("Bidirectional(RNN(LSTMCell(2))) on (None, 4, 4, 4) refused when built:", type(e).__name__)
else:
    present = True
    print("Bidirectional(RNN(LSTMCell(2))) on (None, 4, 4, 4) builds, declaring", tuple(y.shape))
    try:
        keras.Model(x, y)(np.zeros((1, 4, 4, 4), "float32"))
        print("  and runs")
    except Exception as e:
        print("  and fails when it runs:", type(e).__name__, " ".join(str(e).split())[:120])
sys.exit(1 if present else 0)
