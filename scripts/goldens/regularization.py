"""Golden cases for the regularization layers (Dropout, SpatialDropout1D/2D/3D, GaussianDropout,
GaussianNoise, AlphaDropout, ActivityRegularization: the identity at inference), the
preprocessing layers Rescaling and Normalization, and the core layers Masking and EinsumDense.
See common.py.

Keras bugs recorded as divergences (the reference keeps the exact semantics):
- Rescaling, Normalization (config statistics) and Masking convert Python float constants with
  TF's default conversion, which makes float32 tensors: in float64, `scale=1/255` multiplies by
  float32(1/255), `mask_value=0.1` compares with float32(0.1).
- Normalization does not refresh the statistics it caches when `set_weights` replaces its
  adapted weights (only `adapt`, `build` and loading a saved model do).
- EinsumDense's bias meets the known `keras.ops.add` bias_add bug when its one long axis has
  the size of the output's last axis without being it.
EinsumDense's declared output shape with a left ellipsis over two axes or more after the batch
is reversed (Keras accepts it; the reference calls it semantic).
"""

import json

import numpy as np
from common import _CASES, _build, _case, _describe, inputs_for, invalid, valid, valid_model, write_all
import keras
from keras import layers


def invalid_edit(name, make_layer, input_shapes, edit, seed=0, dtype="float64"):
    """`invalid` with a free edit of the layer's config (to remove keys, which a patch cannot)."""
    keras.utils.set_random_seed(seed)
    keras.backend.clear_session()
    model, layer = _build(make_layer, input_shapes, dtype)
    arrays = inputs_for(input_shapes, seed)
    case = _case(model, layer, arrays, dtype, None)
    for entry in case["model"]["layers"]:
        if entry["name"] == layer.name:
            edit(entry["config"])
            entry.pop("build_config", None)
    try:
        keras.backend.clear_session()
        rebuilt = keras.Model.from_config(json.loads(json.dumps(case["model"])))
        rebuilt(arrays if len(arrays) > 1 else arrays[0], training=False)
        expected = {"keras_accepts": True}
    except Exception as e:  # what Keras says is the point of the case
        expected = {"error": _describe(e)}
    _CASES.append((name, case, expected))


def drop(*keys):
    def edit(config):
        for k in keys:
            config.pop(k, None)
    return edit


def randw(layer, rng):
    return [rng.standard_normal(tuple(w.shape)) for w in layer.weights]


def special(shape, seed=0):
    """Normal values with a NaN, infinities and a negative zero."""
    a = np.random.default_rng(seed).standard_normal(shape)
    flat = a.reshape(-1)
    flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return a


def single(make, shape, dtype=None):
    """Input -> one layer, for valid_model with chosen arrays."""
    def build():
        i = keras.Input(shape[1:], dtype=dtype) if dtype else keras.Input(shape[1:])
        return keras.Model(i, make()(i))
    return build


IDS = np.array([[1, 0, 3, 2], [0, 0, 4, 1], [2, 3, 0, 0]], dtype="int32")


def seq(*after, ids=IDS):
    """Input(int) -> Embedding(mask_zero=True) -> layers in `after`."""
    def build():
        i = keras.Input((ids.shape[1],), dtype="int32")
        x = layers.Embedding(5, 3, mask_zero=True)(i)
        for make in after:
            x = make()(x)
        return keras.Model(i, x)
    return build


