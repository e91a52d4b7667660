"""Regenerate the Keras fixtures in oracle/tests/fixtures/keras/.

Each fixture is one test case in the `semfuzz-case/1` format, made by real Keras: the model's
get_config(), the weights of every top-level layer, and the model inputs. Large models keep their
weights in an uncompressed .npz sidecar next to the case file.

Before anything is written into the fixture directory, every case is written to a scratch
directory, read back, rebuilt with from_config, given the weights read back, and run on the
inputs read back; its outputs must equal the original model's bit for bit (NaN equal to NaN).

Usage: .venv/bin/python scripts/make_fixtures.py
"""

import contextlib
import io
import json
import math
import os
import pathlib
import shutil
import tempfile
import zipfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers, ops  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "oracle" / "tests" / "fixtures" / "keras"
FORMAT = "semfuzz-case/1"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed zip entry timestamps, so reruns are byte-identical

BUILDERS = {}  # case name -> (build function, case dtype, weights in a sidecar)


def case(dtype="float32", sidecar=False):
    """Register a builder `fn(rng) -> (model, inputs)` under the function's name."""

    def register(fn):
        BUILDERS[fn.__name__] = (fn, dtype, sidecar)
        return fn

    return register


def normal(rng, *shape, dtype="float32"):
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# The models. Each builder runs under its case dtype (see `dtype_scope`).


@case()
def dense_chain(rng):
    x = keras.Input((4,))
    h = layers.Dense(3)(x)
    h = layers.Activation("tanh")(h)
    y = layers.Dense(2)(h)
    return keras.Model(x, y), [normal(rng, 2, 4)]


@case()
def multi_io(rng):
    a = keras.Input((3,))
    b = keras.Input((2,))
    joined = layers.Concatenate()([a, b])
    first = layers.Dense(2)(joined)
    second = layers.Dense(1, activation="sigmoid")(joined)
    return keras.Model([a, b], [first, second]), [normal(rng, 2, 3), normal(rng, 2, 2)]


@case(dtype="float64")
def fan_out(rng):
    x = keras.Input((4,))
    h = layers.Dense(4)(x)
    linear = layers.Dense(3)(h)
    relu = layers.Dense(3, activation="relu")(h)
    tanh = layers.Dense(3, activation="tanh")(h)
    total = layers.Add()([linear, relu, tanh])
    y = layers.Multiply()([total, linear])
    return keras.Model(x, y), [normal(rng, 2, 4, dtype="float64")]


@case()
def shared_layer(rng):
    a = keras.Input((3,))
    b = keras.Input((3,))
    shared = layers.Dense(2)
    from_a = shared(a)
    from_b = shared(b)  # node index 1 of `shared`
    joined = layers.Concatenate()([from_a, from_b])
    model = keras.Model([a, b], [joined, from_b])
    return model, [normal(rng, 2, 3), normal(rng, 2, 3)]


@case()
def nested_functional(rng):
    inner_x = keras.Input((4,))
    inner_h = layers.Dense(3, activation="relu")(inner_x)
    inner = keras.Model(inner_x, layers.Dense(2)(inner_h), name="inner")
    a = keras.Input((4,))
    b = keras.Input((4,))
    y = layers.Average()([inner(a), inner(b)])
    return keras.Model([a, b], y), [normal(rng, 2, 4), normal(rng, 2, 4)]


@case()
def nested_functional_output(rng):
    # The model's outputs are the nested model's own: Keras numbers those calls from 1 in
    # output_layers (its first node is the one it was built with).
    inner_x = keras.Input((4,))
    inner = keras.Model(inner_x, layers.Dense(2)(inner_x), name="inner")
    a = keras.Input((4,))
    b = keras.Input((4,))
    return keras.Model([a, b], [inner(a), inner(b)]), [normal(rng, 2, 4), normal(rng, 2, 4)]


@case()
def nested_sequential(rng):
    head = keras.Sequential(
        [keras.Input((4,)), layers.Dense(3, activation="relu"), layers.Dense(2)], name="head"
    )
    x = keras.Input((5,))
    h = layers.Dense(4)(x)
    return keras.Model(x, head(h)), [normal(rng, 2, 5)]


@case()
def sequential_top(rng):
    model = keras.Sequential(
        [
            keras.Input((4, 4, 2)),
            layers.Conv2D(4, 3, strides=2, padding="same", activation="relu"),
            layers.Conv2D(3, 2, padding="same", data_format="channels_first"),
            layers.Flatten(),
            layers.Dense(3),
        ]
    )
    return model, [normal(rng, 2, 4, 4, 2)]


