"""Keras's Attention and AdditiveAttention accept a value (and key) of another rank than the
query, and broadcast it, so each sample attends over other samples' values.

The layers take `query` of shape (batch, Tq, dim) and `value` of shape (batch, Tv, dim).
Given a rank-2 value (batch, dim), neither Keras nor TF refuses it: the scores are computed
by broadcasting, the value's batch axis plays the part of Tv, and each query attends over
every sample's value. A mask that does not fit the scores is not checked either, and fails in
a kernel. Exits 1 while the layers accept either, 0 once they refuse both.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

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

# Nor is a mask checked against the scores: Embedding(mask_zero=True) on (None, 7, 3) gives
# rank-4 query and value with a rank-3 mask; the model builds, then fails in a kernel.
x = keras.Input(batch_shape=(None, 7, 3), dtype="int32")
emb = keras.layers.Embedding(10, 4, mask_zero=True)(x)
where = "built"
try:
    y = keras.layers.Attention()([emb, emb])
    where = f"ran (built with output shape {tuple(y.shape)})"
    keras.Model(x, y)(np.arange(21, dtype="int32").reshape(1, 7, 3) % 10)
    print("Attention, rank-3 mask on rank-4 inputs: runs")
except Exception as e:
    late = type(e).__name__ != "ValueError" or where != "built"
    accepted |= late
    print(f"Attention, rank-3 mask on rank-4 inputs: {type(e).__name__} when it {where}: {' '.join(str(e).split())[:160]}")
print("expected: a ValueError naming the mask's shape, when the layer is called")
sys.exit(1 if accepted else 0)