# --- Dropout family: the identity at inference ----------------------------------------------
D = layers.Dropout
valid("dropout", lambda: D(0.5), [(2, 5)])
valid("dropout_rate_one", lambda: D(1.0), [(2, 3, 4)])
valid("dropout_rate_zero_any_seed", lambda: D(0.0, seed="x"), [(2, 3)])
valid("dropout_noise_shape", lambda: D(0.3, noise_shape=(None, 1, 3), seed=7), [(2, 4, 3)])
valid("dropout_noise_shape_unchecked_length", lambda: D(0.3, noise_shape=(1, 2, 3, 4)), [(2, 3)])
valid("dropout_batch_only", lambda: D(0.5), [(4,)])
valid("dropout_float32", lambda: D(0.5), [(2, 6)], dist="integers", dtype="float32")
valid_model("dropout_special_values", single(lambda: D(0.2), (2, 3, 4)), [special((2, 3, 4))])
invalid("dropout_rate_negative", lambda: D(0.5), [(2, 3)], {"rate": -0.1})
invalid("dropout_rate_above_one", lambda: D(0.5), [(2, 3)], {"rate": 1.5})
invalid("dropout_rate_string", lambda: D(0.5), [(2, 3)], {"rate": "0.5"})
invalid("dropout_rate_null", lambda: D(0.5), [(2, 3)], {"rate": None})
invalid_edit("dropout_rate_missing", lambda: D(0.5), [(2, 3)], drop("rate"))
invalid("dropout_noise_shape_zero", lambda: D(0.5), [(2, 3)], {"noise_shape": [None, 0]})
invalid("dropout_noise_shape_float", lambda: D(0.5), [(2, 3)], {"noise_shape": [None, 1.0]})
invalid("dropout_noise_shape_string", lambda: D(0.5), [(2, 3)], {"noise_shape": "abc"})
invalid("dropout_noise_shape_int", lambda: D(0.5), [(2, 3)], {"noise_shape": 3})
invalid("dropout_seed_float", lambda: D(0.5), [(2, 3)], {"seed": 1.5})

for n, cls in [(1, layers.SpatialDropout1D), (2, layers.SpatialDropout2D), (3, layers.SpatialDropout3D)]:
    shape = (2,) + (3, 2, 4)[:n] + (3,)
    valid(f"spatial_dropout{n}d", lambda c=cls: c(0.5), [shape])
    if n > 1:
        valid(f"spatial_dropout{n}d_channels_first", lambda c=cls: c(0.2, data_format="channels_first", seed=3),
              [shape])
        invalid(f"spatial_dropout{n}d_data_format", lambda c=cls: c(0.5), [shape], {"data_format": "nhwc"})
    invalid(f"spatial_dropout{n}d_rank_low", lambda c=cls: c(0.5), [shape], {}, feed=[shape[:-1]])
    invalid(f"spatial_dropout{n}d_rank_high", lambda c=cls: c(0.5), [shape], {}, feed=[shape + (2,)])
    invalid(f"spatial_dropout{n}d_trainable_key", lambda c=cls: c(0.5), [shape], {"trainable": True})
    invalid(f"spatial_dropout{n}d_rate", lambda c=cls: c(0.5), [shape], {"rate": 2.0})
invalid("spatial_dropout1d_noise_shape_key", lambda: layers.SpatialDropout1D(0.5), [(2, 3, 4)],
        {"noise_shape": None})
invalid("spatial_dropout1d_seed_string", lambda: layers.SpatialDropout1D(0.5), [(2, 3, 4)], {"seed": "x"})

valid("gaussian_dropout", lambda: layers.GaussianDropout(0.3), [(2, 5)])
valid("gaussian_dropout_rate_one", lambda: layers.GaussianDropout(1.0), [(2, 2, 3)])
invalid("gaussian_dropout_rate", lambda: layers.GaussianDropout(0.3), [(2, 3)], {"rate": 1.1})
valid("gaussian_noise", lambda: layers.GaussianNoise(0.5, seed=1), [(2, 5)])
valid("gaussian_noise_stddev_bounds", lambda: layers.GaussianNoise(1.0), [(3, 2)])
invalid("gaussian_noise_stddev_above_one", lambda: layers.GaussianNoise(0.5), [(2, 3)], {"stddev": 2.0})
invalid("gaussian_noise_stddev_negative", lambda: layers.GaussianNoise(0.5), [(2, 3)], {"stddev": -1.0})
valid("alpha_dropout", lambda: layers.AlphaDropout(0.2), [(2, 5)])
valid("alpha_dropout_noise_shape_unchecked", lambda: layers.AlphaDropout(0.2, noise_shape="abc"), [(2, 3)])
invalid("alpha_dropout_rate", lambda: layers.AlphaDropout(0.2), [(2, 3)], {"rate": -0.5})
valid("activity_regularization", lambda: layers.ActivityRegularization(l1=0.01, l2=0.1), [(2, 4)])
valid("activity_regularization_null", lambda: layers.ActivityRegularization(l1=None, l2=1), [(2, 2, 2)])
invalid("activity_regularization_negative", lambda: layers.ActivityRegularization(), [(2, 3)], {"l1": -1.0})
invalid("activity_regularization_string", lambda: layers.ActivityRegularization(), [(2, 3)], {"l2": "a"})
invalid("activity_regularization_regularizer_key", lambda: layers.ActivityRegularization(), [(2, 3)],
        {"activity_regularizer": None})
