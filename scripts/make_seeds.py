"""Regenerate the seed corpus in seeds/: starting points for the fuzz loop.

Two kinds of seed, each one test case in the `semfuzz-case/1` format:

- `app-<arch>-<n>`: a small piece of a real architecture from `keras.applications`, built with
  weights=None and a small input, cut to a sub-graph that is itself a functional model
  (`keras.Model(tensor, tensor)` between named layers of the application). The cuts keep the
  application's own structure (residual Add, Concatenate, depthwise and separable
  convolutions, BatchNormalization, ZeroPadding2D, squeeze-excite Multiply, ...) and stop
  before classes the reference oracle has no semantics for (Rescaling, Normalization,
  Dropout, LayerScale).
- `hand-<what>`: small hand-made models for layers and wirings the random generator rarely
  puts together (multi-input/multi-output merges, 1D and 3D stacks, reshaping, resampling).

Every seed is deterministic: Keras' initialisers run under keras.utils.set_random_seed(0), the
inputs come from numpy.random.default_rng(0), and each seed is written with its arrays inline
(no sidecar). A seed stays small: weights plus inputs under MAX_ELEMENTS numbers.

Before anything is written into seeds/, every case is written to a scratch directory, read
back, rebuilt with from_config and run; its outputs must equal the original model's bit for
bit (the self-check of scripts/make_fixtures.py, whose encoding helpers this script uses).

Usage: .venv/bin/python scripts/make_seeds.py
"""

import json
import pathlib
import re
import shutil
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import make_fixtures as fx  # noqa: E402  (sets the TF log level before importing keras)
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

OUT = fx.ROOT / "seeds"
MAX_ELEMENTS = 60_000  # weights + inputs per seed

SEEDS = {}  # seed name -> (build function, case dtype)


def seed(name, dtype):
    """Register a builder `fn(rng) -> (model, inputs)` as the seed `name`."""

    def register(fn):
        SEEDS[name] = (fn, dtype)
        return fn

    return register


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(keras.config.floatx())


def cut(model, last, first=None, name=None):
    """The sub-graph of `model` from the outputs of the layers named `first` (default: the
    model's inputs) to the outputs of the layers named `last`, as a functional model."""
    if first is None:
        inputs = model.inputs
    else:
        inputs = [model.get_layer(n).output for n in first]
    outputs = [model.get_layer(n).output for n in last]
    return keras.Model(
        inputs[0] if len(inputs) == 1 else inputs,
        outputs[0] if len(outputs) == 1 else outputs,
        name=name,
    )


def with_input_shapes(model, shapes):
    """`model` rebuilt for other input shapes (batch excluded), with the same weights.

    For applications whose minimum input size makes even the first block too large: the
    weights do not depend on the spatial size, so the cut is rebuilt for a smaller input.
    """
    config = model.get_config()
    by_name = {entry["name"]: entry for entry in config["layers"]}
    triples = config["input_layers"]
    if isinstance(triples[0], str):  # one input: Keras writes its triple unwrapped
        triples = [triples]
    names = [triple[0] for triple in triples]
    for name, shape in zip(names, shapes, strict=True):
        by_name[name]["config"]["batch_shape"] = [None, *shape]
    rebuilt = keras.Model.from_config(config)
    for layer in rebuilt.layers:
        layer.set_weights(model.get_layer(layer.name).get_weights())
    return rebuilt


def inputs_for(model, rng, batch):
    return [normal(rng, batch, *tensor.shape[1:]) for tensor in model.inputs]


def app(constructor, shape, last, first=None, batch=1, resize=None, **kwargs):
    """A seed builder: `constructor` at input `shape`, cut between `first` and `last`."""

    def build(rng):
        full = constructor(input_shape=shape, include_top=False, weights=None, **kwargs)
        model = cut(full, last, first, name=f"{full.name}_cut")
        if resize is not None:
            model = with_input_shapes(model, resize)
        return model, inputs_for(model, rng, batch)

    return build


# ---------------------------------------------------------------------------------------------
# Pieces of keras.applications. Float64 wherever no known TensorFlow float64 bug is in the way.

A = keras.applications

# Stem and three depthwise-separable blocks: DepthwiseConv2D, BatchNormalization, ReLU(6),
# ZeroPadding2D before the strided depthwise convolutions.
seed("app-mobilenet-1", "float64")(
    app(A.MobileNet, (32, 32, 3), ["conv_pw_4_relu"], alpha=0.25, batch=2)
)

