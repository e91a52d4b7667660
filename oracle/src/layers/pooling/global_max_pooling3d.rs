//! `keras.layers.GlobalMaxPooling3D`: the maximum over the 3 spatial axes (kept as size 1 with
//! `keepdims`).

use super::Reduce;

pooling_class!(
    GlobalMaxPooling3D,
    "GlobalMaxPooling3D",
    global,
    3,
    Reduce::Max
);
