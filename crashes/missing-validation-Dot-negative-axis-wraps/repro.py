"""Dot takes a negative int `axes` modulo the rank (kept bug missing-validation-Dot-negative-axis-wraps):
Dot(axes=-4) on rank-3 inputs contracts axis 2. Exits 1 while the model builds and runs, 0 once
the axis is refused."""

import sys

import numpy as np
import keras

a = keras.Input(shape=(2, 3))
b = keras.Input(shape=(2, 3))
try:
    model = keras.Model([a, b], keras.layers.Dot(axes=-4)([a, b]))
except Exception as e:
    print(f"refused: {type(e).__name__}: {e}")
    sys.exit(0)
x = np.arange(1, 7, dtype="float32").reshape(1, 2, 3)
y = np.array([[[1, 0, 0], [0, 1, 0]]], dtype="float32")
out = keras.ops.convert_to_numpy(model([x, y]))
print(f"axes=-4 on rank 3 ran as axis 2: {out.tolist()} (expected a refusal)")
sys.exit(1)
