"""MultiHeadAttention does not check `attention_axes` for repeats: an axis given twice is
taken when the layer is built, and fails only when it is called.

Exits 1 while either case below is taken when the layer is built, 0 once both are refused
then.
"""

import sys

import numpy as np
import keras

taken = []
for shape, axes in [((3, 4, 5), [1, 1]), ((3,), [-3, 1])]:
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=2, attention_axes=axes)
    try:
        inp = keras.Input(shape)
        out = layer(inp, inp)
    except ValueError as e:
        print(f"attention_axes={axes} on {(None,) + shape}: refused when built: {str(e).splitlines()[0]}")
        continue
    taken.append(axes)
    print(f"attention_axes={axes} on {(None,) + shape}: built, declared output {tuple(out.shape)}")
    x = np.ones((2,) + shape, "float32")
    try:
        layer(x, x)
        print("  ... and ran")
    except ValueError as e:
        inner = [s for s in str(e).splitlines() if s.strip()][1:2]
        print(f"  ... and fails when called: {inner[0] if inner else str(e).splitlines()[0]}")

sys.exit(1 if taken else 0)
