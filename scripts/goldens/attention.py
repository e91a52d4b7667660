"""Golden cases for the attention layers. See common.py.

Every case is a small functional model built by `model_case` (inputs of an unknown batch, the
layer called the way a user calls it, with `use_causal_mask`/`return_attention_scores` recorded
in the node), so the call's keyword arguments and positional tensors are kept. Weights are the
initial ones (glorot kernels) unless `weights` replaces them; `Attention`'s unit scales are
replaced to test them. Masks come from `Embedding(mask_zero=True)` before the layer.

Invalid cases start from a valid model and patch the layer's config (`patch`) and/or the
declared and fed input shapes (`feed`), then record what Keras does when it rebuilds and runs
the model.

Run from the repository root: .venv/bin/python scripts/goldens/attention.py
"""

import json

import numpy as np
import keras
from keras import layers

import common
from common import valid_model, write_all

F64 = "float64"


def _inputs(shapes, dtype=F64):
    return [keras.Input(batch_shape=(None,) + tuple(s[1:]), dtype=dtype) for s in shapes]


def model_case(name, make_layer, shapes, call, seed=0, weights=None, dtype=F64, dist="normal",
               divergence=None):
    """A model `call(layer, inputs)` on float inputs of `shapes` (batch first)."""

    def build():
        ins = _inputs(shapes, dtype)
        layer = make_layer()
        out = call(layer, ins)
        model = keras.Model(ins, out)
        if weights is not None:
            layer.set_weights(weights(layer, np.random.default_rng(seed + 1)))
        return model

    arrays = common.inputs_for(shapes, seed, dist)
    valid_model(name, build, arrays, seed=seed, dtype=dtype, divergence=divergence)


def masked_case(name, make_layer, tokens, call, dim=4, seed=0, dtype=F64):
    """Integer token inputs, each embedded with `mask_zero=True` (0 is padding), then the
    layer: `call(layer, embedded)`."""

    def build():
        ins = [keras.Input(batch_shape=(None,) + t.shape[1:], dtype="int32") for t in tokens]
        emb = [layers.Embedding(6, dim, mask_zero=True)(x) for x in ins]
        layer = make_layer()
        return keras.Model(ins, call(layer, emb))

    valid_model(name, build, [t.astype("int32") for t in tokens], seed=seed, dtype=dtype)


def invalid_case(name, make_layer, shapes, call, patch=None, feed=None, seed=0):
    """A valid `model_case` whose layer config gets `patch` and whose inputs are declared and
    fed with the shapes `feed`: Keras's reaction when it rebuilds and runs it."""
    keras.utils.set_random_seed(seed)
    keras.backend.clear_session()
    keras.config.set_floatx(F64)
    keras.config.set_dtype_policy(F64)
    try:
        ins = _inputs(shapes)
        layer = make_layer()
        model = keras.Model(ins, call(layer, ins))
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")
    arrays = common.inputs_for(feed or shapes, seed)
    case = {
        "format": "semfuzz-case/1",
        "keras_version": keras.__version__,
        "dtype": F64,
        "model": model.get_config(),
        "weights": {},
        "inputs": [common.tensor(a) for a in arrays],
    }
    if feed:
        entries = [e for e in case["model"]["layers"] if e["class_name"] == "InputLayer"]
        for entry, shape in zip(entries, feed):
            entry["config"]["batch_shape"] = [None] + list(shape[1:])
    for entry in case["model"]["layers"]:
        if entry["name"] == layer.name:
            entry["config"].update(patch or {})
            entry.pop("build_config", None)
    try:
        keras.backend.clear_session()
        rebuilt = keras.Model.from_config(json.loads(json.dumps(case["model"])))
        rebuilt(arrays if len(arrays) > 1 else arrays[0], training=False)
        expected = {"keras_accepts": True}
    except Exception as e:  # what Keras says is the point of the case
        expected = {"error": common._describe(e)}
        cause = e.__cause__ or e.__context__
        if cause is not None:
            expected["error"]["cause"] = common._describe(cause)
    common._CASES.append((name, case, expected))


