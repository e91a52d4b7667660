"""Golden cases for the recurrent layers: LSTM, GRU, SimpleRNN, RNN over cells (and stacks of
cells), Bidirectional. See common.py.

Besides the cases, this script writes oracle/tests/golden/rnn/direct/calls.json: layers called
directly with an explicit mask (`layer(x, mask=m, initial_state=...)`), which no model config
can express, with Keras's outputs and output masks. The unit tests of
oracle/src/layers/rnn/ replay them through `eval_masked` and `compute_mask`.

Run from the repository root: .venv/bin/python scripts/goldens/rnn.py
"""

import json

import numpy as np

import common
from common import ROOT, invalid, tensor, valid, valid_model, write_all
import keras
from keras import layers

SEQ = [(2, 5, 3)]


def uniform(scale=1.0):
    """Weights drawn uniformly from [-scale, scale] (biases too), instead of Keras's
    initialisers (zero biases, orthogonal recurrent kernels)."""
    return lambda layer, rng: [rng.uniform(-scale, scale, w.shape) for w in layer.get_weights()]


def randomize(layer, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.uniform(-scale, scale, w.shape) for w in layer.get_weights()])


# --- LSTM -------------------------------------------------------------------------------------
for seed in range(3):
    valid(f"lstm_seed{seed}", lambda: layers.LSTM(4), SEQ, seed=seed, weights=uniform())
valid("lstm_default_init", lambda: layers.LSTM(4, return_sequences=True), SEQ)
valid("lstm_sequences_states", lambda: layers.LSTM(3, return_sequences=True, return_state=True), SEQ,
      weights=uniform())
valid("lstm_backwards_sequences", lambda: layers.LSTM(3, return_sequences=True, go_backwards=True), SEQ,
      weights=uniform())
valid("lstm_backwards_states", lambda: layers.LSTM(3, go_backwards=True, return_state=True), SEQ,
      weights=uniform())
valid("lstm_unroll", lambda: layers.LSTM(3, unroll=True, return_sequences=True, go_backwards=True), SEQ,
      weights=uniform())
valid("lstm_no_bias", lambda: layers.LSTM(3, use_bias=False, return_state=True), SEQ, weights=uniform())
valid("lstm_relu_hard_sigmoid",
      lambda: layers.LSTM(3, activation="relu", recurrent_activation="hard_sigmoid", return_sequences=True),
      SEQ, weights=uniform())
valid("lstm_linear", lambda: layers.LSTM(2, activation=None, recurrent_activation=None, return_sequences=True),
      SEQ, weights=uniform(0.5))
valid("lstm_softmax", lambda: layers.LSTM(3, activation="softmax", return_sequences=True), SEQ, weights=uniform())
valid("lstm_dropouts_inert", lambda: layers.LSTM(3, dropout=0.5, recurrent_dropout=0.5, seed=3), SEQ,
      weights=uniform())
valid("lstm_one_unit", lambda: layers.LSTM(1, return_state=True), [(3, 4, 1)], weights=uniform())
valid("lstm_no_features", lambda: layers.LSTM(3, return_state=True), [(2, 5, 0)], weights=uniform())
valid("lstm_long", lambda: layers.LSTM(4, return_sequences=True, return_state=True), [(2, 40, 3)],
      weights=uniform())
valid("lstm_large_weights", lambda: layers.LSTM(4, return_sequences=True), [(2, 12, 3)], weights=uniform(3.0),
      seed=4)
valid("lstm_zero_output_unmasked", lambda: layers.LSTM(2, zero_output_for_mask=True, return_sequences=True),
      SEQ, weights=uniform())
