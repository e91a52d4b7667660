//! One module per subcommand.

pub mod check;
pub mod export;
pub mod fuzz_self;
pub mod gen_cmd;
pub mod known;
pub mod layers;
pub mod run;
pub mod triage;
pub mod version;

use std::path::PathBuf;
use std::process::Command;

use harness_py::{Harness, PythonEnv, WorkerCommand};
use judge::{Suppressions, Target};
use oracle::Case;

use crate::cli::PythonArgs;
use crate::exit::Failure;

/// A harness on the selected Python environment (its worker starts on first use).
pub fn harness(python: &PythonArgs) -> Result<Harness, Failure> {
    let env = python_env(python)?;
    Ok(Harness::new(worker_command(python)?, env))
}

/// A usage error unless every mode is one of the backend's.
pub fn check_modes(
    backend: harness_py::Backend,
    modes: &[harness_py::Mode],
) -> Result<(), Failure> {
    match modes
        .iter()
        .find(|m| !harness_py::Mode::of(backend).contains(m))
    {
        None => Ok(()),
        Some(m) => Err(Failure::usage(format!(
            "--modes {m}: not a mode of the {backend} backend (it has {})",
            harness_py::Mode::of(backend)
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// How to start a worker for the selected backend: this executable, as `semfuzz __worker`.
/// The backend becomes the one the reference is evaluated for in this process (generation
/// and repair included).
pub fn worker_command(python: &PythonArgs) -> Result<WorkerCommand, Failure> {
    oracle::backend::set_default(python.backend);
    let mut cmd = WorkerCommand::current_exe()
        .map_err(|e| Failure::failed(format!("cannot find the semfuzz executable: {e}")))?;
    cmd.backend = python.backend;
    Ok(cmd)
}

/// What the environment's Keras offers, asked of a worker started for it.
pub fn target_info(
    command: &harness_py::WorkerCommand,
    env: &PythonEnv,
) -> Result<harness_py::TargetInfo, Failure> {
    let mut worker = harness_py::Worker::spawn(command, env)
        .map_err(|e| Failure::failed(format!("cannot start the worker: {e}")))?;
    worker
        .target()
        .map_err(|e| Failure::failed(format!("cannot ask the worker about its target: {e}")))
}

/// On a target other than the release the cases are written for, generation draws only the
/// classes and arguments the target has.
pub fn restrict_generation(target: &harness_py::TargetInfo) {
    use harness_py::target::{CASE_KERAS, bundled};
    if target.versions.keras == CASE_KERAS {
        return;
    }
    let Some(pinned) = bundled(CASE_KERAS) else {
        return;
    };
    let to = &target.offers;
    let lacking = pinned
        .layers
        .iter()
        .filter_map(|(class, sig)| {
            let theirs = to.layers.get(class)?;
            let missing: std::collections::HashSet<String> = sig
                .args
                .keys()
                .filter(|a| !(theirs.has(a) || theirs.kwargs && to.base_layer.has(a)))
                .cloned()
                .collect();
            (!missing.is_empty()).then(|| (class.clone(), missing))
        })
        .collect();
    let filter = generators::target::TargetFilter {
        classes: to.layers.keys().cloned().collect(),
        lacking,
        activations: to.activations.iter().cloned().collect(),
    };
    tracing::info!(
        "generating for {}: {} layer classes",
        target.id(),
        filter.classes.len()
    );
    generators::target::restrict(filter);
}

/// Steers this process's generation away from the layers a kept bug of one of `targets`
/// refuses by their config alone (`judge::Entry::refusal_keys`), as from kept bugs'
/// triggers: a campaign on a release spends no runs on the refusals it is known for.
pub fn avoid_refusals(suppressions: judge::Suppressions, targets: Vec<Target>) {
    generators::target::avoid_refusals(Box::new(move |layer, dtype| {
        suppressions.refusal_keys(layer, dtype, &targets)
    }));
}

/// The selected Python environment, as its interpreter describes it; with the directory
/// `$SEMFUZZ_OVERLAY` names first on its path when that is set (the hook through which tests
/// and benchmarks plant faults in a copy of Keras: `harness_py::overlay`).
pub fn python_env(python: &PythonArgs) -> Result<PythonEnv, Failure> {
    let path =
        PythonEnv::select(python.python.as_deref()).map_err(|e| Failure::usage(e.to_string()))?;
    let env = PythonEnv::probe(&path).map_err(|e| Failure::usage(e.to_string()))?;
    Ok(match std::env::var_os(harness_py::overlay::OVERLAY_VAR) {
        Some(dir) if !dir.is_empty() => {
            tracing::warn!(
                "the worker sees {} first ({} is set): a patched copy of packages",
                std::path::Path::new(&dir).display(),
                harness_py::overlay::OVERLAY_VAR
            );
            env.with_overlay(std::path::Path::new(&dir))
        }
        _ => env,
    })
}

/// The suppression entries the flags select: the built-in ones unless left out, then each
/// `--suppressions` path's. A malformed entry is a usage error naming its file and field.
pub fn suppressions(args: &crate::cli::SuppressionArgs) -> Result<Suppressions, Failure> {
    let mut s = if args.no_builtin_suppressions {
        Suppressions::none()
    } else {
        Suppressions::builtin().map_err(|e| Failure::failed(e.to_string()))?
    };
    for p in &args.suppressions {
        s.add_path(p).map_err(|e| Failure::usage(e.to_string()))?;
    }
    Ok(s)
}

/// The target a worker runs: its Keras and TensorFlow releases, its backend, with TF's oneDNN
/// kernels on or off.
pub fn target(versions: &harness_py::Versions) -> Target {
    Target {
        onednn: versions.onednn,
        ..Target::on(versions.backend, &versions.keras, &versions.tensorflow)
    }
}

/// From now on, the reference is evaluated (validity included) for the Keras release a
/// worker said it runs; called once its handshake is known, beside [`target`].
pub fn evaluate_for_release(versions: &harness_py::Versions) {
    oracle::release::set_default(oracle::release::Release::parse(&versions.keras));
}

/// A `.keras` file that could not be saved or read: semfuzz's own failure (the worker) or
/// bad input (the file, its weights, its inputs).
pub fn keras_failure(e: impl Into<crate::keras_case::KerasCaseError>) -> Failure {
    let e = e.into();
    if e.is_internal() {
        Failure::failed(e.to_string())
    } else {
        Failure::usage(e.to_string())
    }
}

/// Reads every case; the first unreadable one is a usage error naming the file and place.
pub fn read_cases(paths: &[PathBuf]) -> Result<Vec<Case>, Failure> {
    paths
        .iter()
        .map(|p| Case::read(p).map_err(|e| Failure::usage(e.to_string())))
        .collect()
}

/// An address-space limit (`RLIMIT_AS`) on a process about to start.
pub(crate) trait MemoryLimit {
    fn memory_limit(&mut self, bytes: u64) -> &mut Self;
}

impl MemoryLimit for Command {
    fn memory_limit(&mut self, bytes: u64) -> &mut Self {
        use std::os::unix::process::CommandExt as _;
        let limit = libc::rlimit {
            rlim_cur: bytes,
            rlim_max: bytes,
        };
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // setrlimit, which is async-signal-safe.
        unsafe {
            self.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        }
    }
}