def invalid_model(name, build, arrays, seed=0):
    """A model Keras builds but refuses (or accepts) when it runs: what it does."""
    keras.utils.set_random_seed(seed)
    keras.backend.clear_session()
    keras.config.set_floatx(F64)
    keras.config.set_dtype_policy(F64)
    try:
        model = build()
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")
    arrays = [np.asarray(a) for a in arrays]
    case = {
        "format": "semfuzz-case/1",
        "keras_version": keras.__version__,
        "dtype": F64,
        "model": model.get_config(),
        "weights": {l.name: [common.tensor(w) for w in l.get_weights()] for l in model.layers if l.get_weights()},
        "inputs": [common.tensor(a, str(a.dtype) if a.dtype.kind in "iu" else None) for a in arrays],
    }
    try:
        model(arrays if len(arrays) > 1 else arrays[0], training=False)
        expected = {"keras_accepts": True}
    except Exception as e:  # what Keras says is the point of the case
        expected = {"error": common._describe(e)}
    common._CASES.append((name, case, expected))


def embedded(tokens, make_layer, call, dim=4, after=()):
    """Integer inputs embedded with `mask_zero=True`, the layer, then the layers `after`."""

    def build():
        ins = [keras.Input(batch_shape=(None,) + t.shape[1:], dtype="int32") for t in tokens]
        emb = [layers.Embedding(6, dim, mask_zero=True)(x) for x in ins]
        out = call(make_layer(), emb)
        for make in after:
            out = make()(out)
        return keras.Model(ins, out)

    return build


def as_list(**kw):
    """`layer([q, v(, k)], **kw)`."""
    return lambda layer, ins: layer(list(ins), **kw)


def positional(**kw):
    """`layer(q, v(, k), **kw)`."""
    return lambda layer, ins: layer(*ins, **kw)


def self_attention(**kw):
    """`layer(x, x, **kw)`."""
    return lambda layer, ins: layer(ins[0], ins[0], **kw)


def scalars(*values):
    """Replaces scalar weights (Attention's `scale`, `concat_score_weight`)."""
    return lambda layer, rng: [np.asarray(v, dtype="float64") for v in values]


def uniform_weights(layer, rng):
    """Every weight uniform in [-1, 1) (biases too, which Keras initialises to zero)."""
    return [rng.uniform(-1.0, 1.0, np.shape(w)) for w in layer.get_weights()]


Q, V, K = (2, 3, 4), (2, 5, 4), (2, 5, 6)

# --- Attention -------------------------------------------------------------------------------
A = layers.Attention
for seed in (0, 1, 2):
    model_case(f"att_dot_s{seed}", A, [Q, V], as_list(), seed=seed)
model_case("att_dot_key", A, [Q, (2, 5, 3), (2, 5, 4)], as_list())
model_case("att_dot_scale", lambda: A(use_scale=True), [Q, V], as_list(), weights=scalars(0.7))
model_case("att_concat", lambda: A(score_mode="concat"), [Q, V], as_list(), weights=scalars(0.8))
model_case("att_concat_scale", lambda: A(score_mode="concat", use_scale=True), [Q, V, (2, 5, 4)],
           as_list(), weights=scalars(1.3, -0.6), seed=3)
model_case("att_concat_broadcast_features", lambda: A(score_mode="concat"), [(2, 3, 1), (2, 5, 2), (2, 5, 3)],
           as_list(), weights=scalars(1.1))
model_case("att_rank4", A, [(2, 3, 2, 4), (2, 3, 5, 4)], as_list(), seed=4)
model_case("att_rank2", A, [(5, 4), (6, 4)], as_list(), seed=5)
model_case("att_scores", A, [Q, V], as_list(return_attention_scores=True), seed=6)
model_case("att_causal", A, [(2, 4, 3), (2, 5, 3)], as_list(use_causal_mask=True), seed=7)
model_case("att_causal_scores", lambda: A(use_scale=True), [(2, 5, 3), (2, 4, 3)],
           as_list(use_causal_mask=True, return_attention_scores=True), weights=scalars(2.5), seed=8)
model_case("att_dropout", lambda: A(dropout=0.4), [Q, V], as_list(return_attention_scores=True), seed=9)
model_case("att_large", A, [(3, 7, 8), (3, 9, 8)], as_list(return_attention_scores=True), seed=10,
           dist="uniform")
model_case("att_float32", A, [Q, V], as_list(return_attention_scores=True), seed=11, dtype="float32")


