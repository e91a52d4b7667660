//! `keras.layers.GlobalAveragePooling3D`: the mean over the 3 spatial axes (kept as size 1 with
//! `keepdims`).

use super::Reduce;

pooling_class!(
    GlobalAveragePooling3D,
    "GlobalAveragePooling3D",
    global,
    3,
    Reduce::Average
);
