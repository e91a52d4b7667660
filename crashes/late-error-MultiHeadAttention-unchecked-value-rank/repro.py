"""MultiHeadAttention never checks that the value (and key) have the query's rank. Each pair of
ranks below builds, with an output shaped like the query, then fails inside a TF kernel when
the model runs (an einsum or a transpose that expects another rank). No error names the layer's
inputs. Exits 1 while any pair builds, 0 once each is refused when the layer is called on
symbolic inputs.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import keras  # noqa: E402

pairs = [((2, 3, 4), (3, 4)), ((6, 1), (6, 6, 1)), ((6, 2, 9, 1), (6, 6, 3))]
built = 0
for query_shape, value_shape in pairs:
    q = keras.Input(batch_shape=(None,) + query_shape)
    v = keras.Input(batch_shape=(None,) + value_shape)
    where = "built"
    try:
        y = keras.layers.MultiHeadAttention(num_heads=1, key_dim=1)(q, v)
        built += 1
        where = f"ran (built with output shape {tuple(y.shape)})"
        keras.Model([q, v], y)([np.ones((1,) + query_shape, "float32"), np.ones((1,) + value_shape, "float32")])
        print(f"query {query_shape}, value {value_shape}: runs")
    except Exception as e:
        message = " ".join(str(e).split())
        print(f"query {query_shape}, value {value_shape}: {type(e).__name__} when it {where}: {message[:200]}")
print("expected: a ValueError when the layer is called on the symbolic inputs, naming the ranks")
sys.exit(1 if built else 0)