valid("lstm_use_cudnn_false", lambda: layers.LSTM(2, use_cudnn=False), SEQ, weights=uniform())
invalid("lstm_zero_units", lambda: layers.LSTM(3), SEQ, {"units": 0})
invalid("lstm_float_units", lambda: layers.LSTM(3), SEQ, {"units": 2.0})
invalid("lstm_rank2", lambda: layers.LSTM(3), SEQ, {}, feed=[(2, 5)])
invalid("lstm_rank4", lambda: layers.LSTM(3), SEQ, {}, feed=[(2, 5, 3, 1)])
invalid("lstm_no_steps", lambda: layers.LSTM(3), SEQ, {}, feed=[(2, 0, 3)])
invalid("lstm_use_cudnn_string", lambda: layers.LSTM(3), SEQ, {"use_cudnn": "yes"})
invalid("lstm_dropout_string", lambda: layers.LSTM(3), SEQ, {"dropout": "a"})

# --- GRU --------------------------------------------------------------------------------------
for reset_after in (True, False):
    tag = "after" if reset_after else "before"
    for seed in range(2):
        valid(f"gru_{tag}_seed{seed}", lambda r=reset_after: layers.GRU(4, reset_after=r), SEQ, seed=seed,
              weights=uniform())
    valid(f"gru_{tag}_sequences_states",
          lambda r=reset_after: layers.GRU(3, reset_after=r, return_sequences=True, return_state=True), SEQ,
          weights=uniform())
    valid(f"gru_{tag}_backwards",
          lambda r=reset_after: layers.GRU(3, reset_after=r, return_sequences=True, go_backwards=True), SEQ,
          weights=uniform())
    valid(f"gru_{tag}_unroll", lambda r=reset_after: layers.GRU(3, reset_after=r, unroll=True), SEQ,
          weights=uniform())
    valid(f"gru_{tag}_no_bias", lambda r=reset_after: layers.GRU(3, reset_after=r, use_bias=False), SEQ,
          weights=uniform())
    valid(f"gru_{tag}_long", lambda r=reset_after: layers.GRU(4, reset_after=r, return_sequences=True),
          [(2, 40, 3)], weights=uniform())
valid("gru_default_init", lambda: layers.GRU(4, return_sequences=True), SEQ)
valid("gru_elu_sigmoid", lambda: layers.GRU(3, activation="elu", recurrent_activation="sigmoid",
                                            return_sequences=True), SEQ, weights=uniform())
valid("gru_large_weights", lambda: layers.GRU(4, return_sequences=True), [(2, 12, 3)], weights=uniform(3.0))
invalid("gru_negative_units", lambda: layers.GRU(3), SEQ, {"units": -2})
invalid("gru_rank2", lambda: layers.GRU(3), SEQ, {}, feed=[(2, 5)])

# --- SimpleRNN --------------------------------------------------------------------------------
for seed in range(2):
    valid(f"simple_rnn_seed{seed}", lambda: layers.SimpleRNN(4), SEQ, seed=seed, weights=uniform())
valid("simple_rnn_sequences_states", lambda: layers.SimpleRNN(3, return_sequences=True, return_state=True), SEQ,
      weights=uniform())
valid("simple_rnn_backwards_unroll",
      lambda: layers.SimpleRNN(3, return_sequences=True, go_backwards=True, unroll=True), SEQ, weights=uniform())
valid("simple_rnn_relu", lambda: layers.SimpleRNN(3, activation="relu", return_sequences=True), SEQ,
      weights=uniform(0.5))
valid("simple_rnn_no_bias", lambda: layers.SimpleRNN(3, use_bias=False), SEQ, weights=uniform())
valid("simple_rnn_long", lambda: layers.SimpleRNN(4, return_sequences=True), [(2, 40, 3)], weights=uniform())
invalid("simple_rnn_zero_units", lambda: layers.SimpleRNN(3), SEQ, {"units": 0})
invalid("simple_rnn_no_steps", lambda: layers.SimpleRNN(3), SEQ, {}, feed=[(1, 0, 2)])


# --- RNN over cells ---------------------------------------------------------------------------
valid("rnn_lstm_cell", lambda: layers.RNN(layers.LSTMCell(3)), SEQ, weights=uniform())
valid("rnn_gru_cell_before_backwards",
      lambda: layers.RNN(layers.GRUCell(3, reset_after=False), return_sequences=True, go_backwards=True), SEQ,
      weights=uniform())