# Inverted residuals up to the first residual Add.
seed("app-mobilenetv2-1", "float32")(
    app(A.MobileNetV2, (32, 32, 3), ["block_2_add"], alpha=0.35, batch=2)
)
# Later blocks, from a 4x4 feature map: two Adds in a row (block 5 adds to block 4's sum).
seed("app-mobilenetv2-2", "float64")(
    app(A.MobileNetV2, (32, 32, 3), ["block_5_add"], ["block_3_project_BN"], alpha=0.35)
)

# Hard-swish as operation nodes (x * ReLU(6)(x + 3) / 6), squeeze-excite with
# GlobalAveragePooling2D(keepdims) and Multiply, and a residual Add.
seed("app-mobilenetv3small-1", "float32")(
    app(
        A.MobileNetV3Small,
        (32, 32, 3),
        ["expanded_conv_2_add"],
        alpha=0.75,
        include_preprocessing=False,
    )
)

# The stem (7x7/2 convolution, ZeroPadding2D, max pooling) and the first bottleneck.
seed("app-resnet50-1", "float64")(
    app(A.ResNet50, (32, 32, 3), ["conv2_block1_1_relu"], batch=2)
)
# The first bottleneck's tail: projection shortcut and residual branch meeting in Add.
seed("app-resnet50-2", "float64")(
    app(
        A.ResNet50,
        (32, 32, 3),
        ["conv2_block1_out"],
        ["pool1_pool", "conv2_block1_2_relu"],
    )
)

# Pre-activation: BatchNormalization and relu before the convolutions, Add without relu.
seed("app-resnet50v2-1", "float32")(
    app(
        A.ResNet50V2,
        (32, 32, 3),
        ["conv2_block1_out"],
        ["pool1_pool", "conv2_block1_2_conv"],
    )
)

# A dense block's layer: BatchNormalization, relu, 1x1 and 3x3 convolutions, Concatenate.
seed("app-densenet121-1", "float64")(
    app(A.DenseNet121, (32, 32, 3), ["conv2_block1_concat"], ["pool1"])
)

# The first block: two 3x3 convolutions and max pooling.
seed("app-vgg16-1", "float64")(app(A.VGG16, (32, 32, 3), ["block1_pool"]))

# Entry flow to the first residual Add: SeparableConv2D, strided 1x1 shortcut, max pooling.
# Xception needs a 71x71 input; the cut is rebuilt for 33x33.
seed("app-xception-1", "float64")(
    app(A.Xception, (71, 71, 3), ["add"], resize=[(33, 33, 3)])
)

# NASNet's first reduction cell: 5x5 and 7x7 SeparableConv2D, ZeroPadding2D, Add, average
# and max pooling, Concatenate.
seed("app-nasnetmobile-1", "float64")(
    app(A.NASNetMobile, (32, 32, 3), ["reduction_concat_stem_1"])
)
# The second reduction cell with its "adjust" block (Cropping2D, strided average pooling,
# Concatenate of two shifted paths), from the stem's two outputs.
seed("app-nasnetmobile-2", "float64")(
    app(
        A.NASNetMobile,
        (32, 32, 3),
        ["reduction_concat_stem_2"],
        ["stem_bn1", "reduction_concat_stem_1"],
    )
)

# From the input normalisation (not supported by the reference) on: the stem, swish, and
# the first MBConv block with squeeze-excite (GlobalAveragePooling2D, Reshape, Multiply).
seed("app-efficientnetb0-1", "float64")(
    app(A.EfficientNetB0, (32, 32, 3), ["block1a_project_bn"], ["normalization"])
)
# An expanded MBConv block with a strided depthwise convolution and ZeroPadding2D.
seed("app-efficientnetb0-2", "float32")(
    app(A.EfficientNetB0, (32, 32, 3), ["block2a_project_bn"], ["block1a_project_bn"])
)

# ConvNeXt's block up to the gelu: grouped 7x7 Conv2D, LayerNormalization, Dense.
seed("app-convnexttiny-1", "float32")(
    app(
        A.ConvNeXtTiny,
        (32, 32, 3),
        ["convnext_tiny_stage_0_block_0_gelu"],
        ["convnext_tiny_stem"],
    )
)


# ---------------------------------------------------------------------------------------------
# Hand-made models.


@seed("hand-mlp", "float64")
def mlp(rng):
    x = keras.Input((12,))
    h = layers.Dense(16)(x)
    h = layers.LayerNormalization()(h)
    h = layers.Dense(16, activation="tanh")(h)
    h = layers.LayerNormalization(center=False, epsilon=1e-3)(h)
    h = layers.Dense(8, activation="elu")(h)
    y = layers.Dense(5, activation="softmax")(h)
    return keras.Model(x, y), [normal(rng, 4, 12)]


