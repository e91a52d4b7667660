//! The model language of semfuzz.
//!
//! A [`Case`] is one self-contained test: a Keras 3 functional (or sequential) model config,
//! its weights and its inputs, read from and written to the `semfuzz-case/1` JSON format.
//! The layer `config` of each layer stays JSON data at this level; typed parameters and the
//! reference semantics of each layer class build on top of it.

pub mod case;
pub mod dtype;

pub use case::{Case, CaseError, CaseErrorKind};
pub use dtype::DType;
