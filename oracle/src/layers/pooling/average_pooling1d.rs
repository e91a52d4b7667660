//! `keras.layers.AveragePooling1D`: the mean over `pool_size` windows of the steps axis, moved
//! by `strides`; with `same` padding a window averages only the input elements it covers.

use super::Reduce;

pooling_class!(
    AveragePooling1D,
    "AveragePooling1D",
    windowed,
    1,
    Reduce::Average
);
