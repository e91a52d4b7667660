//! `keras.layers.AveragePooling2D`: the mean over `pool_size` windows of the 2 spatial axes,
//! moved by `strides`; with `same` padding a window averages only the input elements it covers.

use super::Reduce;

pooling_class!(
    AveragePooling2D,
    "AveragePooling2D",
    windowed,
    2,
    Reduce::Average
);