@case()
def operation_nodes(rng):
    x = keras.Input((4,))
    y = keras.Input((4,))
    outputs = [
        x + 3.0,
        x * y,
        y / 6.0,
        x - y,
        1.0 - x,
        x * ops.relu6(x + 3.0) / 6.0,  # MobileNetV3's hard-swish, through keras.ops
        y * layers.ReLU(6.0)(y + 3.0) * (1.0 / 6.0),  # the same through a ReLU layer
    ]
    return keras.Model([x, y], outputs), [normal(rng, 2, 4), normal(rng, 2, 4)]


@case()
def call_kwargs(rng):
    seq = keras.Input((3, 4))
    state_source = keras.Input((2,))
    h = layers.Dense(3)(state_source)
    c = layers.Dense(3)(state_source)
    dropped = layers.Dropout(0.5)(seq, training=False)
    lstm = layers.LSTM(3)(dropped, initial_state=[h, c])
    attention = layers.MultiHeadAttention(num_heads=2, key_dim=2)(seq, seq, use_causal_mask=True)
    keep = ops.greater(ops.sum(seq, axis=-1), 0.0)
    explicit = layers.GRU(2)(attention, mask=keep)
    # Keras records Masking's implicit mask as op nodes feeding an explicit `mask` kwarg.
    implicit = layers.GRU(2)(layers.Masking(0.0)(seq))
    seq_data = normal(rng, 2, 3, 4)
    seq_data[1, 2] = 0.0  # a fully masked last step
    model = keras.Model([seq, state_source], [lstm, explicit, implicit])
    return model, [seq_data, normal(rng, 2, 2)]


@case()
def embedding_int_input(rng):
    ids = keras.Input((5,), dtype="int32")
    h = layers.Embedding(10, 3, mask_zero=True)(ids)
    h = layers.GRU(4)(h)
    y = layers.Dense(2)(h)
    return keras.Model(ids, y), [np.array([[1, 2, 3, 0, 0], [9, 0, 4, 5, 0]], dtype="int32")]


@case()
def multi_output_layer(rng):
    seq = keras.Input((3, 2))
    sequence, h, c = layers.LSTM(4, return_sequences=True, return_state=True)(seq)
    y = layers.Dense(2)(layers.Concatenate()([h, c]))
    return keras.Model(seq, [sequence, y, c]), [normal(rng, 2, 3, 2)]


@case(dtype="float64")
def special_values(rng):
    x = keras.Input((4,))
    data = np.array(
        [
            [math.nan, math.inf, -math.inf, 1e-308],
            [5e-324, 1.7976931348623157e308, -0.0, 0.1],
        ]
    )
    return keras.Model(x, [layers.ReLU()(x), layers.Identity()(x)]), [data]


@case()
def dict_inputs(rng):
    # Keys (which Keras wants equal to the input names) not in sorted order: Keras flattens a
    # dict by sorted key, so model.inputs, and the case's inputs, are [features, tokens].
    tokens = keras.Input((4,), name="tokens")
    features = keras.Input((2,), name="features")
    z = layers.Dense(2, name="z_dense")(tokens)
    y = layers.Dense(3, name="y_dense")(layers.Concatenate()([tokens, features]))
    model = keras.Model({"tokens": tokens, "features": features}, {"z": z, "y": y})
    return model, [normal(rng, 2, 2), normal(rng, 2, 4)]


def application(constructor, rng, **kwargs):
    model = constructor(input_shape=(32, 32, 3), include_top=False, weights=None, **kwargs)
    return model, [normal(rng, 1, 32, 32, 3)]


@case(sidecar=True)
def app_mobilenet(rng):
    return application(keras.applications.MobileNet, rng, alpha=0.25)


@case(sidecar=True)
def app_mobilenet_v2(rng):
    return application(keras.applications.MobileNetV2, rng, alpha=0.35)


@case(sidecar=True)
def app_mobilenet_v3_small(rng):
    return application(
        keras.applications.MobileNetV3Small, rng, alpha=0.75, include_preprocessing=True
    )


# ---------------------------------------------------------------------------------------------
# Encoding and decoding the case format.


@contextlib.contextmanager
def dtype_scope(dtype):
    """Build under `dtype`: layers get it as their dtype policy, Inputs as their default dtype."""
    keras.config.set_floatx(dtype)
    keras.config.set_dtype_policy(dtype)
    try:
        yield
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")


