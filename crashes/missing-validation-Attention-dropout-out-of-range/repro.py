"""Attention and AdditiveAttention take a dropout rate outside [0, 1] without a word, where
Keras's Dropout (and MultiHeadAttention and GroupQueryAttention, built on it) refuse one. A
negative rate is then ignored; a rate past 1 fails only when the layer is called in training.
Exits 1 while the bug is present, 0 once both layers refuse both rates. Needs TensorFlow,
Keras and NumPy only."""

import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

query = np.linspace(0.0, 0.5, 6).reshape(1, 2, 3)
value = np.linspace(-0.3, 0.25, 12).reshape(1, 4, 3)

try:
    keras.layers.Dropout(1.5)
except ValueError as e:
    print("Dropout(1.5) refused:", e)

accepted = 0
for cls in (keras.layers.Attention, keras.layers.AdditiveAttention):
    for rate in (1.5, -0.5):
        try:
            layer = cls(dropout=rate)
        except ValueError as e:
            print(f"{cls.__name__}(dropout={rate}) refused: {e}")
            continue
        accepted += 1
        inference = np.asarray(layer([query, value]))
        print(f"{cls.__name__}(dropout={rate}) accepted; inference runs, output shape {inference.shape}")
        try:
            trained = np.asarray(layer([query, value], training=True))
            dropped = np.count_nonzero(trained == 0) - np.count_nonzero(inference == 0)
            print(f"  training runs, {dropped} more zero outputs than at inference: the rate is ignored")
        except Exception as e:  # the late failure of a rate past 1
            text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
            line = next((ln for ln in text.splitlines() if "rate" in ln), text)
            print(f"  training fails late: {type(e).__name__}: {line.strip()}")
sys.exit(1 if accepted else 0)
