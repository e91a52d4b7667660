//! The model language of semfuzz.
//!
//! A [`Case`] is one self-contained test: a Keras 3 functional (or sequential) model config,
//! its weights and its inputs, read from and written to the `semfuzz-case/1` JSON format.
//! The layer `config` of each layer stays JSON data at this level; typed parameters and the
//! reference semantics of each layer class build on top of it.

// A `Violation` is the oracle's main product, returned as often as `Ok` in the repair loop;
// boxing it would add an allocation per check for nothing.
#![allow(clippy::result_large_err)]

pub mod activations;
pub mod backend;
pub mod bounded;
pub mod case;
pub mod check;
pub mod diagnose;
pub mod dtype;
pub mod interval;
pub mod layers;
mod operation_names;
pub mod params;
pub mod release;
pub mod tolerance;
pub mod triggers;
pub mod violation;

pub use backend::Backend;
pub use case::{Case, CaseError, CaseErrorKind};
pub use check::{CheckError, check, eval};
pub use dtype::DType;
pub use violation::{Category, Tag, Unsupported, Violation};