valid("rnn_simple_cell_states", lambda: layers.RNN(layers.SimpleRNNCell(2), return_state=True), SEQ,
      weights=uniform())
valid("rnn_stacked", lambda: layers.RNN([layers.LSTMCell(3), layers.GRUCell(2), layers.SimpleRNNCell(2)],
                                        return_sequences=True), SEQ, weights=uniform())
valid("rnn_stacked_unroll", lambda: layers.RNN([layers.GRUCell(3), layers.GRUCell(2, reset_after=False)],
                                               unroll=True, go_backwards=True), SEQ, weights=uniform())
invalid("rnn_rank2", lambda: layers.RNN(layers.LSTMCell(3)), SEQ, {}, feed=[(2, 5)])


def stacked_states():
    x = keras.Input(batch_shape=(None, 5, 3))
    rnn = layers.RNN([layers.LSTMCell(3), layers.GRUCell(2)], return_sequences=True, return_state=True)
    out, (h1, c1), h2 = rnn(x)
    model = keras.Model(x, [out, h1, c1, h2])
    randomize(rnn, 7)
    return model


valid_model("rnn_stacked_states", stacked_states, [np.random.default_rng(0).standard_normal((2, 5, 3))])

# --- Bidirectional ----------------------------------------------------------------------------
for mode in ("concat", "sum", "mul", "ave"):
    valid(f"bidirectional_lstm_{mode}",
          lambda m=mode: layers.Bidirectional(layers.LSTM(3, return_sequences=True), merge_mode=m), SEQ,
          weights=uniform())
    valid(f"bidirectional_gru_{mode}_last", lambda m=mode: layers.Bidirectional(layers.GRU(2), merge_mode=m),
          SEQ, weights=uniform())
valid("bidirectional_none", lambda: layers.Bidirectional(layers.SimpleRNN(2, return_sequences=True),
                                                         merge_mode=None), SEQ, weights=uniform())
valid("bidirectional_none_states",
      lambda: layers.Bidirectional(layers.LSTM(2, return_state=True), merge_mode=None), SEQ, weights=uniform())
valid("bidirectional_concat_states",
      lambda: layers.Bidirectional(layers.GRU(2, return_sequences=True, return_state=True)), SEQ,
      weights=uniform())
valid("bidirectional_backward_layer",
      lambda: layers.Bidirectional(layers.LSTM(3, return_sequences=True),
                                   backward_layer=layers.GRU(3, return_sequences=True, go_backwards=True,
                                                             reset_after=False)), SEQ, weights=uniform())
valid("bidirectional_rnn_cells",
      lambda: layers.Bidirectional(layers.RNN([layers.SimpleRNNCell(2), layers.LSTMCell(2)],
                                              return_sequences=True), merge_mode="sum"), SEQ, weights=uniform())
valid("bidirectional_unroll",
      lambda: layers.Bidirectional(layers.LSTM(2, unroll=True, return_sequences=True)), SEQ, weights=uniform())
invalid("bidirectional_merge_max", lambda: layers.Bidirectional(layers.LSTM(2)), SEQ, {"merge_mode": "max"})
invalid("bidirectional_rank2", lambda: layers.Bidirectional(layers.LSTM(2)), SEQ, {}, feed=[(2, 5)])


def lstm_config(**changes):
    config = keras.saving.serialize_keras_object(layers.LSTM(2))
    config["config"].update(changes)
    return config


invalid("bidirectional_same_direction", lambda: layers.Bidirectional(layers.LSTM(2)), SEQ,
        {"backward_layer": lstm_config()})
invalid("bidirectional_mixed_sequences", lambda: layers.Bidirectional(layers.LSTM(2)), SEQ,
        {"backward_layer": lstm_config(go_backwards=True, return_sequences=True)})
invalid("bidirectional_zero_units", lambda: layers.Bidirectional(layers.LSTM(2)), SEQ,
        {"layer": lstm_config(units=0), "backward_layer": lstm_config(units=0, go_backwards=True)})