invalid("activity_regularization_seed", lambda: layers.ActivityRegularization(), [(2, 3)], {"seed": 1})

# Masks: every class keeps its input's mask (SpatialDropout1D too: Dropout.__init__ sets
# supports_masking); GlobalAveragePooling1D reads it.
GAP = layers.GlobalAveragePooling1D
valid_model("mask_through_spatial_dropout1d", seq(lambda: layers.SpatialDropout1D(0.5), GAP), [IDS])
valid_model("mask_through_dropout", seq(lambda: D(0.5), GAP), [IDS])
valid_model("mask_through_gaussian_noise", seq(lambda: layers.GaussianNoise(0.3), GAP), [IDS])
valid_model("mask_through_alpha_dropout", seq(lambda: layers.AlphaDropout(0.3), GAP), [IDS])
valid_model("mask_through_activity_regularization", seq(lambda: layers.ActivityRegularization(0.1), GAP), [IDS])

# --- Rescaling ---------------------------------------------------------------------------------
R = layers.Rescaling
F32_SCALE = ("Rescaling casts the Python float scale with tf.cast, which converts it to a float32 tensor "
             "first: in float64 the layer multiplies by float32(1/255)")
valid("rescaling", lambda: R(0.5, offset=-1.0), [(2, 3, 4)])
valid("rescaling_per_channel", lambda: R([0.5, 2.0, -1.25], offset=[1.0, 0.0, -0.5]), [(2, 4, 3)])
valid("rescaling_offset_per_channel", lambda: R(2.0, offset=[0.25, -0.75]), [(2, 3, 2)])
valid("rescaling_rank2_scale", lambda: R([[1.0], [-2.0]], offset=0.0), [(2, 2, 3)])
valid("rescaling_integers", lambda: R(3, offset=1), [(2, 5)])
valid("rescaling_numpy_float64", lambda: R(np.array([0.1, 0.2, 0.3]), offset=0.75), [(2, 3)])
valid("rescaling_float32", lambda: R(1.0 / 255, offset=-0.1), [(2, 4)], dtype="float32")
valid("rescaling_f64_constant", lambda: R(1.0 / 255), [(2, 4)], divergence=F32_SCALE)
valid_model("rescaling_special_values", single(lambda: R(-2.0, offset=0.5), (2, 3, 4)), [special((2, 3, 4))])
valid_model("mask_through_rescaling", seq(lambda: R(0.5), GAP), [IDS])
invalid("rescaling_scale_mismatch", lambda: R(1.0), [(2, 4)], {"scale": [1.0, 2.0, 3.0]})
invalid("rescaling_scale_string", lambda: R(1.0), [(2, 4)], {"scale": "a"})
invalid("rescaling_scale_null", lambda: R(1.0), [(2, 4)], {"scale": None})
invalid("rescaling_scale_ragged", lambda: R(1.0), [(2, 4)], {"scale": [[1.0], [1.0, 2.0]]})
invalid("rescaling_scale_beyond_float32", lambda: R(1.0), [(2, 4)], {"scale": 1e300})
invalid_edit("rescaling_offset_missing", lambda: R(1.0), [(2, 4)], drop("offset"))
invalid_edit("rescaling_scale_missing", lambda: R(1.0), [(2, 4)], drop("scale"))
invalid("rescaling_seed", lambda: R(1.0), [(2, 4)], {"seed": 1})
# Keras accepts these, while the output is not of the shape it declares.
invalid("rescaling_scale_grows_axis", lambda: R(1.0), [(2, 3, 1)], {"scale": [1.0, 2.0, 3.0]})
invalid("rescaling_scale_grows_rank", lambda: R(1.0), [(2, 3)], {"scale": [[[2.0]]]})

