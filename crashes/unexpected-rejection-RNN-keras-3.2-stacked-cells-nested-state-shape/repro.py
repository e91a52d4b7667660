"""Keras before 3.3: an RNN over StackedRNNCells holding an LSTMCell, with return_state=True,
fails to compute its output shape (kept bug
unexpected-rejection-RNN-keras-3.2-stacked-cells-nested-state-shape). Exits 1 while the bug
is present, 0 once the layer returns its output and states."""

import sys

import keras

x = keras.Input(shape=(1, 1))
cell = keras.layers.StackedRNNCells(
    [keras.layers.LSTMCell(2, use_bias=False), keras.layers.SimpleRNNCell(3)]
)
try:
    outputs = keras.layers.RNN(cell, return_state=True)(x)
except ValueError as e:
    print(f"refused: ValueError: {e}")
    sys.exit(1)
print(f"built: the output and {len(outputs) - 1} cells' states")
sys.exit(0)