def flushed_weight_inputs(dtype):
    """Scores 0 and -100 (weights 1 and e^-100, a float32 subnormal that TF flushes to 0) over
    values 1 and -inf: `0 · -inf` is NaN in float32, the exact weight gives -inf in float64."""
    return [np.array([[[10.0]]], dtype), np.array([[[1.0], [-np.inf]]], dtype),
            np.array([[[0.0], [-10.0]]], dtype)]


def flushed_weight_model(make_layer, call, dtype):
    def build():
        ins = [keras.Input(batch_shape=(None,) + a.shape[1:], dtype=dtype) for a in flushed_weight_inputs(dtype)]
        layer = make_layer()
        model = keras.Model(ins, call(layer, ins))
        layer.set_weights([np.ones(np.shape(w)) if np.ndim(w) == 3 else np.zeros(np.shape(w))
                           for w in layer.get_weights()])
        return model

    return build


for dt in ("float32", "float64"):
    valid_model(f"att_flushed_weight_inf_value_{dt}", flushed_weight_model(A, as_list(return_attention_scores=True), dt),
                flushed_weight_inputs(dt), dtype=dt)

TOK_Q = np.array([[1, 2, 0, 0], [3, 1, 4, 2], [0, 0, 0, 0]])
TOK_V = np.array([[3, 0, 1, 2, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]])
masked_case("att_masked", A, [TOK_Q, TOK_V], as_list(return_attention_scores=True))
masked_case("att_masked_causal", A, [TOK_Q, TOK_V], as_list(use_causal_mask=True), seed=1)
masked_case("att_masked_concat", lambda: A(score_mode="concat"), [TOK_Q, TOK_V],
            as_list(return_attention_scores=True), seed=2)
masked_case("att_masked_float32", A, [TOK_Q, TOK_V], as_list(return_attention_scores=True), seed=3,
            dtype="float32")

# The output keeps the query's mask: a masked average after it skips the padded queries.
valid_model("att_masked_then_pool", embedded([TOK_Q, TOK_V], A, as_list(), after=[layers.GlobalAveragePooling1D]),
            [TOK_Q.astype("int32"), TOK_V.astype("int32")])


def explicit_masks(dtype=F64):
    """`Attention()([q, v], mask=[q_ids != 0, v_ids != 0])` on float inputs."""
    q = keras.Input((4, 3), dtype=dtype)
    v = keras.Input((5, 3), dtype=dtype)
    qi = keras.Input((4,), dtype="int32")
    vi = keras.Input((5,), dtype="int32")
    qm, vm = keras.ops.not_equal(qi, 0), keras.ops.not_equal(vi, 0)
    return keras.Model([q, v, qi, vi], A()([q, v], mask=[qm, vm], return_attention_scores=True))


QF, VF = common.inputs_for([(3, 4, 3), (3, 5, 3)], 12)
valid_model("att_explicit_mask", explicit_masks, [QF, VF, TOK_Q.astype("int32"), TOK_V.astype("int32")])
# Rank-4 inputs with a value mask: Keras does not expand the mask (B, X, Tv), which then meets
# the scores (B, X, Tq, Tv) right-aligned: X against Tq.
TOK4 = np.array([[[1, 2, 0], [3, 0, 0]], [[1, 1, 1], [0, 0, 0]]])
invalid_model("att_rank4_value_mask", embedded([TOK4, TOK4[:, :, :2]], A, as_list()),
              [TOK4.astype("int32"), TOK4[:, :, :2].astype("int32")])

invalid_case("att_bad_score_mode", A, [Q, V], as_list(), patch={"score_mode": "additive"})
invalid_case("att_dot_features_differ", A, [Q, V], as_list(), feed=[Q, (2, 5, 3)])
invalid_case("att_key_length_differs", A, [Q, V, V], as_list(), feed=[Q, V, (2, 6, 4)])
invalid_case("att_ranks_differ", A, [Q, V], as_list(), feed=[Q, (2, 3, 5, 4)])
invalid_case("att_batches_differ", A, [Q, V], as_list(), feed=[(2, 3, 4), (3, 5, 4)])

# --- AdditiveAttention -----------------------------------------------------------------------
AA = layers.AdditiveAttention
for seed in (0, 1):
    model_case(f"add_default_s{seed}", AA, [Q, V], as_list(), seed=seed)
