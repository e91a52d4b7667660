"""Keras 3.0-3.1: a channels_first UpSampling2D with bilinear interpolation resizes to the
wrong size (kept bug mismatch-UpSampling2D-keras-3.1-channels-first-resize-size). Exits 1
while the bug is present, 0 once the output has the expected shape."""

import sys

import numpy as np
import keras

x = np.arange(24, dtype="float32").reshape(1, 2, 3, 4)  # channels 2, height 3, width 4
layer = keras.layers.UpSampling2D(
    size=(2, 2), data_format="channels_first", interpolation="bilinear"
)
out = keras.ops.convert_to_numpy(layer(x))
print(f"output shape {out.shape} (expected (1, 2, 6, 8))")
sys.exit(0 if out.shape == (1, 2, 6, 8) else 1)
