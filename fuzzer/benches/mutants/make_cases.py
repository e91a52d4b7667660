"""Write the verification case of each planted fault in faults.json: cases/<id>.case.json.

Each case is a small model that shows its fault: the planted copy of Keras (or TensorFlow)
must run it differently from the stock one (outputs or verdict), which the mutants bench
checks before it counts the fault. Models are built by the installed Keras with
keras.utils.set_random_seed(0) and inputs from numpy.random.default_rng(0); weights are
moved off their initial values (a scale of 1, a zero bias) so that no fault hides behind them.
A fault that needs an invalid model (a removed check) has its case edited after writing.

Usage: .venv/bin/python fuzzer/benches/mutants/make_cases.py [ID...]
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent / "scripts"))

import make_fixtures as fx  # noqa: E402  (sets the TF log level before importing keras)
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

OUT = HERE / "cases"
CASES = {}  # fault id -> (build function, dtype)


def case(*ids, dtype="float64"):
    def register(fn):
        for i in ids:
            CASES[i] = (fn, dtype)
        return fn

    return register


def normal(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(keras.config.floatx())


def one(layer, shape, rng, scale=1.0):
    """A model of one layer on one input of `shape` (batch 2)."""
    x = keras.Input(shape)
    return keras.Model(x, layer(x)), [normal(rng, 2, *shape, scale=scale)]


def many(layer, shapes, rng):
    xs = [keras.Input(s) for s in shapes]
    return keras.Model(xs, layer(xs)), [normal(rng, 2, *s) for s in shapes]


# activations
@case("relu-threshold-cap")
def _(rng):
    return one(layers.ReLU(threshold=2.0), (6,), rng, scale=3.0)


@case("leaky-relu-slope-cap")
def _(rng):
    return one(layers.LeakyReLU(negative_slope=0.8), (6,), rng)


@case("tf-leaky-relu-alpha-cap")
def _(rng):
    return one(layers.LeakyReLU(negative_slope=2.5), (6,), rng)


@case("elu-alpha-sign")
def _(rng):
    return one(layers.ELU(alpha=-0.7), (6,), rng)


@case("prelu-positive-cap")
def _(rng):
    return one(layers.PReLU(), (6,), rng, scale=8.0)


@case("softmax-two-axes")
def _(rng):
    return one(layers.Softmax(axis=(1, 2)), (3, 4), rng)


@case("tf-softmax-axis-rank-minus-2")
def _(rng):
    return one(layers.Softmax(axis=1), (3, 4), rng)


@case("gelu-default-approximate", dtype="float32")
def _(rng):
    return one(layers.Activation("gelu"), (6,), rng, scale=2.0)


# convolutional
@case("conv1d-causal-side")
def _(rng):
    return one(layers.Conv1D(3, 3, padding="causal"), (8, 2), rng)


@case("conv1d-causal-dilated")
def _(rng):
    return one(layers.Conv1D(3, 2, padding="causal", dilation_rate=2), (8, 2), rng)


@case("depthwise-same-pad-side")
def _(rng):
    return one(
        layers.DepthwiseConv2D(2, strides=2, dilation_rate=2, padding="same"), (6, 6, 2), rng
    )


@case("conv-transpose-same-outpad")
def _(rng):
    return one(
        layers.Conv2DTranspose(2, 2, strides=2, padding="same", output_padding=1), (3, 3, 2), rng
    )


# pooling
@case("maxpool-strides-swapped")
def _(rng):
    return one(layers.MaxPooling2D(2, strides=(1, 2)), (6, 6, 2), rng)


@case("avgpool-cf-transpose")
def _(rng):
    return one(layers.AveragePooling2D(2, data_format="channels_first"), (2, 6, 4), rng)


@case("global-max2d-cf-axes")
def _(rng):
    return one(layers.GlobalMaxPooling2D(data_format="channels_first"), (3, 4, 5), rng)


@case("global-avg3d-cf-axes", dtype="float32")
def _(rng):
    return one(layers.GlobalAveragePooling3D(data_format="channels_first"), (3, 2, 3, 4), rng)


@case("global-avg1d-mask-unzeroed")
def _(rng):
    x = keras.Input((5,), dtype="int32")
    y = layers.GlobalAveragePooling1D()(layers.Embedding(6, 3, mask_zero=True)(x))
    data = np.array([[1, 0, 2, 3, 0], [4, 5, 0, 1, 2]], dtype="int32")
    return keras.Model(x, y), [data]


@case("adaptive-gather-off-by-one")
def _(rng):
    return one(layers.AdaptiveAveragePooling2D((3, 3)), (7, 5, 2), rng)


@case("adaptive-max1d-window")
def _(rng):
    return one(layers.AdaptiveMaxPooling1D(3), (7, 2), rng)


# reshaping
@case("cropping1d-right-one")
def _(rng):
    return one(layers.Cropping1D((1, 1)), (6, 2), rng)


@case("zeropad1d-cf-swapped")
def _(rng):
    return one(layers.ZeroPadding1D((1, 2), data_format="channels_first"), (2, 4), rng)


@case("zeropad2d-hw-swapped")
def _(rng):
    return one(layers.ZeroPadding2D(((1, 1), (2, 2))), (3, 3, 2), rng)


@case("upsampling1d-size-cap")
def _(rng):
    return one(layers.UpSampling1D(4), (3, 2), rng)


@case("upsampling3d-cf-width", dtype="float32")
def _(rng):
    return one(layers.UpSampling3D((1, 2, 1), data_format="channels_first"), (2, 2, 2, 2), rng)


@case("tf-repeat-inner-axis", dtype="float32")
def _(rng):
    return one(layers.UpSampling3D((1, 2, 2)), (2, 2, 3, 2), rng)


@case("repeat-vector-cap")
def _(rng):
    return one(layers.RepeatVector(5), (3,), rng)


@case("permute-rank5-ignored")
def _(rng):
    return one(layers.Permute((2, 1, 4, 3)), (2, 3, 2, 3), rng)


@case("flatten-cf-rank3")
def _(rng):
    return one(layers.Flatten(data_format="channels_first"), (3, 4), rng)


# merging
@case("average-two-only")
def _(rng):
    return many(layers.Average(), [(4,), (4,), (4,)], rng)


@case("maximum-two-only")
def _(rng):
    return many(layers.Maximum(), [(4,), (4,), (4,)], rng)


@case("dot-normalize-axis")
def _(rng):
    return many(layers.Dot(axes=(1, 2), normalize=True), [(3, 4), (4, 3)], rng)


@case("dot-negative-axis-rank")
def _(rng):
    return many(layers.Dot(axes=(1, -2)), [(3,), (3, 4)], rng)


@case("concatenate-positive-axis")
def _(rng):
    return many(layers.Concatenate(axis=2), [(3, 2), (3, 4)], rng)


@case("subtract-rank4-swapped")
def _(rng):
    return many(layers.Subtract(), [(2, 2, 3), (2, 2, 3)], rng)


# normalization
@case("batchnorm-epsilon-cap")
def _(rng):
    return one(layers.BatchNormalization(epsilon=0.05), (5,), rng)


@case("layernorm-rms-multi-axis")
def _(rng):
    return one(layers.LayerNormalization(axis=(1, 2), rms_scaling=True), (3, 4), rng, scale=2.0)


@case("groupnorm-negative-axis")
def _(rng):
    return one(layers.GroupNormalization(groups=2, axis=-2), (4, 3), rng)


@case("unitnorm-first-axis")
def _(rng):
    return one(layers.UnitNormalization(axis=(1, 2)), (3, 4), rng)


@case("rmsnorm-last-axis")
def _(rng):
    return one(layers.RMSNormalization(axis=(1, 2)), (3, 4), rng, scale=2.0)


# core
@case("dense-rank4-flipped")
def _(rng):
    return one(layers.Dense(3), (3, 2, 4), rng)


@case("embedding-index-cap")
def _(rng):
    x = keras.Input((4,), dtype="int32")
    data = np.array([[1, 17, 20, 3], [0, 16, 19, 2]], dtype="int32")
    return keras.Model(x, layers.Embedding(24, 3)(x)), [data]


@case("masking-fill-value")
def _(rng):
    data = normal(rng, 2, 4, 3)
    data[:, 2, :] = 0.5
    x = keras.Input((4, 3))
    return keras.Model(x, layers.Masking(0.5)(x)), [data]


@case("einsum-bias-right-elided")
def _(rng):
    return one(layers.EinsumDense("ab...,bc->ac...", output_shape=3, bias_axes="c"), (4, 2), rng)


# preprocessing
@case("rescaling-scale-sign")
def _(rng):
    return one(layers.Rescaling(-2.0, offset=0.5), (5,), rng)


@case("normalization-invert-sqrt")
def _(rng):
    return one(layers.Normalization(mean=0.5, variance=4.0, invert=True), (5,), rng)


# regularization
@case("dropout-inference-high-rate")
def _(rng):
    return one(layers.Dropout(0.95), (50,), rng)


@case("gaussian-noise-inference")
def _(rng):
    return one(layers.GaussianNoise(0.9), (10,), rng)


@case("gaussian-dropout-inference")
def _(rng):
    return one(layers.GaussianDropout(0.9), (10,), rng)


@case("alpha-dropout-inference")
def _(rng):
    return one(layers.AlphaDropout(0.9), (50,), rng)


@case("spatial-dropout-inference")
def _(rng):
    return one(layers.SpatialDropout2D(0.95), (3, 3, 20), rng)


@case("spatial-dropout1d-rank-check")
def _(rng):
    return one(layers.SpatialDropout1D(0.5), (4, 3), rng)


@case("activity-regularization-l1")
def _(rng):
    return one(layers.ActivityRegularization(l1=0.08), (5,), rng)


# rnn
@case("gru-reset-before-dropped")
def _(rng):
    return one(layers.GRU(3, reset_after=False, return_sequences=True), (4, 2), rng)


@case("lstm-output-tanh")
def _(rng):
    return one(layers.LSTM(3, activation="relu", return_sequences=True), (4, 2), rng, scale=2.0)


@case("simple-rnn-tanh")
def _(rng):
    return one(layers.SimpleRNN(3, activation="relu", return_sequences=True), (4, 2), rng, scale=2.0)


@case("rnn-backwards-unrolled")
def _(rng):
    return one(layers.SimpleRNN(3, go_backwards=True, unroll=True), (4, 2), rng)


@case("bidirectional-flip-concat-only")
def _(rng):
    return one(
        layers.Bidirectional(layers.SimpleRNN(3, return_sequences=True), merge_mode="sum"),
        (4, 2),
        rng,
    )


@case("time-distributed-step-cap")
def _(rng):
    return one(layers.TimeDistributed(layers.Dense(2)), (6, 3), rng)


@case("convlstm-input-dilation")
def _(rng):
    return one(layers.ConvLSTM2D(2, 2, dilation_rate=2, padding="same"), (2, 5, 5, 1), rng)


# attention
def attention(layer, q, v, rng):
    xq, xv = keras.Input(q), keras.Input(v)
    return keras.Model([xq, xv], layer([xq, xv])), [normal(rng, 2, *q), normal(rng, 2, *v)]


@case("attention-concat-scale")
def _(rng):
    return attention(layers.Attention(use_scale=True, score_mode="concat"), (3, 4), (5, 4), rng)


@case("additive-attention-scale")
def _(rng):
    return attention(layers.AdditiveAttention(use_scale=True), (3, 4), (5, 4), rng)


def mha(layer, rng):
    xq, xv = keras.Input((5, 4)), keras.Input((5, 4))
    return keras.Model([xq, xv], layer(xq, xv)), [normal(rng, 2, 5, 4), normal(rng, 2, 5, 4)]


@case("mha-key-dim-cap")
def _(rng):
    return mha(layers.MultiHeadAttention(num_heads=2, key_dim=6), rng)


@case("mha-sliding-window-wide")
def _(rng):
    return mha(layers.MultiHeadAttention(num_heads=2, key_dim=3, sliding_window=2), rng)


@case("gqa-repeat-tiled")
def _(rng):
    return mha(
        layers.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2), rng
    )


# ---------------------------------------------------------------------------------------------


def moved(model, rng):
    """Every weight moved off its initial value, variances kept positive."""
    for layer in model.layers:
        if isinstance(layer, layers.Normalization):
            continue  # its statistics come from the config
        weights = layer.get_weights()
        if weights:
            layer.set_weights(
                [w * rng.uniform(0.5, 1.5, w.shape) + rng.uniform(0.1, 0.3, w.shape) for w in weights]
            )


def edit(name, document):
    """Cases that must be invalid: edited after they are written."""
    if name == "spatial-dropout1d-rank-check":
        # A rank-4 input: SpatialDropout1D takes rank 3 only.
        model = document["model"]
        for layer in model.get("config", model)["layers"]:
            if layer["class_name"] == "InputLayer":
                layer["config"]["batch_shape"] = [None, 2, 4, 3]
        rng = np.random.default_rng(0)
        data = rng.standard_normal((2, 2, 4, 3))
        document["inputs"] = [{"shape": [2, 2, 4, 3], "data": data.ravel().tolist()}]
    return document


def main():
    faults = json.loads((HERE / "faults.json").read_text())["faults"]
    wanted = sys.argv[1:] or [f["id"] for f in faults]
    missing = [f["id"] for f in faults if f["id"] not in CASES]
    fx.require(not missing, f"no case for {missing}")
    OUT.mkdir(exist_ok=True)
    for name in wanted:
        fn, dtype = CASES[name]

        def build(rng, fn=fn):
            model, inputs = fn(rng)
            moved(model, rng)
            return model, inputs

        model, inputs = fx.build(build, dtype)
        document, _ = fx.make_case(name, model, inputs, dtype, sidecar=False)
        document = edit(name, document)
        text = json.dumps(document, indent=1, allow_nan=False) + "\n"
        (OUT / f"{name}.case.json").write_text(text)
        print(f"{name:36} {dtype}")


if __name__ == "__main__":
    main()
