"""Keras 3.0-3.1: Bidirectional(return_state=True) fails to compute its output shape (kept
bug unexpected-rejection-Bidirectional-keras-3.1-return-state-output-shape). Exits 1 while
the bug is present, 0 once the model builds."""

import sys

import keras

x = keras.Input(shape=(3, 2))
try:
    outputs = keras.layers.Bidirectional(keras.layers.SimpleRNN(2, return_state=True))(x)
except TypeError as e:
    print(f"refused: TypeError: {e}")
    sys.exit(1)
print(f"built: {len(outputs)} outputs (the merged output and each direction's state)")
sys.exit(0)
