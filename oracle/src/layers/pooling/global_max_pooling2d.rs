//! `keras.layers.GlobalMaxPooling2D`: the maximum over the 2 spatial axes (kept as size 1 with
//! `keepdims`).

use super::Reduce;

pooling_class!(
    GlobalMaxPooling2D,
    "GlobalMaxPooling2D",
    global,
    2,
    Reduce::Max
);
