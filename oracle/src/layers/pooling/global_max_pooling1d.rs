//! `keras.layers.GlobalMaxPooling1D`: the maximum over the steps axis (kept as size 1 with
//! `keepdims`).

use super::Reduce;

pooling_class!(
    GlobalMaxPooling1D,
    "GlobalMaxPooling1D",
    global,
    1,
    Reduce::Max
);
