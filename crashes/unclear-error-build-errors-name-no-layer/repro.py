"""Keras names the layer in errors its layers raise while they run (`Exception encountered
when calling Add.call()`, `Input 0 of layer 'dense' is incompatible`), but not in errors raised
while a layer is built or its output shape computed on symbolic inputs. In a model of many
layers of one class, such a message does not say which layer is wrong.

Builds, for each of five such checks, a model with two layers of one class, of which the
second is wrong, and prints the message Keras gives. Exits 1 while some message names
neither layer, 0 once every one does.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import keras  # noqa: E402
from keras import layers  # noqa: E402


def merge():
    a, b, c = keras.Input((4,)), keras.Input((4,)), keras.Input((2,))
    first = layers.Add(name="add_ok")([a, b])
    layers.Add(name="add_wrong")([first, c])  # (4,) and (2,)


def dot():
    a, b = keras.Input((3,)), keras.Input((5,))
    layers.Dot(axes=1, name="dot_ok")([a, a])
    layers.Dot(axes=1, name="dot_wrong")([a, b])  # 3 against 5 on axis 1


def conv_output_size():
    x = keras.Input((2, 4))
    y = layers.Conv1D(4, 1, name="conv_ok")(x)
    layers.Conv1D(4, 3, name="conv_wrong")(y)  # a kernel of 3 on 2 steps


def wrapped_conv_rank():
    x = keras.Input((3, 5, 1))
    layers.TimeDistributed(layers.Conv1D(2, 2), name="td_ok")(x)
    layers.TimeDistributed(layers.Conv1D(2, 2), name="td_wrong")(keras.Input((3, 1)))  # slices of rank 1


def attention_key_value():
    q, v, k = keras.Input((2, 8)), keras.Input((1, 8)), keras.Input((2, 8))
    layers.MultiHeadAttention(1, 2, name="mha_ok")(q, v, v)
    layers.MultiHeadAttention(1, 2, name="mha_wrong")(q, v, k)  # 1 value step, 2 key steps


unnamed = 0
for check in (merge, dot, conv_output_size, wrapped_conv_rank, attention_key_value):
    try:
        check()
        print(f"{check.__name__}: no error")
        continue
    except Exception as e:
        message, kind = str(e), type(e).__name__
    named = "_wrong" in message
    unnamed += not named
    first = message.strip().splitlines()[0]
    print(f"{check.__name__}: {'names' if named else 'does not name'} the layer: {kind}: {first}")
print("expected: each message names the layer it comes from (as errors raised in call() do)")
sys.exit(1 if unnamed else 0)
