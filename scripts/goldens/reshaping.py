"""Golden cases for the reshaping layers. See common.py."""

import contextlib

import numpy as np

import common
from common import invalid, valid, write_all
from keras import layers


@contextlib.contextmanager
def specials(values):
    """Sets the first inputs' leading elements to `values` (inf, nan, huge) in the cases
    made inside the block."""
    plain = common.inputs_for

    def patched(shapes, seed, dist="normal"):
        arrays = plain(shapes, seed, dist)
        flat = arrays[0].reshape(-1)
        flat[: len(values)] = values
        return arrays

    common.inputs_for = patched
    try:
        yield
    finally:
        common.inputs_for = plain


CF = "channels_first"

# Reshape
valid("reshape_2d", lambda: layers.Reshape((3, 4)), [(2, 12)])
valid("reshape_infer_first", lambda: layers.Reshape((-1, 3)), [(2, 2, 6)])
valid("reshape_infer_middle", lambda: layers.Reshape((2, -1, 2)), [(2, 3, 4)])
valid("reshape_to_rank1", lambda: layers.Reshape((-1,)), [(3, 2, 2, 3)])
valid("reshape_same", lambda: layers.Reshape((4, 3)), [(2, 4, 3)])
valid("reshape_ones", lambda: layers.Reshape((1, 6, 1)), [(2, 6)])
valid("reshape_empty_infer", lambda: layers.Reshape((-1, 3)), [(2, 0, 3)])
valid("reshape_empty_zero", lambda: layers.Reshape((0, 5)), [(2, 3, 0)])
invalid("reshape_size_mismatch", lambda: layers.Reshape((3, 4)), [(2, 12)], {"target_shape": [5, 2]})
invalid("reshape_not_divisible", lambda: layers.Reshape((3, 4)), [(2, 12)], {"target_shape": [-1, 5]})
invalid("reshape_two_unknown", lambda: layers.Reshape((3, 4)), [(2, 12)], {"target_shape": [-1, -1]})
invalid("reshape_negative", lambda: layers.Reshape((3, 4)), [(2, 12)], {"target_shape": [-3, 4]})
invalid("reshape_zero_next_to_unknown", lambda: layers.Reshape((0, 3)), [(2, 0, 3)], {"target_shape": [0, -1]})
invalid("reshape_other_input", lambda: layers.Reshape((3, 4)), [(2, 12)], {}, feed=[(2, 10)])

# Flatten
valid("flatten_rank4", lambda: layers.Flatten(), [(2, 3, 2, 4)])
valid("flatten_rank4_cf", lambda: layers.Flatten(data_format=CF), [(2, 3, 2, 4)])
valid("flatten_rank3_cf", lambda: layers.Flatten(data_format=CF), [(2, 4, 5)])
valid("flatten_rank2_cf", lambda: layers.Flatten(data_format=CF), [(3, 5)])
valid("flatten_rank1", lambda: layers.Flatten(), [(4,)])
valid("flatten_rank5_cf", lambda: layers.Flatten(data_format=CF), [(1, 2, 3, 1, 4)])
valid("flatten_empty_axis", lambda: layers.Flatten(), [(2, 0, 3)])
invalid("flatten_bad_format", lambda: layers.Flatten(), [(2, 3)], {"data_format": "channels_middle"})

# Permute
valid("permute_swap", lambda: layers.Permute((2, 1)), [(2, 3, 4)])
valid("permute_rotate", lambda: layers.Permute((3, 1, 2)), [(2, 2, 3, 4)])
valid("permute_identity", lambda: layers.Permute((1, 2, 3)), [(1, 2, 3, 4)])
valid("permute_rank5", lambda: layers.Permute((4, 2, 1, 3)), [(1, 2, 3, 1, 4)])
valid("permute_one_axis", lambda: layers.Permute((1,)), [(2, 5)])
invalid("permute_repeated", lambda: layers.Permute((2, 1)), [(2, 3, 4)], {"dims": [1, 1]})
invalid("permute_zero_based", lambda: layers.Permute((2, 1)), [(2, 3, 4)], {"dims": [0, 1]})
invalid("permute_rank_mismatch", lambda: layers.Permute((2, 1)), [(2, 3, 4)], {}, feed=[(2, 3, 4, 5)])

