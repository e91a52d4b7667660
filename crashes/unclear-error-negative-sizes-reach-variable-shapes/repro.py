"""A negative size that `EinsumDense` or `MultiHeadAttention` (`output_shape`) does not check
reaches the shape of a variable when the layer is built: `ValueError: Cannot convert '(3, -1)' to a shape. Negative dimensions are not allowed.`
The message names neither the layer nor the argument. Exits 1 while any of them fails so, 0
once each names its argument (as `Dense`, `Conv1D` and `LSTM` do for theirs).
(`ConvLSTM1D(filters=-1)` fails so too: see `late-error-ConvLSTM-unchecked-filters`.)
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import keras  # noqa: E402

cases = [
    ("EinsumDense('ab,bc->ac', output_shape=-1)", "output_shape",
     lambda: keras.layers.EinsumDense("ab,bc->ac", output_shape=-1), (3,), 1),
    ("MultiHeadAttention(num_heads=1, key_dim=2, output_shape=-1)", "output_shape",
     lambda: keras.layers.MultiHeadAttention(num_heads=1, key_dim=2, output_shape=-1), (2, 3), 2),
]
unnamed = 0
for name, argument, make, shape, n in cases:
    x = keras.Input(batch_shape=(None,) + shape)
    try:
        make()(*[x] * n)
        print(f"{name}: builds")
        unnamed += 1
    except Exception as e:
        message = " ".join(str(e).split())
        named = f"`{argument}`" in message or f"{argument}=" in message
        unnamed += not named
        print(f"{name}: {type(e).__name__}: {message[:160]}")
print("expected: a ValueError naming the argument, when the layer is made")
sys.exit(1 if unnamed else 0)
