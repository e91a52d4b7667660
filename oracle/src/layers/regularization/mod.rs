//! Regularization layers: the dropout and noise family, identity at inference, and ActivityRegularization.

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[];
