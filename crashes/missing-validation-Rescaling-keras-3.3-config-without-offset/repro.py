"""Keras 3.3.3 rebuilds a Rescaling config without `offset`; from 3.5.0 from_config refuses it.

Before 3.5.0 Rescaling has no from_config of its own, so a config without `offset` takes the
constructor's default (0.0); from 3.5.0, Rescaling.from_config reads config["offset"] and
raises KeyError. semfuzz's reference models the later behaviour.

Exits 1 while the config without `offset` is accepted (Keras < 3.5.0), 0 once refused.
Needs only TensorFlow, Keras and NumPy.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402
import keras  # noqa: E402

config = {"name": "rescaling", "trainable": True, "scale": 1.3064758777618408}
try:
    layer = keras.layers.Rescaling.from_config(config)
    out = layer(np.array([1.0, 2.0], dtype="float32"))
    print("accepted: offset =", layer.offset, "output", np.asarray(out))
    sys.exit(1)
except Exception as e:  # noqa: BLE001
    print("refused:", type(e).__name__, e)
    sys.exit(0)
