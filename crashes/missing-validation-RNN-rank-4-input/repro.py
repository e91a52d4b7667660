"""keras.layers.RNN(GRUCell(4)) runs a rank-4 input instead of refusing it: the model declares
an output of shape (None, 4) and returns one of shape (1, 1, 4). Exits 1 while the bug is
present, 0 once fixed (a refusal of the rank-4 input counts as fixed). Needs only TensorFlow,
Keras and NumPy.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers, ops  # noqa: E402,F401

keras.config.set_floatx("float64")
keras.config.set_dtype_policy("float64")

input_layer_0 = keras.Input(batch_shape=(None, 1, 1, 1,), dtype="float64", name="input_layer")
rnn_ = layers.RNN(cell={"module": "keras.layers", "class_name": "GRUCell", "config": {"units": 4, "activation": "relu"}}, name="rnn")
rnn_0 = rnn_(input_layer_0)
model = keras.Model(input_layer_0, rnn_0)

inputs = [np.array([0.0], dtype="float64").reshape([1, 1, 1, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

# The reference calls this model invalid: RNN 'rnn': input[0]=rank 4 has the wrong rank (expected rank 3 (batch, time, features))
try:
    out = model(feed, training=False)
except Exception as e:
    print("TensorFlow refuses it:", type(e).__name__, e)
    sys.exit(0)
print("TensorFlow runs it:", out)
print("declared output shape:", rnn_0.shape, "actual:", tuple(out.shape))
sys.exit(1)
