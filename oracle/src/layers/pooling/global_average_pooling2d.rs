//! `keras.layers.GlobalAveragePooling2D`: the mean over the 2 spatial axes (kept as size 1 with
//! `keepdims`).

use super::Reduce;

pooling_class!(
    GlobalAveragePooling2D,
    "GlobalAveragePooling2D",
    global,
    2,
    Reduce::Average
);
