//! Activation layers.

#[allow(clippy::module_inception)] // the file of the `Activation` class
pub mod activation;
pub mod elu;
pub mod leaky_relu;
pub mod prelu;
pub mod relu;
pub mod softmax;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &activation::ActivationLayer,
    &relu::ReLU,
    &leaky_relu::LeakyReLU,
    &prelu::PReLU,
    &elu::ELU,
    &softmax::Softmax,
];