model_case("add_no_scale", lambda: AA(use_scale=False), [Q, V], as_list(), seed=2)
model_case("add_key", AA, [Q, (2, 5, 3), (2, 5, 4)], as_list(return_attention_scores=True), seed=3)
model_case("add_broadcast_features", AA, [(2, 3, 1), (2, 5, 2), (2, 5, 3)], as_list(), seed=4)
model_case("add_causal_scores", AA, [(2, 4, 3), (2, 4, 3)],
           as_list(use_causal_mask=True, return_attention_scores=True), seed=5)
model_case("add_rank4", AA, [(2, 2, 3, 4), (2, 2, 5, 4)], as_list(), seed=6)
masked_case("add_masked", AA, [TOK_Q, TOK_V], as_list(return_attention_scores=True), seed=4)
invalid_case("add_features_differ", AA, [Q, V], as_list(), feed=[Q, (2, 5, 3)])

# --- MultiHeadAttention ----------------------------------------------------------------------
M = layers.MultiHeadAttention
for seed in (0, 1):
    model_case(f"mha_self_s{seed}", lambda: M(2, 3), [(2, 4, 5)], self_attention(), seed=seed)
model_case("mha_cross", lambda: M(3, 2), [(2, 3, 4), (2, 5, 6)], positional(), seed=2,
           weights=uniform_weights)
model_case("mha_key_value_dim", lambda: M(2, 3, value_dim=4, output_shape=(2, 3)),
           [(2, 3, 4), (2, 5, 6), (2, 5, 7)], positional(), seed=3, weights=uniform_weights)
model_case("mha_no_bias_gate", lambda: M(2, 2, use_bias=False, use_gate=True, output_shape=5),
           [(2, 3, 4), (2, 5, 6)], positional(), seed=4)
model_case("mha_gate_bias", lambda: M(2, 2, use_gate=True), [(2, 3, 4), (2, 5, 6)], positional(),
           seed=5, weights=uniform_weights)
model_case("mha_scores", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)],
           positional(return_attention_scores=True), seed=6, weights=uniform_weights)
model_case("mha_causal", lambda: M(2, 3), [(2, 4, 4)], self_attention(use_causal_mask=True), seed=7,
           weights=uniform_weights)
model_case("mha_causal_cross", lambda: M(2, 3), [(2, 3, 4), (2, 5, 4)],
           positional(use_causal_mask=True), seed=8, weights=uniform_weights)
model_case("mha_causal_scores", lambda: M(2, 3), [(2, 5, 4), (2, 3, 4)],
           positional(use_causal_mask=True, return_attention_scores=True), seed=9,
           weights=uniform_weights)
model_case("mha_dropout", lambda: M(2, 3, dropout=0.3), [(2, 3, 4), (2, 5, 6)], positional(), seed=10,
           weights=uniform_weights)
model_case("mha_sliding_window", lambda: M(2, 3, sliding_window=2), [(2, 5, 4)],
           self_attention(use_causal_mask=True), seed=11, weights=uniform_weights)
model_case("mha_sliding_window_scores", lambda: M(2, 3, sliding_window=2), [(2, 5, 4), (2, 6, 4)],
           positional(return_attention_scores=True), seed=12, weights=uniform_weights)
model_case("mha_rank4", lambda: M(2, 3), [(2, 2, 3, 4), (2, 4, 2, 5)], positional(), seed=13,
           weights=uniform_weights)
model_case("mha_rank4_scores", lambda: M(2, 2), [(2, 2, 3, 4), (2, 4, 2, 5)],
           positional(return_attention_scores=True), seed=14, weights=uniform_weights)
model_case("mha_rank4_axis2", lambda: M(2, 3, attention_axes=2), [(2, 2, 3, 4), (2, 2, 5, 5)],
           positional(return_attention_scores=True), seed=15, weights=uniform_weights)
model_case("mha_rank4_axes_2_1", lambda: M(2, 2, attention_axes=(2, 1)), [(2, 2, 3, 4), (2, 4, 2, 5)],
           positional(return_attention_scores=True), seed=16, weights=uniform_weights)
model_case("mha_rank4_axis1_causal", lambda: M(2, 2, attention_axes=1), [(2, 3, 2, 4), (2, 4, 2, 4)],
           positional(use_causal_mask=True), seed=17, weights=uniform_weights)
