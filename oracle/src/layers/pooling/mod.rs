//! Pooling layers (max/average, global, adaptive).

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[];
