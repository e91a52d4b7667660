//! Activation layers.

#[allow(clippy::module_inception)] // the file of the `Activation` class
pub mod activation;
pub mod relu;
