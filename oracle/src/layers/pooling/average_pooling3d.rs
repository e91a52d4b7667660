//! `keras.layers.AveragePooling3D`: the mean over `pool_size` windows of the 3 spatial axes,
//! moved by `strides`; with `same` padding a window averages only the input elements it covers.
//! TF has CPU kernels for it in float32 and bfloat16 only.

use super::Reduce;

pooling_class!(
    AveragePooling3D,
    "AveragePooling3D",
    windowed,
    3,
    Reduce::Average
);
