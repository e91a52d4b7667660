//! Activation layers.

#[allow(clippy::module_inception)] // the file of the `Activation` class
pub mod activation;
pub mod relu;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[&activation::ActivationLayer, &relu::ReLU];