model_case("mha_rank4_batch_axis", lambda: M(2, 2, attention_axes=(0, 2)), [(2, 3, 2, 4), (3, 3, 4, 4)],
           positional(), seed=18, weights=uniform_weights)
# Rank-3 inputs: the fused computation ignores attention_axes, the explicit one (scores) does not.
model_case("mha_heads_axis_fused", lambda: M(2, 3, attention_axes=-1), [(2, 4, 4)], self_attention(),
           seed=19, weights=uniform_weights)
model_case("mha_heads_axis_scores", lambda: M(2, 3, attention_axes=-1), [(2, 4, 4)],
           self_attention(return_attention_scores=True), seed=19, weights=uniform_weights)
model_case("mha_float32", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)], positional(return_attention_scores=True),
           seed=20, dtype="float32", weights=uniform_weights)

valid_model("mha_masked_then_pool", embedded([TOK_Q, TOK_V], lambda: M(2, 3), positional(),
                                              after=[layers.GlobalAveragePooling1D]),
            [TOK_Q.astype("int32"), TOK_V.astype("int32")], seed=3)
invalid_model("mha_rank4_masks", embedded([TOK4, TOK4], lambda: M(2, 2), positional()),
              [TOK4.astype("int32"), TOK4.astype("int32")])
masked_case("mha_masked_fused", lambda: M(2, 3), [TOK_Q, TOK_V], positional(), seed=5)
masked_case("mha_masked_scores", lambda: M(2, 3), [TOK_Q, TOK_V], positional(return_attention_scores=True),
            seed=5)
masked_case("mha_masked_self_causal", lambda: M(2, 2), [TOK_V], self_attention(use_causal_mask=True), seed=6)
masked_case("mha_masked_key", lambda: M(2, 2), [TOK_Q, TOK_V, np.array([[1, 1, 0, 1, 1], [2, 0, 0, 0, 0], [1, 1, 1, 1, 1]])],
            positional(return_attention_scores=True), seed=7)

invalid_case("mha_num_heads_zero", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)], positional(), patch={"num_heads": 0})
invalid_case("mha_key_dim_float", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)], positional(), patch={"key_dim": 2.0})
invalid_case("mha_value_dim_negative", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)], positional(),
             patch={"value_dim": -1})
invalid_case("mha_dropout_above_one", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)], positional(),
             patch={"dropout": 1.5})
invalid_case("mha_sliding_window_zero", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)], positional(),
             patch={"sliding_window": 0})
invalid_case("mha_axis_out_of_range", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)], positional(),
             patch={"attention_axes": [4]})
invalid_case("mha_no_axes_explicit", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)],
             positional(return_attention_scores=True), patch={"attention_axes": []})
invalid_case("mha_value_key_differ", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6), (2, 5, 6)], positional(),
             feed=[(2, 3, 4), (2, 5, 6), (2, 4, 6)])
invalid_case("mha_ranks_differ", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)], positional(),
             feed=[(2, 3, 4), (2, 5, 2, 6)])
invalid_case("mha_batches_differ", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)], positional(),
             feed=[(2, 3, 4), (3, 5, 6)])
# Rank 2 with the default axes: none is left, and the explicit path's Softmax fails. (A built
# layer writes its resolved axes into its config: `[1]`, the heads axis of rank-2 inputs.)
invalid_case("mha_rank2", lambda: M(2, 3), [(2, 3, 4), (2, 5, 6)], positional(), feed=[(2, 4), (2, 6)],
             patch={"attention_axes": None})
model_case("mha_rank2_heads_axis", lambda: M(2, 3, attention_axes=1), [(4, 4), (4, 6)], positional(),
           seed=21, weights=uniform_weights)
# Identity projections (kernels 1, biases 0): the flushed weight meets the -inf value.
for dt in ("float32", "float64"):
    valid_model(f"mha_flushed_weight_inf_value_{dt}",
                flushed_weight_model(lambda: M(1, 1), positional(return_attention_scores=True), dt),
                flushed_weight_inputs(dt), dtype=dt)
valid_model("mha_flushed_weight_inf_value_fused", flushed_weight_model(lambda: M(1, 1), positional(), "float32"),
            flushed_weight_inputs("float32"), dtype="float32")
