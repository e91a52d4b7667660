"""Shared machinery for the golden cases of the reference oracle.

Each family script (scripts/goldens/<family>.py) describes cases with `valid(...)` and
`invalid(...)` and ends with `write_all("<family>")`. A valid case is a functional model
around one layer, run by real Keras in float64 on fixed-seed inputs; its outputs are the
golden values. An invalid case is a valid one with some layer arguments patched; Keras's
reaction (the exception it raises, or that it accepts the model) is recorded.

Files, under oracle/tests/golden/<family>/:
  <name>.case.json      the case (format semfuzz-case/1)
  <name>.expected.json  {"outputs": [...]} for a valid case, or
                        {"error": {"type", "message"}} / {"keras_accepts": true} for an invalid one

Run from the repository root: .venv/bin/python scripts/goldens/<family>.py
"""

import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import keras  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
_CASES = []


def _encode(x):
    x = float(x)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def tensor(a, dtype=None):
    a = np.asarray(a)
    t = {"shape": list(a.shape)}
    if dtype is not None:
        t["dtype"] = dtype
    if a.dtype.kind in "iu":
        t["data"] = [int(v) for v in a.reshape(-1)]
    elif a.dtype.kind == "b":
        t["data"] = [bool(v) for v in a.reshape(-1)]
    else:
        t["data"] = [_encode(v) for v in a.reshape(-1)]
    return t


def inputs_for(shapes, seed, dist="normal"):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        if dist == "normal":
            out.append(rng.standard_normal(s))
        elif dist == "uniform":
            out.append(rng.uniform(-1.0, 1.0, s))
        elif dist == "integers":
            out.append(rng.integers(-3, 4, s).astype(np.float64))
        else:
            raise ValueError(dist)
    return out


def _build(make_layer, input_shapes, dtype):
    """A functional model calling one layer on inputs of these shapes (batch included)."""
    keras.config.set_floatx(dtype)
    keras.config.set_dtype_policy(dtype)
    try:
        ins = [keras.Input(batch_shape=(None,) + tuple(s[1:]), dtype=dtype) for s in input_shapes]
        layer = make_layer()
        x = ins[0] if len(ins) == 1 and not getattr(layer, "_semfuzz_list_input", False) else ins
        out = layer(x)
        return keras.Model(ins if len(ins) > 1 else ins[0], out), layer
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")


def _case(model, layer, arrays, dtype, weights):
    case = {
        "format": "semfuzz-case/1",
        "keras_version": keras.__version__,
        "dtype": dtype,
        "model": model.get_config(),
        "weights": {},
        "inputs": [tensor(a) for a in arrays],
    }
    if weights:
        case["weights"][layer.name] = [tensor(w) for w in weights]
    return case


def valid(name, make_layer, input_shapes, seed=0, dist="normal", weights=None, dtype="float64", list_input=False,
          divergence=None):
    """A case Keras accepts; `weights(layer, rng)` may replace the initial weights. A known
    disagreement of TF with the exact semantics is named by `divergence` (with its cause)."""
    keras.utils.set_random_seed(seed)
    keras.backend.clear_session()

    def factory():
        layer = make_layer()
        layer._semfuzz_list_input = list_input
        return layer

    model, layer = _build(factory, input_shapes, dtype)
    arrays = inputs_for(input_shapes, seed, dist)
    if weights is not None:
        layer.set_weights(weights(layer, np.random.default_rng(seed + 1)))
    ws = layer.get_weights()
    outs = model(arrays if len(arrays) > 1 else arrays[0], training=False)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    expected = {"outputs": [tensor(np.asarray(o, dtype=np.float64)) for o in outs]}
    if divergence:
        expected["divergence"] = divergence
    _CASES.append((name, _case(model, layer, arrays, dtype, ws), expected))


def valid_model(name, build, arrays, seed=0, dtype="float64", divergence=None):
    """A case of a small functional model (several layers: masks made by `Embedding` or
    `Masking` and consumed downstream, say). `build()` returns the model; `arrays` are its
    inputs (integer arrays keep their dtype). The expected outputs are the model's outputs;
    the last layer's tolerance applies to them."""
    keras.utils.set_random_seed(seed)
    keras.backend.clear_session()
    keras.config.set_floatx(dtype)
    keras.config.set_dtype_policy(dtype)
    try:
        model = build()
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")
    arrays = [np.asarray(a) for a in arrays]
    outs = model(arrays if len(arrays) > 1 else arrays[0], training=False)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    case = {
        "format": "semfuzz-case/1",
        "keras_version": keras.__version__,
        "dtype": dtype,
        "model": model.get_config(),
        "weights": {l.name: [tensor(w) for w in l.get_weights()] for l in model.layers if l.get_weights()},
        "inputs": [tensor(a, str(a.dtype) if a.dtype.kind in "iu" else None) for a in arrays],
    }
    expected = {"outputs": [tensor(np.asarray(o, dtype=np.float64)) for o in outs]}
    if divergence:
        expected["divergence"] = divergence
    _CASES.append((name, case, expected))


def invalid(name, make_layer, input_shapes, patch, seed=0, dtype="float64", list_input=False, feed=None):
    """A case made from a valid one by setting `patch` in the layer's config and, with
    `feed`, by declaring and feeding inputs of other shapes; records what Keras does when it
    rebuilds and runs it."""
    keras.utils.set_random_seed(seed)
    keras.backend.clear_session()

    def factory():
        layer = make_layer()
        layer._semfuzz_list_input = list_input
        return layer

    model, layer = _build(factory, input_shapes, dtype)
    arrays = inputs_for(feed or input_shapes, seed)
    case = _case(model, layer, arrays, dtype, None)
    if feed:
        inputs = [e for e in case["model"]["layers"] if e["class_name"] == "InputLayer"]
        for entry, shape in zip(inputs, feed):
            entry["config"]["batch_shape"] = [None] + list(shape[1:])
    for entry in case["model"]["layers"]:
        if entry["name"] == layer.name:
            entry["config"].update(patch)
            entry.pop("build_config", None)
    try:
        keras.backend.clear_session()
        rebuilt = keras.Model.from_config(json.loads(json.dumps(case["model"])))
        rebuilt(arrays if len(arrays) > 1 else arrays[0], training=False)
        expected = {"keras_accepts": True}
    except Exception as e:  # what Keras says is the point of the case
        expected = {"error": _describe(e)}
        cause = e.__cause__ or e.__context__
        if cause is not None:
            expected["error"]["cause"] = _describe(cause)
    _CASES.append((name, case, expected))


def _describe(e):
    return {"type": type(e).__name__, "message": str(e).split("\n")[0][:500]}


def write_all(family):
    out = ROOT / "oracle" / "tests" / "golden" / family
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.json"):
        old.unlink()
    for name, case, expected in _CASES:
        (out / f"{name}.case.json").write_text(json.dumps(case, indent=1, allow_nan=False) + "\n")
        (out / f"{name}.expected.json").write_text(json.dumps(expected, indent=1, allow_nan=False) + "\n")
    accepted = [n for n, _, e in _CASES if e.get("keras_accepts")]
    print(f"{family}: {len(_CASES)} cases written to {out.relative_to(ROOT)}", file=sys.stderr)
    if accepted:
        print(f"{family}: Keras accepts these invalid cases: {', '.join(accepted)}", file=sys.stderr)
