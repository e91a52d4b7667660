//! `keras.layers.MaxPooling2D`: the maximum over `pool_size` windows of the 2 spatial axes,
//! moved by `strides`, with `valid` or `same` padding.

use super::Reduce;

pooling_class!(MaxPooling2D, "MaxPooling2D", windowed, 2, Reduce::Max);
