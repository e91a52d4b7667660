//! The Keras backend the reference is evaluated for. Keras 3 runs one model on TensorFlow,
//! JAX or PyTorch, and where their kernels legitimately differ the layer files model each:
//! TensorFlow's CPU kernels refuse some dtype/layout pairs and take some constants as float32
//! attributes (`LeakyRelu`'s `alpha`); the other backends do neither.
//!
//! The backend is a context of the evaluation: a process default (what the binary's
//! `--backend` says, [`set_default`]) and, for one evaluation, a thread's own ([`with`]).

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::{Deserialize, Serialize};

/// A Keras 3 backend: the framework whose kernels run a case.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    #[default]
    Tensorflow,
    Jax,
    Torch,
}

impl Backend {
    pub const ALL: [Backend; 3] = [Backend::Tensorflow, Backend::Jax, Backend::Torch];

    /// The name `KERAS_BACKEND` takes.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Tensorflow => "tensorflow",
            Backend::Jax => "jax",
            Backend::Torch => "torch",
        }
    }

    /// Whether TensorFlow's CPU kernels run the case (their refusals and float32 attributes
    /// hold).
    pub fn tf_kernels(self) -> bool {
        self == Backend::Tensorflow
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Backend {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Backend::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| format!("unknown backend `{s}` (expected tensorflow, jax or torch)"))
    }
}

static DEFAULT: AtomicU8 = AtomicU8::new(0);

thread_local! {
    static SCOPED: Cell<Option<Backend>> = const { Cell::new(None) };
}

/// The backend evaluations are for where no [`with`] says otherwise (TensorFlow until set).
pub fn set_default(backend: Backend) {
    DEFAULT.store(backend as u8, Ordering::Relaxed);
}

/// The backend the current evaluation is for.
pub fn current() -> Backend {
    SCOPED
        .with(Cell::get)
        .unwrap_or_else(|| match DEFAULT.load(Ordering::Relaxed) {
            1 => Backend::Jax,
            2 => Backend::Torch,
            _ => Backend::Tensorflow,
        })
}

/// `f`, with evaluations on this thread for `backend`.
pub fn with<R>(backend: Backend, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Backend>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPED.with(|s| s.replace(Some(backend))));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_holds_inside_and_is_restored_after() {
        assert_eq!(current(), Backend::Tensorflow);
        let inner = with(Backend::Jax, || (current(), with(Backend::Torch, current)));
        assert_eq!(inner, (Backend::Jax, Backend::Torch));
        assert_eq!(current(), Backend::Tensorflow);
    }

    /// TF's float32 `alpha` attribute and its CPU kernels' refusals hold on TensorFlow only.
    #[test]
    fn tf_kernel_behaviour_holds_on_tensorflow_alone() {
        let slope = |b| with(b, || crate::activations::leaky(-1.0, 0.2));
        assert_eq!(slope(Backend::Tensorflow), -f64::from(0.2f32));
        assert_eq!(slope(Backend::Jax), -0.2);
        let case = crate::Case::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fuzzer/tests/data/conv2d_transpose_float64_channels_first.case.json"
        ))
        .unwrap();
        let on_tf = with(Backend::Tensorflow, || crate::check(&case));
        assert!(
            matches!(&on_tf, Err(crate::CheckError::Invalid(v)) if v.cpu_kernels()),
            "{on_tf:?}"
        );
        assert!(with(Backend::Jax, || crate::check(&case)).is_ok());
    }
}