@seed("hand-conv1d", "float64")
def conv1d(rng):
    x = keras.Input((24, 3))
    h = layers.Conv1D(8, 5, padding="causal", dilation_rate=2, activation="relu")(x)
    h = layers.MaxPooling1D(2)(h)
    h = layers.SeparableConv1D(8, 3, padding="same", depth_multiplier=2)(h)
    h = layers.BatchNormalization()(h)
    h = layers.AveragePooling1D(3, strides=2, padding="same")(h)
    h = layers.Conv1D(6, 3, strides=2, groups=2, activation="sigmoid")(h)
    y = layers.GlobalMaxPooling1D()(h)
    return keras.Model(x, y), [normal(rng, 2, 24, 3)]


@seed("hand-conv3d", "float32")  # MaxPool3D has no float64 kernel
def conv3d(rng):
    x = keras.Input((6, 8, 8, 2))
    h = layers.ZeroPadding3D((0, 1, 1))(x)
    h = layers.Conv3D(4, 3, activation="relu")(h)
    h = layers.BatchNormalization()(h)
    h = layers.MaxPooling3D((1, 2, 2))(h)
    h = layers.Conv3D(6, (2, 2, 2), padding="same", dilation_rate=(1, 2, 2))(h)
    h = layers.AveragePooling3D(2, padding="same")(h)
    h = layers.UpSampling3D((1, 2, 2))(h)
    y = layers.GlobalAveragePooling3D()(h)
    return keras.Model(x, y), [normal(rng, 2, 6, 8, 8, 2)]


@seed("hand-multi-io", "float64")
def multi_io(rng):
    a = keras.Input((6,), name="a")
    b = keras.Input((6,), name="b")
    c = keras.Input((3, 4), name="c")
    pa = layers.Dense(6)(a)
    difference = layers.Subtract()([pa, b])
    joined = layers.Concatenate()([difference, a, b])
    similarity = layers.Dot(axes=1, normalize=True)([pa, b])
    extremes = layers.Concatenate(axis=1)(
        [layers.Maximum()([a, b]), layers.Minimum()([a, b]), layers.Average()([a, pa])]
    )
    sequence = layers.Dense(4)(c)
    attention = layers.Dot(axes=(2, 2))([sequence, c])
    weights = layers.Softmax(axis=-1)(attention)
    mixed = layers.Dot(axes=(2, 1))([weights, c])
    outputs = [layers.Dense(3)(joined), similarity, extremes, mixed]
    inputs = [normal(rng, 2, 6), normal(rng, 2, 6), normal(rng, 2, 3, 4)]
    return keras.Model([a, b, c], outputs), inputs


@seed("hand-reshape", "float64")
def reshape(rng):
    x = keras.Input((4, 6, 2))
    h = layers.Permute((3, 1, 2))(x)
    h = layers.Reshape((2, 24))(h)
    h = layers.Dense(5)(h)
    h = layers.Flatten()(h)
    h = layers.RepeatVector(3)(h)
    h = layers.Reshape((3, 2, 5))(h)
    h = layers.Permute((2, 1, 3))(h)
    h = layers.Conv2D(4, 2, padding="same")(h)
    y = layers.Flatten(data_format="channels_first")(h)
    return keras.Model(x, y), [normal(rng, 2, 4, 6, 2)]


@seed("hand-resample", "float32")
def resample(rng):
    x = keras.Input((6, 6, 3))
    near = layers.UpSampling2D(2)(x)
    bilinear = layers.UpSampling2D((2, 3), interpolation="bilinear")(x)
    bilinear = layers.Cropping2D(((0, 0), (3, 3)))(bilinear)
    h = layers.Concatenate()([near, bilinear])
    h = layers.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu")(h)
    h = layers.Cropping2D(((2, 1), (1, 2)))(h)
    h = layers.ZeroPadding2D(((1, 0), (0, 1)))(h)
    h = layers.MaxPooling2D(3, strides=2)(h)
    seq = layers.Reshape((-1, 4))(h)
    seq = layers.UpSampling1D(2)(seq)
    seq = layers.Cropping1D((1, 2))(seq)
    seq = layers.ZeroPadding1D(1)(seq)
    y = layers.Conv1DTranspose(2, 3, strides=2)(seq)
    return keras.Model(x, y), [normal(rng, 1, 6, 6, 3)]


