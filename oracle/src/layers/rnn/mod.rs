//! Recurrent layers, their cells, and the wrappers over layers (Bidirectional, TimeDistributed).

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[];