# RepeatVector
valid("repeat_vector", lambda: layers.RepeatVector(3), [(2, 4)])
valid("repeat_vector_once", lambda: layers.RepeatVector(1), [(3, 2)])
valid("repeat_vector_empty_features", lambda: layers.RepeatVector(2), [(2, 0)])
invalid("repeat_vector_zero", lambda: layers.RepeatVector(3), [(2, 4)], {"n": 0})
invalid("repeat_vector_float", lambda: layers.RepeatVector(3), [(2, 4)], {"n": 2.0})
invalid("repeat_vector_rank3", lambda: layers.RepeatVector(3), [(2, 4)], {}, feed=[(2, 4, 1)])

# Cropping1D
valid("cropping1d_default", lambda: layers.Cropping1D(), [(2, 5, 3)])
valid("cropping1d_before", lambda: layers.Cropping1D((2, 0)), [(2, 5, 3)])
valid("cropping1d_after", lambda: layers.Cropping1D((0, 3)), [(2, 5, 3)])
valid("cropping1d_none", lambda: layers.Cropping1D(0), [(2, 4, 2)])
valid("cropping1d_to_one", lambda: layers.Cropping1D((1, 2)), [(2, 4, 2)])
invalid("cropping1d_everything", lambda: layers.Cropping1D(), [(2, 4, 2)], {"cropping": [2, 2]})
invalid("cropping1d_negative", lambda: layers.Cropping1D(), [(2, 4, 2)], {"cropping": [-1, 1]})
invalid("cropping1d_empty_input", lambda: layers.Cropping1D(0), [(2, 4, 2)], {}, feed=[(2, 0, 2)])

# Cropping2D
valid("cropping2d_pairs", lambda: layers.Cropping2D(((1, 2), (0, 1))), [(2, 5, 4, 3)])
valid("cropping2d_pairs_cf", lambda: layers.Cropping2D(((1, 2), (0, 1)), data_format=CF), [(2, 3, 5, 4)])
valid("cropping2d_int", lambda: layers.Cropping2D(1), [(1, 4, 5, 2)])
valid("cropping2d_symmetric", lambda: layers.Cropping2D((1, 0)), [(1, 4, 5, 2)])
valid("cropping2d_default", lambda: layers.Cropping2D(), [(1, 3, 3, 2)])
valid("cropping2d_after_only_cf", lambda: layers.Cropping2D(((0, 1), (0, 2)), data_format=CF), [(1, 2, 3, 4)])
invalid("cropping2d_all_rows", lambda: layers.Cropping2D(1), [(1, 4, 5, 2)], {"cropping": [[2, 2], [0, 0]]})
invalid("cropping2d_all_columns_cf", lambda: layers.Cropping2D(1, data_format=CF), [(1, 2, 4, 5)],
        {"cropping": [[0, 0], [3, 2]]})
invalid("cropping2d_negative", lambda: layers.Cropping2D(1), [(1, 4, 5, 2)], {"cropping": -1})
invalid("cropping2d_three_entries", lambda: layers.Cropping2D(1), [(1, 4, 5, 2)], {"cropping": [1, 1, 1]})
invalid("cropping2d_rank3", lambda: layers.Cropping2D(1), [(1, 4, 5, 2)], {}, feed=[(1, 4, 5)])

# Cropping3D
valid("cropping3d_default", lambda: layers.Cropping3D(), [(1, 3, 4, 3, 2)])
valid("cropping3d_pairs_cf", lambda: layers.Cropping3D(((1, 0), (0, 1), (1, 1)), data_format=CF),
      [(1, 2, 3, 3, 4)])