# --- Normalization -------------------------------------------------------------------------
N = layers.Normalization
F32_STATS = ("Normalization converts config mean/variance with ops.convert_to_tensor, which makes float32 "
             "tensors of Python floats: in float64 it uses float32(0.1) and float32(0.3)")
STALE = ("Normalization caches its statistics in build/adapt (finalize_state); set_weights replaces the "
         "adapted weights without refreshing them, so Keras keeps normalizing with zeros and ones")
ADAPT = np.random.default_rng(5).standard_normal((6, 3, 4)) * 2.0 + 1.0


def adapted(**kw):
    def make():
        layer = N(**kw)
        layer.adapt(ADAPT)
        return layer
    return make


valid("normalization_config", lambda: N(mean=0.5, variance=4.0), [(2, 3)])
valid("normalization_per_channel", lambda: N(mean=[0.5, 1.0, -2.0], variance=[1.0, 4.0, 0.25]), [(2, 4, 3)])
valid("normalization_broadcast_list", lambda: N(mean=[0.5], variance=[2.0]), [(2, 3)])
valid("normalization_axes_12", lambda: N(axis=[1, 2], mean=[[0.5, 1.0, 1.5]], variance=[[1.0, 2.0, 4.0]]),
      [(2, 2, 3)])
valid("normalization_axis_none", lambda: N(axis=None, mean=-1.0, variance=0.25), [(2, 2, 3)])
valid("normalization_axis_neg2", lambda: N(axis=-2, mean=[1.0, 2.0], variance=[9.0, 16.0]), [(2, 2, 3)])
valid("normalization_invert", lambda: N(mean=[1.0, -1.0], variance=[4.0, 0.5], invert=True), [(2, 3, 2)])
valid("normalization_zero_variance", lambda: N(mean=0.5, variance=0.0), [(2, 4)])
valid("normalization_integer_stats", lambda: N(mean=[1, 2, 3], variance=[3, 5, 7]), [(2, 3)])
valid("normalization_float32", lambda: N(mean=[0.1, 0.2], variance=[0.3, 2.0]), [(2, 2)], dtype="float32")
valid("normalization_adapted", adapted(), [(2, 3, 4)])
valid("normalization_adapted_axis_none", adapted(axis=None), [(2, 3, 4)])
valid("normalization_adapted_axes", adapted(axis=(-1, 1)), [(2, 3, 4)])
valid("normalization_adapted_invert", adapted(axis=1, invert=True), [(2, 3, 4)])
valid("normalization_f64_constants", lambda: N(mean=0.1, variance=0.3), [(2, 3)], divergence=F32_STATS)
valid("normalization_set_weights", lambda: N(), [(2, 3)],
      weights=lambda layer, rng: [rng.standard_normal(3), np.abs(rng.standard_normal(3)) + 0.5, np.array(4)],
      divergence=STALE)
valid_model("mask_through_normalization", seq(lambda: N(mean=0.5, variance=2.0), GAP), [IDS])
invalid("normalization_axis_out_of_range", lambda: N(mean=0.0, variance=1.0), [(2, 3)], {"axis": 2})
invalid("normalization_axis_batch", lambda: N(mean=0.0, variance=1.0), [(2, 3)], {"axis": 0})
invalid("normalization_axis_string", lambda: N(mean=0.0, variance=1.0), [(2, 3)], {"axis": "a"})
invalid("normalization_axis_float", lambda: N(mean=0.0, variance=1.0), [(2, 3)], {"axis": 1.0})
invalid("normalization_mean_only", lambda: N(mean=0.0, variance=1.0), [(2, 3)], {"variance": None})
invalid("normalization_shapes_differ", lambda: N(mean=0.0, variance=1.0), [(2, 3)],
        {"mean": [0.0, 1.0, 2.0], "variance": 4.0})