# Rank 2: Keras builds the causal and sliding-window masks `(1, T, S)` from axis 1 of the
# *inputs* (their features), not of the projected tensors (the heads): with one feature the
# masks hide nothing, with one query feature and N value features they cut the heads axis.
model_case("mha_rank2_sliding_window_gate",
           lambda: M(4, 4, value_dim=3, use_gate=True, output_shape=5, attention_axes=-1, sliding_window=2),
           [(2, 1), (2, 1), (2, 1)], positional(), seed=22, weights=uniform_weights)
model_case("mha_rank2_sliding_window_heads", lambda: M(3, 2, attention_axes=1, sliding_window=2),
           [(2, 1), (2, 3)], positional(return_attention_scores=True), seed=23, weights=uniform_weights)
# `use_causal_mask` alone is the exception: the explicit path sizes that mask from the projected
# query and value, the heads `(N, N)`, whatever the features.
model_case("mha_rank2_causal", lambda: M(3, 2, attention_axes=1), [(2, 1), (2, 1)],
           positional(use_causal_mask=True), seed=24, weights=uniform_weights)
model_case("mha_rank2_causal_features", lambda: M(3, 2, attention_axes=1), [(2, 2), (2, 4)],
           positional(use_causal_mask=True, return_attention_scores=True), seed=25, weights=uniform_weights)
invalid_case("mha_rank2_sliding_window_features", lambda: M(3, 2, attention_axes=1, sliding_window=2),
             [(2, 2), (2, 4)], positional())
invalid_case("mha_rank4_causal", lambda: M(2, 3), [(2, 2, 3, 4), (2, 2, 5, 4)],
             positional(use_causal_mask=True))

# --- GroupedQueryAttention -------------------------------------------------------------------
G = layers.GroupQueryAttention
for seed in (0, 1):
    model_case(f"gqa_basic_s{seed}", lambda: G(3, 4, 2), [(2, 3, 4), (2, 5, 4)], positional(), seed=seed,
               weights=uniform_weights)
model_case("gqa_key", lambda: G(2, 4, 1), [(2, 3, 4), (2, 5, 4), (2, 5, 6)], positional(), seed=2,
           weights=uniform_weights)
model_case("gqa_scores", lambda: G(3, 4, 2), [(2, 3, 4), (2, 5, 4)], positional(return_attention_scores=True),
           seed=3, weights=uniform_weights)
model_case("gqa_causal", lambda: G(3, 2, 2), [(2, 4, 4)], self_attention(use_causal_mask=True), seed=4,
           weights=uniform_weights)
model_case("gqa_causal_scores", lambda: G(3, 6, 3), [(2, 4, 4), (2, 3, 4)],
           positional(use_causal_mask=True, return_attention_scores=True), seed=5, weights=uniform_weights)
model_case("gqa_gate_no_bias", lambda: G(2, 4, 2, use_gate=True, use_bias=False), [(2, 3, 4), (2, 5, 4)],
           positional(), seed=6)
model_case("gqa_dropout", lambda: G(3, 4, 4, dropout=0.2), [(2, 3, 4), (2, 5, 4)], positional(), seed=7,
           weights=uniform_weights)
model_case("gqa_sliding_window", lambda: G(2, 2, 1, sliding_window=2), [(2, 5, 4)], self_attention(),
           seed=8, weights=uniform_weights)
masked_case("gqa_masked_fused", lambda: G(2, 4, 2), [TOK_Q, TOK_V], positional(), seed=8)
masked_case("gqa_masked_scores", lambda: G(2, 4, 2), [TOK_Q, TOK_V], positional(return_attention_scores=True),
            seed=8)

invalid_case("gqa_heads_not_divisible", lambda: G(3, 4, 2), [(2, 3, 4), (2, 5, 4)], positional(),
             patch={"num_query_heads": 3})
invalid_case("gqa_no_kv_heads", lambda: G(3, 4, 2), [(2, 3, 4), (2, 5, 4)], positional(),
             patch={"num_key_value_heads": 0})
invalid_case("gqa_head_dim_zero", lambda: G(3, 4, 2), [(2, 3, 4), (2, 5, 4)], positional(),
             patch={"head_dim": 0})
invalid_case("gqa_value_features_differ", lambda: G(3, 4, 2), [(2, 3, 4), (2, 5, 4)], positional(),
             feed=[(2, 3, 4), (2, 5, 6)])
invalid_case("gqa_rank4", lambda: G(3, 4, 2), [(2, 3, 4), (2, 5, 4)], positional(),
             feed=[(2, 2, 3, 4), (2, 2, 5, 4)])