@seed("hand-channels-first", "float64")
def channels_first(rng):
    # TensorFlow's CPU kernels for convolution and pooling take only channels_last; the
    # layers here handle channels_first themselves.
    x = keras.Input((6, 6, 3))
    h = layers.Permute((3, 1, 2))(x)
    h = layers.ZeroPadding2D(((1, 0), (2, 1)), data_format="channels_first")(h)
    h = layers.BatchNormalization(axis=1)(h)
    h = layers.PReLU(shared_axes=(2, 3))(h)
    h = layers.UpSampling2D(2, data_format="channels_first")(h)
    h = layers.Cropping2D(((1, 2), (3, 0)), data_format="channels_first")(h)
    g = layers.GlobalAveragePooling2D(data_format="channels_first")(h)
    m = layers.GlobalMaxPooling2D(data_format="channels_first", keepdims=True)(h)
    y = layers.Multiply()([h, m])
    y = layers.Flatten(data_format="channels_first")(y)
    return keras.Model(x, [g, layers.Dense(4)(y)]), [normal(rng, 2, 6, 6, 3)]


@seed("hand-norms-activations", "float64")
def norms_activations(rng):
    x = keras.Input((8, 8))
    h = layers.GroupNormalization(groups=4)(x)
    h = layers.LeakyReLU(negative_slope=0.2)(h)
    h = layers.DepthwiseConv1D(3, depth_multiplier=2, padding="same")(h)
    h = layers.UnitNormalization(axis=-1)(h)
    h = layers.ELU(alpha=0.5)(h)
    h = layers.Dense(8, activation="selu")(h)
    h = layers.ReLU(negative_slope=0.1, threshold=0.5)(h)
    h = layers.Activation("mish")(h)
    s = layers.Softmax(axis=1)(h)
    y = layers.GlobalAveragePooling1D(data_format="channels_first")(s)
    return keras.Model(x, y), [normal(rng, 2, 8, 8)]


@seed("hand-operation-nodes", "float32")
def operation_nodes(rng):
    x = keras.Input((5, 5, 4))
    h = layers.Conv2D(8, 3, padding="same")(x)
    h = h * layers.ReLU(6.0)(h + 3.0) * (1.0 / 6.0)  # hard-swish, as MobileNetV3 writes it
    gate = layers.GlobalAveragePooling2D(keepdims=True)(h)
    gate = layers.Conv2D(8, 1, activation="hard_sigmoid")(gate)
    h = layers.Multiply()([h, gate])
    h = (h - 0.5) / 2.0
    y = layers.Add()([layers.Conv2D(8, 1)(x), h])
    return keras.Model(x, y), [normal(rng, 2, 5, 5, 4)]


# ---------------------------------------------------------------------------------------------


def write_seed(directory, name, document):
    """Like make_fixtures.write_case, but each array's numbers on one line: the config stays
    readable and the file a quarter smaller."""
    arrays = [*document["inputs"], *(e for es in document["weights"].values() for e in es)]
    numbers = []
    for entry in arrays:
        numbers.append(json.dumps(entry["data"], separators=(",", ":"), allow_nan=False))
        entry["data"] = f"@{len(numbers) - 1}@"
    text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    text = re.sub(r'"@(\d+)@"', lambda match: numbers[int(match.group(1))], text)
    (directory / f"{name}.case.json").write_text(text)


def size(model, inputs):
    weights = sum(int(np.prod(w.shape)) for w in model.weights)
    return weights + sum(array.size for array in inputs)


def main():
    with tempfile.TemporaryDirectory() as scratch:
        staging = pathlib.Path(scratch)
        for name, (fn, dtype) in SEEDS.items():
            model, inputs = fx.build(fn, dtype)
            elements = size(model, inputs)
            fx.require(elements <= MAX_ELEMENTS, f"{name}: {elements} numbers")
            document, _ = fx.make_case(name, model, inputs, dtype, sidecar=False)
            write_seed(staging, name, document)
            fx.check(staging / f"{name}.case.json", model, inputs, fx.run(model, inputs))
            print(f"{name:28} {dtype}  layers {len(model.layers):4}  numbers {elements:6}  OK")
        OUT.mkdir(exist_ok=True)
        for path in OUT.glob("*.case.json"):
            path.unlink()
        for path in sorted(staging.iterdir()):
            shutil.copyfile(path, OUT / path.name)
    print(f"wrote {len(SEEDS)} seeds to {OUT.relative_to(fx.ROOT)}")


if __name__ == "__main__":
    main()
