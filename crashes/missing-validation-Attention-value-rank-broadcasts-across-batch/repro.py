"""Keras's Attention and AdditiveAttention accept a value (and key) of another rank than the
query, and broadcast it, so each sample attends over other samples' values.

The layers take `query` of shape (batch, Tq, dim) and `value` of shape (batch, Tv, dim).
Given a rank-2 value (batch, dim), neither Keras nor TF refuses it: the scores are computed
by broadcasting, the value's batch axis plays the part of Tv, and each query attends over
every sample's value. Exits 1 while the layers accept it, 0 once they refuse it.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import keras  # noqa: E402

query = np.zeros((2, 1, 1), "float32")  # two samples, one step, one feature
value = np.array([[1.0], [5.0]], "float32")  # rank 2: one value per sample
accepted = False
for layer in [keras.layers.Attention(), keras.layers.AdditiveAttention(use_scale=False)]:
    name = type(layer).__name__
    try:
        out = np.asarray(layer([query, value]))
    except Exception as e:  # the fixed behaviour: the ranks are refused
        print(f"{name}: refused: {type(e).__name__}: {str(e).splitlines()[0]}")
        continue
    accepted = True
    # Sample 0's output is the mean of both samples' values: 3, not 1.
    print(f"{name}: query {query.shape}, value {value.shape} -> output {out.shape}: {out.ravel().tolist()}")
print("expected: a ValueError naming the ranks (a value of rank 3, as the query)")
sys.exit(1 if accepted else 0)
