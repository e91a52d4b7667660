"""`GroupQueryAttention` checks none of its sizes (`head_dim`, `num_query_heads`,
`num_key_value_heads`). A zero or negative one fails by accident: a square root of a negative
number or a division by zero in the constructor, a `BiasAdd` kernel when the model runs, or a
negative variable shape when it is built; with no query heads and no biases, it runs and
gives zeros. None of these errors names the argument. Exits 1
while any of them fails so, 0 once each is refused with an error that names its argument.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

cases = [
    dict(head_dim=-1, num_query_heads=1, num_key_value_heads=1),
    dict(head_dim=0, num_query_heads=1, num_key_value_heads=1),
    dict(head_dim=2, num_query_heads=2, num_key_value_heads=0),
    dict(head_dim=2, num_query_heads=0, num_key_value_heads=1),
    # Without biases there is no BiasAdd to fail: it runs, and its output is all zeros.
    dict(head_dim=2, num_query_heads=0, num_key_value_heads=1, use_bias=False),
    dict(head_dim=2, num_query_heads=-2, num_key_value_heads=-1),
]
unnamed = 0
for kwargs in cases:
    shown = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    bad = [k for k, v in kwargs.items() if k != "use_bias" and v <= 0]
    where = "made"
    try:
        layer = keras.layers.GroupQueryAttention(**kwargs)
        where = "built"
        x = keras.Input(batch_shape=(None, 2, 3))
        y = layer(x, x)
        where = "ran"
        out = np.asarray(keras.Model(x, y)(np.ones((1, 2, 3), "float32")))
        print(f"GroupQueryAttention({shown}): runs, output {out.tolist()}")
        unnamed += 1
    except Exception as e:
        message = " ".join(str(e).split())
        named = any(f"`{k}`" in message or f"{k}=" in message for k in bad)
        unnamed += not named
        print(f"GroupQueryAttention({shown}): {type(e).__name__} when {where}: {message[:160]}")
print("expected: a ValueError naming the argument that is not positive, when the layer is made")
sys.exit(1 if unnamed else 0)
