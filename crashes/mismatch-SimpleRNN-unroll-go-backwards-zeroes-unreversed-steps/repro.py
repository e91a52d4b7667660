"""An unrolled SimpleRNN (also GRU, LSTM, RNN) with go_backwards=True, return_sequences=True
and zero_output_for_mask=True zeroes the outputs of the wrong steps.

With go_backwards the output sequence is in processing order (last input step first), so the
zeroed outputs must be those of the masked steps in that order, as the loop (unroll=False)
gives. The unrolled TensorFlow path (keras/src/backend/tensorflow/rnn.py, `unroll` branch)
reverses the input and mask lists for the loop, but zeroes the stacked outputs where the
unreversed mask says: the step masked first in the input is zeroed last.

Input steps [masked, 1, 1] (Masking(0)), kernel ones, recurrent kernel zeros, linear:
unroll=False gives [2, 2, 0] (correct), unroll=True gives [0, 2, 2].

Exits 1 while the bug is present, 0 once fixed. Needs only TensorFlow, Keras and NumPy.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

x = np.ones((1, 3, 2), dtype="float32")
x[0, 0] = 0.0  # step 0 is masked by Masking(0.0)
outputs = {}
for unroll in (False, True):
    inputs = keras.Input((3, 2))
    masked = keras.layers.Masking(0.0)(inputs)
    rnn = keras.layers.SimpleRNN(
        1,
        return_sequences=True,
        go_backwards=True,
        unroll=unroll,
        zero_output_for_mask=True,
        kernel_initializer="ones",
        recurrent_initializer="zeros",
        activation="linear",
    )
    outputs[unroll] = np.asarray(keras.Model(inputs, rnn(masked))(x))[0, :, 0].tolist()
print("unroll=False:", outputs[False], "(expected [2.0, 2.0, 0.0])")
print("unroll=True: ", outputs[True])
sys.exit(0 if outputs[True] == outputs[False] else 1)