# --- Mask arguments of the multi-head layers ---------------------------------------------------
# Mask tensors passed to the call (`query_mask`, `value_mask`, `key_mask`, `attention_mask`)
# come from extra integer inputs, passed as they are (Keras casts them to bool) or compared
# with 0 first. `MultiHeadAttention` ignores an explicit `query_mask` (it reads the query's
# Keras mask instead); `GroupQueryAttention` uses it.


def in_layer_order(inputs, outputs):
    """The model of `inputs` and `outputs`, its inputs listed in the order its config lists
    their layers (inputs feeding operations come first there; the harness's worker gives input
    layers their dtypes in that order), and where each input went."""
    names = [t._keras_history.operation.name for t in inputs]
    listed = [l.name for l in keras.Model(inputs, outputs).layers if isinstance(l, layers.InputLayer)]
    order = [names.index(n) for n in listed]
    return keras.Model([inputs[i] for i in order], outputs), order


def mask_args_model(make_layer, shapes, masks, call, weights=None, seed=0, dtype=F64):
    """Float inputs of `shapes`, integer inputs shaped as the arrays `masks`, and the layer
    called as `call(layer, tensors, mask_inputs)`; with the order of the model's inputs (see
    `in_layer_order`), filled in when it is built."""
    order = []

    def build():
        ins = _inputs(shapes, dtype)
        mins = [keras.Input(batch_shape=(None,) + m.shape[1:], dtype="int32") for m in masks]
        layer = make_layer()
        model, order[:] = in_layer_order(ins + mins, call(layer, ins, mins))
        if weights is not None:
            layer.set_weights(weights(layer, np.random.default_rng(seed + 1)))
        return model

    return build, order


def mask_args_arrays(build, order, shapes, masks, seed):
    build()
    arrays = common.inputs_for(shapes, seed) + [m.astype("int32") for m in masks]
    return [arrays[i] for i in order]


def mask_args_case(name, make_layer, shapes, masks, call, seed=0, weights=uniform_weights, dtype=F64):
    build, order = mask_args_model(make_layer, shapes, masks, call, weights, seed, dtype)
    arrays = mask_args_arrays(build, order, shapes, masks, seed)
    valid_model(name, build, arrays, seed=seed, dtype=dtype)


def mask_args_invalid(name, make_layer, shapes, masks, call, seed=0):
    build, order = mask_args_model(make_layer, shapes, masks, call, seed=seed)
    invalid_model(name, build, mask_args_arrays(build, order, shapes, masks, seed), seed=seed)


def nonzero(m):
    return keras.ops.not_equal(m, 0)


# (B=3, T=4) and (B=3, S=5) padding masks; a (B, T, S) attention mask of -1, 0, 1, 2.
QM = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 1, 0, 1]])
VM = np.array([[1, 0, 1, 1, 0], [1, 1, 1, 1, 1], [0, 0, 1, 0, 0]])
KM = np.array([[1, 1, 1, 0, 1], [0, 1, 1, 1, 1], [1, 1, 1, 1, 1]])
AM = np.random.default_rng(30).integers(-1, 3, (3, 4, 5))
QS, VS, KS = (3, 4, 4), (3, 5, 6), (3, 5, 3)

mask_args_case("mha_value_mask_fused", lambda: M(2, 3), [QS, VS], [VM],
               lambda l, t, m: l(*t, value_mask=nonzero(m[0])), seed=31)
mask_args_case("mha_query_value_masks_scores", lambda: M(2, 3), [QS, VS], [QM, VM],
               lambda l, t, m: l(*t, query_mask=nonzero(m[0]), value_mask=m[1], return_attention_scores=True),
               seed=32)
mask_args_case("mha_masks_positional", lambda: M(2, 2), [QS, VS, KS], [QM, VM, KM],
               lambda l, t, m: l(*t, *m, return_attention_scores=True), seed=33)
mask_args_case("mha_attention_mask_fused", lambda: M(2, 3), [QS, VS], [AM],
               lambda l, t, m: l(*t, attention_mask=m[0]), seed=34)
mask_args_case("mha_attention_mask_causal_scores", lambda: M(2, 3), [QS, VS], [AM],
               lambda l, t, m: l(*t, attention_mask=m[0], use_causal_mask=True, return_attention_scores=True),
               seed=35)
