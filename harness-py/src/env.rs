//! The Python environment the worker activates: which interpreter, its version and its
//! `sys.path`, found by asking that interpreter in a subprocess (this process never starts
//! Python itself).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::BUILD_PYTHON_VERSION;

/// The environment variable that selects another Python environment, like `--python`.
pub const PYTHON_VAR: &str = "SEMFUZZ_PYTHON";

#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error(
        "no Python environment selected: pass --python PATH or set {PYTHON_VAR}, or run `make setup` to create the project's own"
    )]
    NoneSelected,
    #[error("Python `{}` cannot be run: {source}", python.display())]
    NotRunnable {
        python: PathBuf,
        source: std::io::Error,
    },
    #[error("Python `{}` failed to describe itself: {stderr}", python.display())]
    ProbeFailed { python: PathBuf, stderr: String },
    #[error(
        "Python `{}` is Python {found}, but this semfuzz was built for Python {built}; rebuild against it with `PYO3_PYTHON={} cargo build --release` (or `make setup PYTHON=python{found}`)",
        python.display(), python.display()
    )]
    VersionMismatch {
        python: PathBuf,
        found: String,
        built: &'static str,
    },
}

/// A Python environment as its interpreter describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonEnv {
    /// The interpreter as given (`.venv/bin/python`); a venv is recognised through it.
    pub python: PathBuf,
    /// `major.minor`, e.g. `3.11`.
    pub version: String,
    /// The interpreter's `sys.path` (site-packages of the venv included).
    pub sys_path: Vec<String>,
    /// `sys.base_prefix`: where the standard library of the embedded interpreter is found.
    pub base_prefix: String,
    /// A directory the worker puts first on its path, before the environment's packages
    /// (a patched copy of some of them: see [`crate::overlay`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<PathBuf>,
}

const PROBE: &str = "import json, sys; print(json.dumps({'version': '%d.%d' % sys.version_info[:2], 'sys_path': [p for p in sys.path if p], 'base_prefix': sys.base_prefix}))";

impl PythonEnv {
    /// The interpreter to use: `cli` (`--python`), else `$SEMFUZZ_PYTHON`, else the one
    /// this binary was built against.
    pub fn select(cli: Option<&Path>) -> Result<PathBuf, EnvError> {
        if let Some(p) = cli {
            return Ok(p.to_owned());
        }
        if let Some(p) = std::env::var_os(PYTHON_VAR).filter(|p| !p.is_empty()) {
            return Ok(PathBuf::from(p));
        }
        crate::build_python()
            .map(PathBuf::from)
            .ok_or(EnvError::NoneSelected)
    }

    /// Asks `python` for its version and `sys.path`, and checks it matches the Python
    /// minor version this binary embeds.
    pub fn probe(python: &Path) -> Result<PythonEnv, EnvError> {
        let out = Command::new(python)
            .args(["-I", "-c", PROBE])
            .output()
            .map_err(|source| EnvError::NotRunnable {
                python: python.to_owned(),
                source,
            })?;
        let failed = |stderr: String| EnvError::ProbeFailed {
            python: python.to_owned(),
            stderr,
        };
        if !out.status.success() {
            return Err(failed(
                String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            ));
        }
        #[derive(Deserialize)]
        struct Probe {
            version: String,
            sys_path: Vec<String>,
            base_prefix: String,
        }
        let p: Probe = serde_json::from_slice(&out.stdout)
            .map_err(|e| failed(format!("unexpected answer ({e})")))?;
        if p.version != BUILD_PYTHON_VERSION {
            return Err(EnvError::VersionMismatch {
                python: python.to_owned(),
                found: p.version,
                built: BUILD_PYTHON_VERSION,
            });
        }
        Ok(PythonEnv {
            python: python.to_owned(),
            version: p.version,
            sys_path: p.sys_path,
            base_prefix: p.base_prefix,
            overlay: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_python_describes_itself() {
        let python = PythonEnv::select(Some(Path::new(crate::build_python().unwrap()))).unwrap();
        let env = PythonEnv::probe(&python).unwrap();
        assert_eq!(env.version, BUILD_PYTHON_VERSION);
        assert!(
            env.sys_path.iter().any(|p| p.ends_with("site-packages")),
            "{env:?}"
        );
    }

    #[test]
    fn a_missing_interpreter_is_a_clear_error() {
        let err = PythonEnv::probe(Path::new("/nonexistent/bin/python")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Python `/nonexistent/bin/python` cannot be run"),
            "{err}"
        );
    }

    #[test]
    fn a_different_minor_version_says_how_to_rebuild() {
        // A fake interpreter that answers the probe as Python 3.99 would.
        let dir = std::env::temp_dir().join(format!("semfuzz-fake-py-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("python");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho '{\"version\": \"3.99\", \"sys_path\": [], \"base_prefix\": \"/x\"}'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Another test's child process, forked while the script was open for writing, can
        // hold it open for a moment (ETXTBSY): the probe is tried again then.
        let mut result = PythonEnv::probe(&fake);
        for _ in 0..50 {
            match &result {
                Err(EnvError::NotRunnable { source, .. })
                    if source.kind() == std::io::ErrorKind::ExecutableFileBusy =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    result = PythonEnv::probe(&fake);
                }
                _ => break,
            }
        }
        let err = result.unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            err.contains("is Python 3.99, but this semfuzz was built for Python"),
            "{err}"
        );
        assert!(err.contains("PYO3_PYTHON="), "{err}");
    }
}
