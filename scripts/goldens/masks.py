"""Golden cases for Embedding and for masks through small models: the masks
`Embedding(mask_zero=True)` makes, kept, combined or dropped by the layers after it, and
read by Softmax, GlobalAveragePooling1D and BatchNormalization. See common.py."""

import numpy as np
from common import invalid, valid, valid_model, write_all
import keras
from keras import layers

IDS = np.array([[1, 0, 3, 2], [0, 0, 4, 1], [2, 3, 0, 0]], dtype="int32")
IDS2 = np.array([[0, 1, 1, 3], [2, 0, 0, 4], [1, 1, 1, 0]], dtype="int32")


def seq(*after, ids=IDS, mask_zero=True, dim=4):
    """Input(int) -> Embedding(mask_zero) -> layers in `after`."""
    def build():
        i = keras.Input((ids.shape[1],), dtype="int32")
        x = layers.Embedding(5, dim, mask_zero=mask_zero)(i)
        for make in after:
            x = make()(x)
        return keras.Model(i, x)
    return build


valid_model("embedding", seq(), [IDS])
valid_model("embedding_negative_index", seq(mask_zero=False), [np.array([[-1, -5, 4, 0]], dtype="int32")])
valid("embedding_float_indices", lambda: layers.Embedding(6, 3), [(2, 5)], dist="integers")
invalid("embedding_zero_output_dim", lambda: layers.Embedding(4, 2), [(2, 3)], {"output_dim": 0})
# The mask is kept by Dense and LayerNormalization and read by Softmax: (3, 4) broadcasts
# to (3, 4, 4) only because the batch equals the steps and the units equal the steps.
valid_model("mask_dense_softmax", seq(lambda: layers.Dense(4), lambda: layers.Softmax(), ids=IDS[:, :4][:3]),
            [np.array([[1, 0, 3, 2], [0, 0, 4, 1], [2, 3, 0, 0], [4, 4, 4, 0]], dtype="int32")])
valid_model("mask_layernorm_gap1d", seq(lambda: layers.LayerNormalization(), lambda: layers.GlobalAveragePooling1D()), [IDS])
valid_model("mask_gap1d_keepdims", seq(lambda: layers.GlobalAveragePooling1D(keepdims=True)), [IDS])
valid_model("mask_gap1d_all_masked", seq(lambda: layers.GlobalAveragePooling1D()),
            [np.array([[0, 0, 0, 0], [1, 2, 0, 0]], dtype="int32")])
valid_model("mask_dropped_by_conv", seq(lambda: layers.Conv1D(4, 1), lambda: layers.GlobalAveragePooling1D()), [IDS])
valid_model("mask_batchnorm", seq(lambda: layers.BatchNormalization(), lambda: layers.GlobalAveragePooling1D()), [IDS])


def two(merge):
    def build():
        a = keras.Input((4,), dtype="int32")
        b = keras.Input((4,), dtype="int32")
        x = layers.Embedding(5, 4, mask_zero=True)(a)
        y = layers.Embedding(5, 4, mask_zero=True)(b)
        m = merge()([x, y])
        return keras.Model([a, b], layers.GlobalAveragePooling1D()(m))
    return build


def one_masked(merge):
    def build():
        a = keras.Input((4,), dtype="int32")
        b = keras.Input((4, 4))
        x = layers.Embedding(5, 4, mask_zero=True)(a)
        m = merge()([x, b])
        return keras.Model([a, b], layers.GlobalAveragePooling1D()(m))
    return build


FLOATS = np.random.default_rng(3).standard_normal((3, 4, 4))
for name, merge in [("add", layers.Add), ("multiply", layers.Multiply), ("maximum", layers.Maximum),
                    ("average", layers.Average), ("subtract", layers.Subtract)]:
    valid_model(f"mask_merge_{name}", two(merge), [IDS, IDS2])
valid_model("mask_merge_add_one_masked", one_masked(layers.Add), [IDS, FLOATS])
# Concatenate's mask is written as ExpandDims/ZerosLike/OnesLike/LogicalOr/Concatenate/Any
# operation nodes: along the steps, along the features, with one input unmasked.
valid_model("mask_concatenate_steps", two(lambda: layers.Concatenate(axis=1)), [IDS, IDS2])
valid_model("mask_concatenate_features", two(lambda: layers.Concatenate()), [IDS, IDS2])
valid_model("mask_concatenate_one_masked", one_masked(lambda: layers.Concatenate(axis=-1)), [IDS, FLOATS])
valid_model("mask_concatenate_one_masked_steps", one_masked(lambda: layers.Concatenate(axis=1)), [IDS, FLOATS])


def three_concatenated():
    """Three inputs, the unmasked one in the middle, then an LSTM that reads the mask."""
    a = keras.Input((4,), dtype="int32")
    b = keras.Input((4, 4))
    c = keras.Input((4,), dtype="int32")
    x = layers.Embedding(5, 4, mask_zero=True)(a)
    y = layers.Embedding(5, 4, mask_zero=True)(c)
    m = layers.Concatenate(axis=1)([x, b, y])
    return keras.Model([a, b, c], layers.LSTM(3)(m))


valid_model("mask_concatenate_three_lstm", three_concatenated, [IDS, FLOATS, IDS2])



def nested_embedding():
    """A nested model whose Embedding(mask_zero) output mask leaves the nested model and is
    read by an LSTM and a GlobalAveragePooling1D outside it."""
    i = keras.Input((4,), dtype="int32")
    inner = keras.Model(i, layers.Embedding(5, 4, mask_zero=True)(i), name="inner")
    o = keras.Input((4,), dtype="int32")
    x = inner(o)
    return keras.Model(o, [layers.LSTM(3)(x), layers.GlobalAveragePooling1D()(x)])


valid_model("mask_from_nested_model", nested_embedding, [IDS])

write_all("masks")