valid("cropping3d_symmetric", lambda: layers.Cropping3D((0, 1, 0)), [(2, 2, 3, 2, 2)])
invalid("cropping3d_everything", lambda: layers.Cropping3D(), [(1, 3, 4, 3, 2)],
        {"cropping": [[0, 0], [2, 2], [0, 0]]})
invalid("cropping3d_negative_entry", lambda: layers.Cropping3D(), [(1, 3, 4, 3, 2)],
        {"cropping": [[0, 0], [1, -1], [0, 0]]})

# ZeroPadding1D/2D/3D
valid("zero_padding1d_default", lambda: layers.ZeroPadding1D(), [(2, 3, 2)])
valid("zero_padding1d_pair_cf", lambda: layers.ZeroPadding1D((0, 2), data_format=CF), [(2, 2, 3)])
valid("zero_padding1d_none", lambda: layers.ZeroPadding1D(0), [(2, 3, 2)])
valid("zero_padding1d_empty_input", lambda: layers.ZeroPadding1D((1, 2)), [(2, 0, 2)])
invalid("zero_padding1d_negative", lambda: layers.ZeroPadding1D(), [(2, 3, 2)], {"padding": [1, -1]})
valid("zero_padding2d_default", lambda: layers.ZeroPadding2D(), [(1, 3, 2, 2)])
valid("zero_padding2d_pairs", lambda: layers.ZeroPadding2D(((1, 0), (2, 3))), [(1, 3, 2, 2)])
valid("zero_padding2d_pairs_cf", lambda: layers.ZeroPadding2D(((1, 0), (2, 3)), data_format=CF), [(1, 2, 3, 2)])
valid("zero_padding2d_symmetric", lambda: layers.ZeroPadding2D((0, 2)), [(2, 2, 2, 1)])
invalid("zero_padding2d_negative_int", lambda: layers.ZeroPadding2D(), [(1, 4, 4, 1)], {"padding": -1})
invalid("zero_padding2d_negative_entry", lambda: layers.ZeroPadding2D(), [(1, 4, 4, 1)],
        {"padding": [[0, 0], [-1, 2]]})
invalid("zero_padding2d_rank5", lambda: layers.ZeroPadding2D(), [(1, 4, 4, 1)], {}, feed=[(1, 4, 4, 1, 1)])
valid("zero_padding3d_default", lambda: layers.ZeroPadding3D(), [(1, 2, 2, 2, 2)])
valid("zero_padding3d_pairs_cf", lambda: layers.ZeroPadding3D(((0, 1), (2, 0), (1, 1)), data_format=CF),
      [(1, 2, 2, 3, 2)])
invalid("zero_padding3d_negative_int", lambda: layers.ZeroPadding3D(), [(1, 3, 3, 3, 1)], {"padding": -1})

# UpSampling1D
valid("up_sampling1d_default", lambda: layers.UpSampling1D(), [(2, 3, 2)])
valid("up_sampling1d_three", lambda: layers.UpSampling1D(3), [(2, 3, 2)])
valid("up_sampling1d_one", lambda: layers.UpSampling1D(1), [(2, 3, 2)])
valid("up_sampling1d_empty_steps", lambda: layers.UpSampling1D(2), [(2, 0, 2)])
invalid("up_sampling1d_zero", lambda: layers.UpSampling1D(), [(2, 3, 2)], {"size": 0})
invalid("up_sampling1d_tuple", lambda: layers.UpSampling1D(), [(2, 3, 2)], {"size": [2]})