# --- Initial states (tensor keyword arguments) ------------------------------------------------
def with_states(make, state_shapes, positional=False, seed=0, as_list=False):
    def build():
        x = keras.Input(batch_shape=(None, 5, 3))
        states = [keras.Input(batch_shape=(None,) + s) for s in state_shapes]
        layer = make()
        given = states if as_list or len(states) > 1 else states[0]
        out = layer(x, given) if positional else layer(x, initial_state=given)
        randomize(layer, seed + 11)
        return keras.Model([x] + states, out)

    rng = np.random.default_rng(seed)
    return build, [rng.standard_normal((2, 5, 3))] + [rng.standard_normal((2,) + s) for s in state_shapes]


valid_model("lstm_initial_state", *with_states(lambda: layers.LSTM(4, return_sequences=True), [(4,), (4,)]))
valid_model("lstm_initial_state_positional",
            *with_states(lambda: layers.LSTM(4, return_state=True), [(4,), (4,)], positional=True))
valid_model("gru_initial_state_tensor", *with_states(lambda: layers.GRU(3, return_state=True), [(3,)]))
valid_model("gru_initial_state_extra_ignored",
            *with_states(lambda: layers.GRU(3, go_backwards=True), [(3,), (7,)]))
valid_model("simple_rnn_initial_state",
            *with_states(lambda: layers.SimpleRNN(3, return_sequences=True, unroll=True), [(3,)]))
valid_model("bidirectional_initial_state",
            *with_states(lambda: layers.Bidirectional(layers.LSTM(2, return_sequences=True)),
                         [(2,), (2,), (2,), (2,)]))
valid_model("rnn_cell_initial_state",
            *with_states(lambda: layers.RNN(layers.LSTMCell(2), return_state=True), [(2,), (2,)]))


def invalid_model(name, build, arrays):
    """A model Keras builds but refuses to run."""
    keras.utils.set_random_seed(0)
    keras.backend.clear_session()
    keras.config.set_floatx("float64")
    keras.config.set_dtype_policy("float64")
    try:
        model = build()
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")
    case = {
        "format": "semfuzz-case/1",
        "keras_version": keras.__version__,
        "dtype": "float64",
        "model": model.get_config(),
        "weights": {},
        "inputs": [tensor(a) for a in arrays],
    }
    try:
        model(arrays, training=False)
        expected = {"keras_accepts": True}
    except Exception as e:  # what Keras says is the point of the case
        expected = {"error": common._describe(e)}
        cause = e.__cause__ or e.__context__
        if cause is not None:
            expected["error"]["cause"] = common._describe(cause)
    common._CASES.append((name, case, expected))


invalid_model("lstm_one_initial_state", *with_states(lambda: layers.LSTM(4), [(4,)], as_list=True))
invalid_model("lstm_three_initial_states", *with_states(lambda: layers.LSTM(4), [(4,), (4,), (4,)]))
invalid_model("simple_rnn_two_initial_states", *with_states(lambda: layers.SimpleRNN(4), [(4,), (4,)]))
invalid_model("gru_initial_state_units", *with_states(lambda: layers.GRU(4), [(5,)]))
invalid_model("lstm_initial_state_units", *with_states(lambda: layers.LSTM(4), [(4,), (3,)]))
invalid_model("bidirectional_one_initial_state",
              *with_states(lambda: layers.Bidirectional(layers.GRU(2)), [(2,)], as_list=True))



# --- Masks through models: Embedding(mask_zero=True) before the recurrent layers --------------
IDS = np.array([
    [1, 0, 3, 2, 0],  # holes, last step masked
    [0, 0, 4, 1, 2],  # left padding
    [2, 3, 1, 0, 0],  # right padding
    [0, 0, 0, 0, 0],  # nothing at all
], dtype="int32")


