//! `keras.layers.MaxPooling3D`: the maximum over `pool_size` windows of the 3 spatial axes,
//! moved by `strides`, with `valid` or `same` padding.
//! TF has CPU kernels for it in float32 and bfloat16 only.

use super::Reduce;

pooling_class!(MaxPooling3D, "MaxPooling3D", windowed, 3, Reduce::Max);