invalid("normalization_mean_rank", lambda: N(mean=0.0, variance=1.0), [(2, 3)],
        {"mean": [[0.0, 1.0, 2.0]], "variance": [[1.0, 1.0, 1.0]]})
invalid("normalization_mean_broadcast", lambda: N(mean=0.0, variance=1.0), [(2, 3)],
        {"mean": [0.0, 1.0], "variance": [1.0, 1.0]})
invalid("normalization_mean_string", lambda: N(mean=0.0, variance=1.0), [(2, 3)], {"mean": "a", "variance": "b"})
invalid("normalization_adapted_duplicate_axes", lambda: N(), [(2, 2, 3)], {"axis": [1, 1]})
invalid("normalization_seed", lambda: N(mean=0.0, variance=1.0), [(2, 3)], {"seed": 1})
# Keras accepts a negative variance (every output it touches is NaN).
invalid("normalization_negative_variance", lambda: N(mean=0.0, variance=1.0), [(2, 3)], {"variance": -4.0})

# --- Masking -------------------------------------------------------------------------------
M = layers.Masking
STEPS = np.array([[[0.0, 0.0], [1.0, 0.0], [np.nan, 0.0], [0.0, -0.0]],
                  [[-0.0, 0.0], [0.5, 0.5], [np.inf, 2.0], [0.0, 3.0]]])
F32_MASK = ("Masking compares with ops.not_equal(inputs, mask_value), which converts the Python float to a "
            "float32 tensor: in float64 a step of 0.1s is not masked by mask_value=0.1")
valid_model("masking", single(M, (2, 4, 2)), [STEPS])
valid_model("masking_value", single(lambda: M(0.5), (2, 4, 2)), [STEPS])
valid_model("masking_rank2", single(M, (3, 2)), [np.array([[0.0, 0.0], [1.0, 0.0], [-0.0, 0.0]])])
valid_model("masking_rank4", single(M, (2, 2, 2, 2)), [np.where(special((2, 2, 2, 2)) > 0.5, 0.0, 1.0)])
valid("masking_no_masked_step", lambda: M(), [(2, 3, 4)])
valid_model("masking_gap1d", lambda: keras.Model(i := keras.Input((4, 2)), GAP()(M()(i))),
            [np.nan_to_num(STEPS, nan=1.0, posinf=2.0)])
valid_model("masking_dropout_gap1d", lambda: keras.Model(i := keras.Input((4, 2)), GAP()(D(0.5)(M(0.5)(i)))),
            [np.nan_to_num(STEPS, nan=1.0, posinf=2.0)])
# In float32 the comparison is with float32(0.1), as are the inputs (written as float32 values).
valid_model("masking_float32_value", single(lambda: M(0.1), (2, 2, 2)),
            [np.array([[[0.1, 0.1], [0.1, 0.2]], [[0.0, 0.1], [0.1, 0.1]]], dtype="float32").astype("float64")],
            dtype="float32")
valid_model("masking_f64_value", single(lambda: M(0.1), (2, 2, 2)),
            [np.array([[[0.1, 0.1], [0.1, 0.2]], [[0.0, 0.1], [0.1, 0.1]]])], divergence=F32_MASK)
invalid("masking_value_string", lambda: M(), [(2, 3, 2)], {"mask_value": "a"})
invalid("masking_value_null", lambda: M(), [(2, 3, 2)], {"mask_value": None})
invalid("masking_seed", lambda: M(), [(2, 3, 2)], {"seed": 1})
# Keras accepts a batch-only input and reduces the mask over the batch.
invalid("masking_batch_only", lambda: M(), [(3, 2)], {}, feed=[(3,)])

