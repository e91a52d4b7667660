"""Keras before 3.3: an Embedding clips its indices on TensorFlow (kept bug
missing-validation-Embedding-keras-3.2-take-clips-indices). Exits 1 while the bug is present,
0 once an out-of-range index is refused and a negative one counts from the end."""

import sys

import numpy as np
import keras

layer = keras.layers.Embedding(input_dim=3, output_dim=1)
layer.build((None, 3))
layer.set_weights([np.array([[1.0], [2.0], [3.0]], dtype="float32")])

try:
    out = keras.ops.convert_to_numpy(layer(np.array([[0.0, 1.0, 7.0]], dtype="float32")))
    print(f"index 7 of 3 rows was not refused: {out.ravel().tolist()} (the last row)")
    sys.exit(1)
except Exception as e:  # TensorFlow's gather refuses it
    print(f"index 7 of 3 rows refused: {type(e).__name__}")

out = keras.ops.convert_to_numpy(layer(np.array([[-1.0, 0.0, 1.0]], dtype="float32")))
print(f"indices [-1, 0, 1] read {out.ravel().tolist()} (expected [3.0, 1.0, 2.0])")
sys.exit(0 if out.ravel().tolist() == [3.0, 1.0, 2.0] else 1)
