"""MultiHeadAttention never checks that the value (and key) have the query's rank, nor their
sizes on the axes it does not attend over. Each pair below builds, with an output shaped like
the query, then fails inside a TF kernel when the model runs (an einsum or a transpose that
expects another shape). No error names the layer's inputs. Exits 1 while any pair builds, 0
once each is refused when the layer is called on symbolic inputs.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

# (query shape, value shape, attention_axes): other ranks, then the query's rank with another
# size on an axis the layer does not attend over.
pairs = [
    ((2, 3, 4), (3, 4), None),
    ((6, 1), (6, 6, 1), None),
    ((6, 2, 9, 1), (6, 6, 3), None),
    ((2, 3, 4), (7, 3, 4), (2,)),
    ((1, 3, 1), (1, 1, 1), (0, 3)),
]
built = 0
for query_shape, value_shape, axes in pairs:
    q = keras.Input(batch_shape=(None,) + query_shape)
    v = keras.Input(batch_shape=(None,) + value_shape)
    where = "built"
    try:
        y = keras.layers.MultiHeadAttention(num_heads=1, key_dim=1, attention_axes=axes)(q, v)
        built += 1
        where = f"ran (built with output shape {tuple(y.shape)})"
        keras.Model([q, v], y)([np.ones((1,) + query_shape, "float32"), np.ones((1,) + value_shape, "float32")])
        print(f"query {query_shape}, value {value_shape}, attention_axes {axes}: runs")
    except Exception as e:
        message = " ".join(str(e).split())
        print(f"query {query_shape}, value {value_shape}, attention_axes {axes}: {type(e).__name__} when it {where}: {message[:160]}")
print("expected: a ValueError when the layer is called on the symbolic inputs, naming the shapes")
sys.exit(1 if built else 0)