# --- EinsumDense ---------------------------------------------------------------------------
E = layers.EinsumDense


def einsum(name, equation, output_shape, shape, **kw):
    valid(f"einsum_{name}", lambda: E(equation, output_shape, **kw), [shape], weights=randw)


einsum("dense", "ab,bc->ac", 4, (2, 3), bias_axes="c")
einsum("sequence", "abc,cd->abd", (None, 4), (2, 5, 3), bias_axes="d")
einsum("sequence_known", "abc,cd->abd", (5, 4), (2, 5, 3), bias_axes="bd")
einsum("bias_inner", "abc,cd->abd", (5, 4), (2, 5, 3), bias_axes="b")
einsum("left_ellipsis", "...b,bc->...c", 4, (2, 5, 3), bias_axes="c")
einsum("left_ellipsis_batch_only", "...b,bc->...c", 4, (2, 3), bias_axes="c")
einsum("left_ellipsis_equal_axes", "...b,bc->...c", 2, (2, 3, 3, 4), bias_axes="c")
einsum("left_ellipsis_two_labels", "...ab,bc->...ac", (5, 4), (2, 2, 5, 3), bias_axes="a")
einsum("left_ellipsis_summed", "...ab,bc->...c", 3, (2, 4, 5, 2))
einsum("right_ellipsis", "ab...,bc->ac...", 4, (2, 3, 5), bias_axes="c")
einsum("right_ellipsis_two", "abc...,cd->abd...", (None, 4), (2, 2, 3, 5), bias_axes="d")
einsum("summed_input_label", "abc,cd->ad", 4, (2, 5, 3))
einsum("transposed_output", "abc,cd->adb", (4, 5), (2, 5, 3), bias_axes="b")
einsum("diagonal_input", "abb,bc->ac", 4, (2, 3, 3))
einsum("diagonal_kernel", "ab,bbc->ac", 2, (2, 3))
einsum("uppercase", "aB,BC->aC", 3, (2, 4), bias_axes="C")
einsum("no_output_axis", "ab,b->a", (), (2, 3))
einsum("relu", "abc,cd->abd", (None, 2), (2, 3, 4), bias_axes="d", activation="relu")
einsum("softmax", "ab,bc->ac", 5, (2, 3), activation="softmax")
einsum("output_zero", "ab,bc->ac", 0, (2, 3))
# keras.ops.add (TF backend) turns `x + bias` into tf.nn.bias_add along the last axis (or axis 1)
# whenever the bias has one axis longer than 1 whose size is that of the output's last axis (or
# axis 1), wherever the bias's axis is: the crashes/mismatch-DepthwiseConv2D-channels-first-bias bug.
BIAS_ADD = ("keras.ops.add on TF uses tf.nn.bias_add(NHWC) when the bias has one axis longer than 1 whose size "
            "equals the output's last axis: EinsumDense's bias of shape (5, 1) lands on the last axis")
valid("einsum_bias_inner_square", lambda: E("abc,cd->abd", (5, 5), bias_axes="b"), [(2, 5, 3)], weights=randw,
      divergence=BIAS_ADD)
valid("einsum_right_ellipsis_bias_square", lambda: E("ab...,bc->ac...", 2, bias_axes="c"), [(2, 3, 2)],
      weights=randw, divergence=BIAS_ADD)
valid("einsum_float32", lambda: E("abc,cd->abd", (None, 4), bias_axes="d"), [(2, 3, 5)], weights=randw,
      dtype="float32")
valid_model("mask_dropped_by_einsum", seq(lambda: E("abc,cd->abd", (None, 2)), GAP), [IDS])


def einsum_bad(name, equation, output_shape, shape, patch, feed=None):
    invalid(f"einsum_{name}", lambda: E(equation, output_shape), [shape], patch, feed=feed)