def encode_scalar(value):
    """JSON has no NaN or infinities: the case format writes them as "nan", "inf", "-inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def encode_array(array, case_dtype):
    entry = {"shape": list(array.shape)}
    if str(array.dtype) != case_dtype:
        entry["dtype"] = str(array.dtype)
    entry["data"] = [encode_scalar(v) for v in array.ravel().tolist()]
    return entry


def decode_array(entry, case_dtype, sidecar):
    if "npz" in entry:
        array = sidecar[entry["npz"]]
    else:
        data = [float(v) if isinstance(v, str) else v for v in entry["data"]]
        array = np.array(data, dtype=entry.get("dtype", case_dtype))
    return array.reshape(entry["shape"])


def make_case(name, model, inputs, dtype, sidecar):
    """The case document for `model`, and the sidecar arrays it refers to (empty if inline)."""
    weights, arrays = {}, {}
    for layer in model.layers:
        entries = []
        for index, array in enumerate(layer.get_weights()):
            array = array.astype(dtype)
            if sidecar:
                key = f"weights/{layer.name}/{index}"
                arrays[key] = array
                entries.append({"shape": list(array.shape), "npz": key})
            else:
                entries.append(encode_array(array, dtype))
        if entries:
            weights[layer.name] = entries
    document = {"format": FORMAT, "keras_version": keras.__version__, "dtype": dtype}
    if sidecar:
        document["npz"] = f"{name}.npz"
    document["model"] = model.get_config()
    document["weights"] = weights
    document["inputs"] = [encode_array(array, dtype) for array in inputs]
    return document, arrays


def save_npz(path, arrays):
    """numpy.savez (uncompressed), with the zip entries' timestamps pinned to ZIP_TIME."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            target.writestr(zipfile.ZipInfo(info.filename, ZIP_TIME), source.read(info))


def write_case(directory, name, document, arrays):
    text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    (directory / f"{name}.case.json").write_text(text)
    if arrays:
        save_npz(directory / document["npz"], arrays)


def read_case(path):
    """The case's model config, its weights by layer name, and its inputs, as read from disk."""
    document = json.loads(path.read_text())
    require(document["format"] == FORMAT, f"{path.name}: unknown format")
    dtype = document["dtype"]
    sidecar = np.load(path.parent / document["npz"]) if "npz" in document else {}
    weights = {
        layer: [decode_array(entry, dtype, sidecar) for entry in entries]
        for layer, entries in document["weights"].items()
    }
    inputs = [decode_array(entry, dtype, sidecar) for entry in document["inputs"]]
    return document["model"], weights, inputs


# ---------------------------------------------------------------------------------------------
# Running and checking.


def require(condition, message):
    if not condition:
        raise SystemExit(f"self-check failed: {message}")


def same(want, got):
    return want.dtype == got.dtype and np.array_equal(want, got, equal_nan=True)


def run(model, inputs):
    """The model's outputs on `inputs` (listed in model.inputs order), flattened to numpy."""
    if isinstance(model, keras.Sequential):
        (structured,) = inputs
    else:
        structured = keras.tree.pack_sequence_as(model.input, inputs)
    outputs = model(structured, training=False)
    return [ops.convert_to_numpy(output) for output in keras.tree.flatten(outputs)]


def check(path, model, inputs, expected):
    """Rebuild the case at `path` from disk and assert it reproduces `expected` exactly."""
    config, weights, read_inputs = read_case(path)
    require(all(map(same, inputs, read_inputs)), f"{path.name}: inputs differ")
    cls = keras.Sequential if isinstance(model, keras.Sequential) else keras.Model
    rebuilt = cls.from_config(config)
    for layer in rebuilt.layers:
        layer.set_weights(weights.get(layer.name, []))
    actual = run(rebuilt, read_inputs)
    require(len(actual) == len(expected), f"{path.name}: output count differs")
    require(all(map(same, expected, actual)), f"{path.name}: outputs differ")


def build(fn, dtype):
    keras.backend.clear_session()  # restart layer-name counters: dense, dense_1, ...
    keras.utils.set_random_seed(0)
    with dtype_scope(dtype):
        return fn(np.random.default_rng(0))


def main():
    with tempfile.TemporaryDirectory() as scratch:
        staging = pathlib.Path(scratch)
        for name, (fn, dtype, sidecar) in BUILDERS.items():
            model, inputs = build(fn, dtype)
            document, arrays = make_case(name, model, inputs, dtype, sidecar)
            write_case(staging, name, document, arrays)
            check(staging / f"{name}.case.json", model, inputs, run(model, inputs))
            print(
                f"{name:24} layers {len(model.layers):4}  params {model.count_params():7}  OK"
            )
        OUT.mkdir(parents=True, exist_ok=True)
        for path in sorted(staging.iterdir()):
            shutil.copyfile(path, OUT / path.name)
    print(f"wrote {len(BUILDERS)} cases to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