mask_args_case("mha_attention_mask_sliding_window", lambda: M(2, 3, sliding_window=2), [QS, VS], [AM, VM],
               lambda l, t, m: l(*t, attention_mask=m[0], value_mask=m[1]), seed=36)


def keras_and_explicit_masks():
    """Embedded (masked) query and value, an explicit key mask and attention mask, causal."""
    tq = keras.Input(batch_shape=(None, 4), dtype="int32")
    tv = keras.Input(batch_shape=(None, 5), dtype="int32")
    am = keras.Input(batch_shape=(None, 4, 5), dtype="int32")
    km = keras.Input(batch_shape=(None, 5), dtype="int32")
    q = layers.Embedding(6, 4, mask_zero=True)(tq)
    v = layers.Embedding(6, 4, mask_zero=True)(tv)
    out = M(2, 3)(q, v, key_mask=km, attention_mask=am, use_causal_mask=True, return_attention_scores=True)
    return keras.Model([tq, tv, am, km], out)


valid_model("mha_keras_and_explicit_masks", keras_and_explicit_masks,
            [TOK_Q.astype("int32"), TOK_V.astype("int32"), AM.astype("int32"), KM.astype("int32")], seed=37)

mask_args_case("gqa_query_mask_fused", lambda: G(2, 4, 2), [QS, (3, 5, 4)], [QM],
               lambda l, t, m: l(*t, query_mask=nonzero(m[0])), seed=38)
mask_args_case("gqa_masks_scores", lambda: G(2, 4, 2), [QS, (3, 5, 4), KS], [QM, VM, KM],
               lambda l, t, m: l(*t, query_mask=m[0], value_mask=m[1], key_mask=m[2], return_attention_scores=True),
               seed=39)
# An attention mask alone is handed uncast to the explicit path's Softmax (kept where > 0.5:
# the -1s are masked) but cast to bool on the fused path (kept where non-zero).
mask_args_case("gqa_attention_mask_alone_scores", lambda: G(2, 4, 2), [QS, (3, 5, 4)], [AM],
               lambda l, t, m: l(*t, attention_mask=m[0], return_attention_scores=True), seed=40)
mask_args_case("gqa_attention_mask_alone_fused", lambda: G(2, 4, 2), [QS, (3, 5, 4)], [AM],
               lambda l, t, m: l(*t, attention_mask=m[0]), seed=41)
mask_args_case("gqa_attention_mask_causal", lambda: G(2, 4, 2), [QS, (3, 5, 4)], [AM],
               lambda l, t, m: l(*t, attention_mask=m[0], use_causal_mask=True), seed=42)

# Masks that do not fit: a value mask of the wrong length, an attention mask of the wrong
# key length (Softmax refuses it; the fused path fails in TF's `where`).
BAD_VM = np.ones((3, 6))
BAD_AM = np.ones((3, 4, 6))
mask_args_invalid("mha_value_mask_too_long", lambda: M(2, 3), [QS, VS], [BAD_VM],
                  lambda l, t, m: l(*t, value_mask=m[0], return_attention_scores=True))
mask_args_invalid("mha_attention_mask_too_long_fused", lambda: M(2, 3), [QS, VS], [BAD_AM],
                  lambda l, t, m: l(*t, attention_mask=m[0]))
mask_args_invalid("mha_attention_mask_too_long_scores", lambda: M(2, 3), [QS, VS], [BAD_AM],
                  lambda l, t, m: l(*t, attention_mask=m[0], return_attention_scores=True))
mask_args_invalid("gqa_attention_mask_too_long_fused", lambda: G(2, 4, 2), [QS, (3, 5, 4)], [BAD_AM],
                  lambda l, t, m: l(*t, attention_mask=m[0]))
mask_args_invalid("gqa_key_mask_too_long_scores", lambda: G(2, 4, 2), [QS, (3, 5, 4)], [BAD_VM],
                  lambda l, t, m: l(*t, key_mask=m[0], return_attention_scores=True))
mask_args_invalid("att_explicit_value_mask_too_long", A, [(3, 4, 3), (3, 5, 3)], [QM, BAD_VM],
                  lambda l, t, m: l(t, mask=[nonzero(m[0]), nonzero(m[1])]))

write_all("attention")
