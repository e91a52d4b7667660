"""`MultiHeadAttention` and `GroupQueryAttention` pass their `dropout` to a `Dropout` layer
they build, and do not check it themselves. A rate outside [0, 1) is refused when the layer
is built, by the inner layer, as `rate`: "Invalid value received for argument `rate`". That
argument is not one the user wrote, and the message names no layer. Exits 1 while either
layer's error names `rate` but not `dropout`, 0 once it names `dropout`.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import keras  # noqa: E402

cases = [
    ("MultiHeadAttention(num_heads=1, key_dim=2, dropout=-1.0)",
     lambda: keras.layers.MultiHeadAttention(num_heads=1, key_dim=2, dropout=-1.0)),
    ("GroupQueryAttention(head_dim=2, num_query_heads=1, num_key_value_heads=1, dropout=1.5)",
     lambda: keras.layers.GroupQueryAttention(head_dim=2, num_query_heads=1, num_key_value_heads=1, dropout=1.5)),
]
unnamed = 0
for name, make in cases:
    x = keras.Input(batch_shape=(None, 2, 3))
    try:
        make()(x, x)
        print(f"{name}: builds")
    except Exception as e:
        message = " ".join(str(e).split())
        unnamed += "`dropout`" not in message and "dropout=" not in message
        print(f"{name}: {type(e).__name__}: {message[:160]}")
print("expected: a ValueError naming `dropout`, when the layer is made")
sys.exit(1 if unnamed else 0)