def embedded(*after, ids=IDS, seed=5):
    """Input(int) -> Embedding(mask_zero) -> the layers made by `after`, with uniform weights."""
    def build():
        i = keras.Input((ids.shape[1],), dtype="int32")
        x = layers.Embedding(5, 3, mask_zero=True)(i)
        for k, make in enumerate(after):
            layer = make()
            x = layer(x)
            randomize(layer, seed + k)
        return keras.Model(i, x)
    return build, [ids]


for cls in ("LSTM", "GRU", "SimpleRNN"):
    make = getattr(layers, cls)
    for rs in (True, False):
        for gb in (False, True):
            for zero in (False, True):
                valid_model(f"mask_{cls.lower()}_seq{int(rs)}_back{int(gb)}_zero{int(zero)}",
                            *embedded(lambda m=make, r=rs, g=gb, z=zero: m(
                                3, return_sequences=r, go_backwards=g, zero_output_for_mask=z)))
valid_model("mask_lstm_states", *embedded(lambda: layers.LSTM(2, return_sequences=True, return_state=True)))
valid_model("mask_gru_before_unroll", *embedded(lambda: layers.GRU(2, reset_after=False, unroll=True,
                                                                   return_sequences=True)))
# The sequence keeps the input mask (not reversed by go_backwards) for the next layer.
valid_model("mask_lstm_then_gru", *embedded(lambda: layers.LSTM(3, return_sequences=True, go_backwards=True),
                                            lambda: layers.GRU(2, return_sequences=True)))
valid_model("mask_last_output_unmasked", *embedded(lambda: layers.SimpleRNN(3), lambda: layers.Dense(2)))
valid_model("mask_rnn_stacked", *embedded(lambda: layers.RNN([layers.LSTMCell(2), layers.GRUCell(3)],
                                                             return_sequences=True)))
for mode in ("concat", "sum", "mul", "ave", None):
    valid_model(f"mask_bidirectional_{mode}", *embedded(lambda m=mode: layers.Bidirectional(
        layers.LSTM(2, return_sequences=True), merge_mode=m)))
valid_model("mask_bidirectional_last", *embedded(lambda: layers.Bidirectional(layers.GRU(2), merge_mode="ave")))
valid_model("mask_bidirectional_then_lstm", *embedded(lambda: layers.Bidirectional(
    layers.GRU(2, return_sequences=True)), lambda: layers.LSTM(2)))

# --- Masks from Masking: steps whose features all equal mask_value ----------------------------
def masked_floats(*after, seed=9):
    """Input(float) -> Masking(0.0) -> the layers made by `after`; some steps are all zeros."""
    x = np.random.default_rng(seed).standard_normal((3, 6, 2))
    x[0, 1] = x[0, 5] = x[1, :2] = x[2, 3:] = 0.0

    def build():
        i = keras.Input((6, 2))
        h = layers.Masking(0.0)(i)
        for k, make in enumerate(after):
            layer = make()
            h = layer(h)
            randomize(layer, seed + k)
        return keras.Model(i, h)
    return build, [x]


valid_model("masking_lstm_sequences", *masked_floats(lambda: layers.LSTM(3, return_sequences=True)))
valid_model("masking_gru_backwards_last", *masked_floats(lambda: layers.GRU(2, go_backwards=True,
                                                                            return_state=True)))
valid_model("masking_simple_rnn_zero_output",
            *masked_floats(lambda: layers.SimpleRNN(2, return_sequences=True, zero_output_for_mask=True)))
valid_model("masking_bidirectional_then_lstm", *masked_floats(
    lambda: layers.Bidirectional(layers.GRU(2, return_sequences=True), merge_mode="sum"),
    lambda: layers.LSTM(2, return_sequences=True)))


# --- float32: TF computes in float32, the reference in float64 on the same values ------------
valid("lstm_float32", lambda: layers.LSTM(4, return_sequences=True, return_state=True), [(2, 12, 3)],
      weights=uniform(), dtype="float32")
valid("gru_after_float32_long", lambda: layers.GRU(4, return_sequences=True), [(2, 40, 3)], weights=uniform(),
      dtype="float32")
