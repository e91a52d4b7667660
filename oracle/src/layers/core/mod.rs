//! Core layers.

pub mod dense;
pub mod identity;
