"""Keras's GroupQueryAttention never checks the ranks of its query, value and key, which it
documents as (batch, sequence, features).

A functional model builds without complaint on a rank-4 query of shape (None, 6, 8, 4): the
layer declares an output of shape (None, 6, 8, 4), and the layers after it are built on that
shape. Called on data, the same layer fails inside its query projection (an EinsumDense with
the rank-3 equation "bqm,muh->bquh") with "too many values to unpack (expected 3)", which
names neither the layer nor the rank. A rank-4 value is accepted too; a rank-2 query fails
with "IndexError: tuple index out of range". Exits 1 while the layer accepts a rank other
than 3 when it is built, 0 once it refuses it.
"""

import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402


def gqa():
    return keras.layers.GroupQueryAttention(head_dim=1, num_query_heads=4, num_key_value_heads=1)


def first_lines(e):
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))  # Keras's bold markers
    lines = [line for line in text.splitlines() if line.strip()]
    return " ".join(lines[:2])


accepted = False
probes = [
    ("query rank 4", keras.Input((6, 8, 4)), keras.Input((6, 8, 4))),
    ("value rank 4", keras.Input((6, 4)), keras.Input((6, 8, 4))),
    ("query rank 2", keras.Input((6,)), keras.Input((6, 4))),
]
for name, query, value in probes:
    try:
        declared = gqa()(query, value)
        accepted = True
        print(f"{name}: built on query {query.shape}, value {value.shape}: declared output {declared.shape}")
    except Exception as e:  # the fixed behaviour: a ValueError naming the rank
        print(f"{name}: refused when built: {type(e).__name__}: {first_lines(e)}")

x = np.ones((2, 6, 8, 4), "float32")
try:
    out = gqa()(x, x)
    print(f"query rank 4 called on {x.shape}: output {tuple(out.shape)}")
except Exception as e:
    print(f"query rank 4 called on {x.shape}: {type(e).__name__}: {first_lines(e)}")
print("expected: a ValueError naming the input and its rank (3: batch, sequence, features)")
sys.exit(1 if accepted else 0)