einsum_bad("form_no_comma", "ab,bc->ac", 4, (2, 3), {"equation": "ab->ac"})
einsum_bad("form_space", "ab,bc->ac", 4, (2, 3), {"equation": "ab, bc->ac"})
einsum_bad("form_three_operands", "ab,bc->ac", 4, (2, 3), {"equation": "ab,bc,cd->ad"})
einsum_bad("form_right_one_letter", "ab,bc->ac", 4, (2, 3), {"equation": "a...,ac->c..."})
einsum_bad("form_left_output", "ab,bc->ac", 4, (2, 3), {"equation": "...ab,bc->ac"})
einsum_bad("form_literal_zero", "ab,bc->ac", 4, (2, 3), {"equation": "0ab,bc->0ac", "output_shape": [None, 4]})
einsum_bad("equation_not_string", "ab,bc->ac", 4, (2, 3), {"equation": 5})
einsum_bad("output_label_unknown", "ab,bc->ac", 4, (2, 3), {"equation": "ab,bc->ad"})
einsum_bad("kernel_label_unknown", "ab,bc->ac", 4, (2, 3), {"equation": "ab,bd->ab", "output_shape": 3})
einsum_bad("bias_label_unknown", "ab,bc->ac", 4, (2, 3), {"bias_axes": "x"})
einsum_bad("bias_empty", "ab,bc->ac", 4, (2, 3), {"bias_axes": ""})
einsum_bad("bias_on_batch", "ab,bc->ac", 4, (2, 3), {"bias_axes": "a"})
einsum_bad("shared_size_mismatch", "abc,cd->abd", (5, 4), (2, 5, 3), {"output_shape": [6, 4]})
einsum_bad("output_shape_short", "abc,cd->abd", (5, 4), (2, 5, 3), {"output_shape": 4})
einsum_bad("input_rank_low", "abc,cd->abd", (5, 4), (2, 5, 3), {}, feed=[(2, 3)])
einsum_bad("input_rank_high", "ab,bc->ac", 4, (2, 3), {}, feed=[(2, 5, 3)])
einsum_bad("left_ellipsis_rank_low", "...abc,cd->...abd", (None, 4), (2, 2, 3), {}, feed=[(2, 3)])
einsum_bad("left_ellipsis_empty", "...ab,bc->...ac", (None, 4), (2, 2, 3), {}, feed=[(2, 3)])
einsum_bad("kernel_size_unknown", "ab,bc->ac", 4, (2, 3), {"output_shape": [None]})
einsum_bad("kernel_on_batch", "ab,bc->ac", 4, (2, 3), {"equation": "ab,ab->ab", "output_shape": [3]})
einsum_bad("diagonal_sizes_differ", "abb,bc->ac", 4, (2, 3, 3), {}, feed=[(2, 3, 2)])
einsum_bad("output_label_repeated", "ab,bc->ac", 4, (2, 3), {"equation": "ab,bc->acc", "output_shape": [4, 4]})
einsum_bad("output_shape_negative", "ab,bc->ac", 4, (2, 3), {"output_shape": -1})
einsum_bad("output_shape_float", "ab,bc->ac", 4, (2, 3), {"output_shape": 2.0})
einsum_bad("output_shape_float_entry", "abc,cd->abd", (5, 4), (2, 5, 3), {"output_shape": [5, 4.0]})
einsum_bad("output_shape_null", "ab,bc->ac", 4, (2, 3), {"output_shape": None})
einsum_bad("output_shape_string", "ab,bc->ac", 4, (2, 3), {"output_shape": "4"})
einsum_bad("seed", "ab,bc->ac", 4, (2, 3), {"seed": 1})
invalid_edit("einsum_output_shape_missing", lambda: E("ab,bc->ac", 4), [(2, 3)], drop("output_shape"))
# Keras accepts these and declares another output shape than the einsum's.
einsum_bad("output_shape_long", "abc,cd->abd", (5, 4), (2, 5, 3), {"output_shape": [5, 4, 7]})
einsum_bad("left_ellipsis_reversed", "...b,bc->...c", 4, (2, 2, 3, 5), {})

write_all("regularization")
