//! What a worker reports of a case: each mode's layer outputs or the exception it raised,
//! or how the worker died. Plain data, no Python: the harness decodes it, the judge reads it.

use std::collections::HashMap;

use ndarray::ArrayD;
use serde::{Deserialize, Serialize};

pub use oracle::Backend;

/// An execution mode of a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `model(x, training=False)`, on any backend.
    Eager,
    /// `tf.function(model)` (TensorFlow).
    Graph,
    /// `tf.function(model, jit_compile=True)` (TensorFlow).
    Xla,
    /// `jax.jit` of the model's stateless call, the weights passed as arguments (JAX).
    Jit,
    /// `torch.compile(model)` (PyTorch).
    Compile,
}

impl Mode {
    pub const ALL: [Mode; 5] = [
        Mode::Eager,
        Mode::Graph,
        Mode::Xla,
        Mode::Jit,
        Mode::Compile,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Eager => "eager",
            Mode::Graph => "graph",
            Mode::Xla => "xla",
            Mode::Jit => "jit",
            Mode::Compile => "compile",
        }
    }

    /// The modes `backend` runs a case in, eager first.
    pub fn of(backend: Backend) -> &'static [Mode] {
        match backend {
            Backend::Tensorflow => &[Mode::Eager, Mode::Graph, Mode::Xla],
            Backend::Jax => &[Mode::Eager, Mode::Jit],
            Backend::Torch => &[Mode::Eager, Mode::Compile],
        }
    }

    /// The modes `fuzz` draws from by default on `backend`, the one every run has first:
    /// [`Mode::of`] but Torch's `compile`, whose first call on each new model costs far more
    /// than ten eager runs on a CPU; on JAX, `jit` first (what `predict` and `fit` run, and
    /// half the cost of eager JAX on a new model, which compiles every primitive for its
    /// shapes).
    pub fn fuzz_default(backend: Backend) -> Vec<Mode> {
        match backend {
            Backend::Jax => vec![Mode::Jit, Mode::Eager],
            _ => Mode::of(backend)
                .iter()
                .copied()
                .filter(|m| *m != Mode::Compile)
                .collect(),
        }
    }

    /// Whether the model runs as a traced, compiled function (every mode but eager): its
    /// kernels may fuse and reorder a layer's arithmetic.
    pub fn traced(self) -> bool {
        self != Mode::Eager
    }

    /// Whether a compiler (XLA, Inductor) builds the kernels, which takes longer on a new model.
    pub fn compiles(self) -> bool {
        matches!(self, Mode::Xla | Mode::Jit | Mode::Compile)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!("unknown mode `{s}` (expected eager, graph, xla, jit or compile)")
            })
    }
}

/// A Python exception raised by TensorFlow/Keras while building or running a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PyError {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    /// `build`, `set_weights` or `call`.
    pub phase: String,
    #[serde(default)]
    pub traceback: String,
    /// The layer in whose traced name scope the failing graph node lies, when the worker
    /// could tell (graph and XLA errors name nodes by scope path, which TF may suffix); for
    /// an error raised while the model is built whose message names only a class that
    /// several of the case's layers have, the one that raised it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
    /// Raised by a layer's constructor while the model was read from its config: Keras
    /// constructs every layer of a functional config before it calls (and builds) any, so no
    /// layer had been built yet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub constructor: bool,
}

/// One call's outputs in one mode, by (layer name, call index).
pub type LayerOutputs = HashMap<(String, usize), Vec<ArrayD<f64>>>;

/// What one mode did.
#[derive(Debug, Clone)]
pub enum ModeOutcome {
    Outputs(LayerOutputs),
    /// The error it raised, and the outputs of the calls that had finished before it (eager
    /// only, and only of layers called once; empty in the other modes): a wrong output there
    /// is what a later layer may have raised on.
    Error(PyError, LayerOutputs),
}

/// What TensorFlow did with a case.
#[derive(Debug, Clone)]
pub enum TfOutcome {
    /// It built the model; each requested mode ran or raised.
    Ran {
        modes: Vec<(Mode, ModeOutcome)>,
        /// The built model was reused from the previous case (same config).
        reused: bool,
        /// Seconds the worker spent in Keras/TF on this case (build, weights, every mode),
        /// excluding decoding the request and encoding the answer.
        tf_seconds: f64,
        /// Seconds the worker spent on the request in all (decoding, TF, encoding).
        worker_seconds: f64,
    },
    /// Building the model or setting its weights raised.
    Rejected(PyError),
    /// The worker died by a signal (or exited). `layer` and `mode`: where it was, as it
    /// announced (`mode`: `None` before it started one, while the model was built).
    Crash {
        signal: Option<i32>,
        layer: Option<String>,
        mode: Option<Mode>,
        stderr_tail: String,
    },
    Timeout {
        layer: Option<String>,
        mode: Option<Mode>,
    },
    OutOfMemory {
        layer: Option<String>,
        mode: Option<Mode>,
        rss_mib: u64,
    },
}

/// `SIGSEGV` for 11, and so on.
pub fn signal_name(s: i32) -> String {
    let name = match s {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGFPE => "SIGFPE",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGTRAP => "SIGTRAP",
        _ => return format!("signal {s}"),
    };
    name.to_owned()
}