valid("gru_before_float32", lambda: layers.GRU(3, reset_after=False, go_backwards=True), SEQ, weights=uniform(),
      dtype="float32")
valid("simple_rnn_float32_long", lambda: layers.SimpleRNN(4, return_sequences=True), [(2, 40, 3)],
      weights=uniform(), dtype="float32")
valid("bidirectional_float32", lambda: layers.Bidirectional(layers.LSTM(3, return_sequences=True),
                                                            merge_mode="mul"), SEQ, weights=uniform(),
      dtype="float32")
valid_model("mask_lstm_float32", *embedded(lambda: layers.LSTM(3, return_sequences=True)), dtype="float32")

write_all("rnn")


# --- Direct calls with masks ------------------------------------------------------------------
MASKS = np.array([
    [True, False, True, True, False],    # holes, last step masked
    [False, False, True, True, True],    # left padding
    [True, True, True, False, False],    # right padding
    [False, False, False, False, False],  # nothing at all
])


def direct(name, make, seed=0, states=None, time=5, mask=MASKS):
    keras.utils.set_random_seed(seed)
    keras.backend.clear_session()
    keras.config.set_floatx("float64")
    keras.config.set_dtype_policy("float64")
    try:
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((mask.shape[0], time, 3))
        layer = make()
        given = [rng.standard_normal((mask.shape[0], n)) for n in (states or [])]
        kwargs = {"initial_state": given} if given else {}
        layer(x, mask=mask, **kwargs)  # builds
        layer.set_weights([rng.uniform(-1, 1, w.shape) for w in layer.get_weights()])
        out = keras.tree.flatten(layer(x, mask=mask, **kwargs))
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")
    masks = [getattr(o, "_keras_mask", None) for o in out]
    return {
        "name": name,
        "layer": keras.saving.serialize_keras_object(layer),
        "inputs": [tensor(x)] + [tensor(s) for s in given],
        "mask": tensor(mask),
        "weights": [tensor(w) for w in layer.get_weights()],
        "outputs": [tensor(np.asarray(o, dtype=np.float64)) for o in out],
        "output_masks": [None if m is None else tensor(np.asarray(m)) for m in masks],
    }


calls = []
for cls in ("LSTM", "GRU", "SimpleRNN"):
    make = getattr(layers, cls)
    for rs in (True, False):
        for gb in (False, True):
            for zero in (False, True):
                calls.append(direct(f"{cls}_seq{int(rs)}_back{int(gb)}_zero{int(zero)}",
                                    lambda m=make, r=rs, g=gb, z=zero: m(
                                        3, return_sequences=r, return_state=True, go_backwards=g,
                                        zero_output_for_mask=z)))
calls.append(direct("LSTM_unroll_states", lambda: layers.LSTM(2, unroll=True, return_sequences=True,
                                                              return_state=True), states=[2, 2]))
calls.append(direct("GRU_before_states", lambda: layers.GRU(2, reset_after=False, return_sequences=True,
                                                            go_backwards=True), states=[2]))
calls.append(direct("RNN_stacked", lambda: layers.RNN([layers.LSTMCell(2), layers.SimpleRNNCell(3)],
                                                      return_sequences=True, return_state=True)))
for mode in ("concat", "sum", "mul", "ave", None):
    for rs in (True, False):
        calls.append(direct(f"Bidirectional_{mode}_seq{int(rs)}",
                            lambda m=mode, r=rs: layers.Bidirectional(
                                layers.LSTM(2, return_sequences=r, return_state=True), merge_mode=m)))
calls.append(direct("Bidirectional_gru_states", lambda: layers.Bidirectional(
    layers.GRU(2, return_sequences=True), merge_mode="concat"), states=[2, 2]))
out = ROOT / "oracle" / "tests" / "golden" / "rnn" / "direct"
out.mkdir(parents=True, exist_ok=True)
(out / "calls.json").write_text(json.dumps(calls, indent=1, allow_nan=False) + "\n")
print(f"rnn: {len(calls)} direct calls written to {out.relative_to(ROOT)}")