# UpSampling2D, nearest
valid("up_sampling2d_nearest", lambda: layers.UpSampling2D((2, 3)), [(1, 3, 2, 2)])
valid("up_sampling2d_nearest_cf", lambda: layers.UpSampling2D((2, 3), data_format=CF), [(1, 2, 3, 2)])
valid("up_sampling2d_nearest_one", lambda: layers.UpSampling2D(1), [(2, 2, 2, 1)])
valid("up_sampling2d_nearest_empty", lambda: layers.UpSampling2D(2), [(1, 0, 2, 1)])
# UpSampling2D, bilinear: TF's float32 ResizeBilinear (half-pixel centers), cast back.
valid("up_sampling2d_bilinear", lambda: layers.UpSampling2D(2, interpolation="bilinear"), [(2, 3, 4, 1)])
valid("up_sampling2d_bilinear_3ch", lambda: layers.UpSampling2D((3, 2), interpolation="bilinear"), [(1, 3, 2, 3)])
valid("up_sampling2d_bilinear_cf", lambda: layers.UpSampling2D((3, 2), data_format=CF, interpolation="bilinear"),
      [(1, 2, 3, 4)])
valid("up_sampling2d_bilinear_one_axis", lambda: layers.UpSampling2D((1, 3), interpolation="bilinear"),
      [(1, 2, 3, 2)])
valid("up_sampling2d_bilinear_identity", lambda: layers.UpSampling2D(1, interpolation="bilinear"), [(1, 3, 3, 2)])
valid("up_sampling2d_bilinear_single_pixel", lambda: layers.UpSampling2D((4, 5), interpolation="bilinear"),
      [(2, 1, 1, 2)])
valid("up_sampling2d_bilinear_large_factor", lambda: layers.UpSampling2D((7, 3), interpolation="bilinear"),
      [(1, 2, 3, 1)])
valid("up_sampling2d_bilinear_f32", lambda: layers.UpSampling2D((3, 2), interpolation="bilinear"),
      [(1, 3, 3, 2)], dtype="float32")
with specials([np.inf, -np.inf, np.nan, 1e39]):
    valid("up_sampling2d_bilinear_specials", lambda: layers.UpSampling2D(2, interpolation="bilinear"),
          [(1, 3, 3, 1)])
with specials([np.inf, np.nan, -1e39, 1e-50]):
    # Factors of 1 still run the kernel (skip_resize_if_same=False): a float32 round trip.
    valid("up_sampling2d_bilinear_identity_specials", lambda: layers.UpSampling2D(1, interpolation="bilinear"),
          [(1, 2, 2, 1)])
with specials([0.5, 2.0, 1.0, np.inf]):
    # Keras's saturate_cast clips the float32 result to the float32 range: inf becomes f32::MAX.
    valid("up_sampling2d_bilinear_inf_saturates", lambda: layers.UpSampling2D(2, interpolation="bilinear"),
          [(1, 2, 2, 1)])
    valid("up_sampling2d_bilinear_inf_f32", lambda: layers.UpSampling2D(2, interpolation="bilinear"),
          [(1, 2, 2, 1)], dtype="float32")
invalid("up_sampling2d_unknown_interpolation", lambda: layers.UpSampling2D(2), [(1, 2, 2, 1)],
        {"interpolation": "cubic"})
invalid("up_sampling2d_bilinear_empty", lambda: layers.UpSampling2D(2, interpolation="bilinear"), [(1, 2, 2, 1)],
        {}, feed=[(1, 0, 2, 1)])
invalid("up_sampling2d_bilinear_no_channels", lambda: layers.UpSampling2D(2, interpolation="bilinear"),
        [(1, 2, 2, 1)], {}, feed=[(1, 2, 2, 0)])
invalid("up_sampling2d_zero", lambda: layers.UpSampling2D(2), [(1, 2, 2, 1)], {"size": [2, 0]})

# UpSampling3D
valid("up_sampling3d", lambda: layers.UpSampling3D((2, 1, 3)), [(1, 2, 2, 2, 2)])
valid("up_sampling3d_cf", lambda: layers.UpSampling3D((1, 2, 2), data_format=CF), [(1, 2, 2, 3, 2)])
invalid("up_sampling3d_negative", lambda: layers.UpSampling3D(), [(1, 2, 2, 2, 1)], {"size": -2})
invalid("up_sampling3d_rank4", lambda: layers.UpSampling3D(), [(1, 2, 2, 2, 1)], {}, feed=[(1, 2, 2, 2)])

write_all("reshaping")
