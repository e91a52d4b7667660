//! Known TensorFlow limitations: rejections that are not bugs of the model or of TF's
//! semantics (a kernel without a CPU implementation for a dtype, an op XLA cannot compile).
//! A matching outcome is counted as one known item instead of being reported again and again.

use crate::run::PyError;

/// (identifier, error type, text the message contains).
const LIMITATIONS: [(&str, &str, &str); 3] = [
    (
        "no-cpu-kernel-for-dtype",
        "NotFoundError",
        "No OpKernel was registered",
    ),
    (
        "no-cpu-kernel-for-dtype",
        "InvalidArgumentError",
        "No OpKernel was registered",
    ),
    (
        "xla-unsupported-op",
        "InvalidArgumentError",
        "Detected unsupported operations when trying to compile graph",
    ),
];

/// The identifier of the known limitation this error is, if any.
pub fn limitation(e: &PyError) -> Option<&'static str> {
    LIMITATIONS
        .iter()
        .find(|(_, kind, text)| e.kind == *kind && e.message.contains(text))
        .map(|(id, _, _)| *id)
}
