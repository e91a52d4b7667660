//! A patched copy of an installed package put first on the worker's path: the hook through
//! which tests and benchmarks plant faults in Keras (or TensorFlow's Python layer) and check
//! that semfuzz finds them. The environment itself is never changed.

use std::path::{Path, PathBuf};

use crate::env::PythonEnv;

/// The environment variable naming an overlay directory: put first on the worker's
/// `sys.path` when set (see [`PythonEnv::with_overlay`]).
pub const OVERLAY_VAR: &str = "SEMFUZZ_OVERLAY";

/// One planted change: in `file` (relative to site-packages, e.g.
/// `keras/src/layers/activations/relu.py`), the text `find`, which must occur exactly once,
/// becomes `replace`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct Patch {
    pub file: String,
    pub find: String,
    pub replace: String,
}

#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    #[error("no site-packages in the environment of {}", .0.display())]
    NoSitePackages(PathBuf),
    #[error("cannot copy {} to {}: {source}", from.display(), to.display())]
    Copy {
        from: PathBuf,
        to: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot patch {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("patch of {file}: the text to replace occurs {found} times (expected once): {find:?}")]
    NotOnce {
        file: String,
        find: String,
        found: usize,
    },
}

impl PythonEnv {
    /// The environment with `dir` first on the worker's path, so that the packages there
    /// shadow the installed ones.
    pub fn with_overlay(mut self, dir: &Path) -> Self {
        self.overlay = Some(dir.to_owned());
        self
    }

    /// Its site-packages directory (the last one on its path).
    pub fn site_packages(&self) -> Option<PathBuf> {
        self.sys_path
            .iter()
            .rev()
            .find(|p| p.ends_with("site-packages"))
            .map(PathBuf::from)
    }
}

/// Copies the top-level packages that `patches` touch from `env`'s site-packages into `dir`
/// and applies the patches there. Returns `dir`, ready for [`PythonEnv::with_overlay`].
pub fn plant(env: &PythonEnv, dir: &Path, patches: &[Patch]) -> Result<PathBuf, OverlayError> {
    let site = env
        .site_packages()
        .ok_or_else(|| OverlayError::NoSitePackages(env.python.clone()))?;
    let mut packages: Vec<&str> = patches
        .iter()
        .filter_map(|p| p.file.split('/').next())
        .collect();
    packages.sort_unstable();
    packages.dedup();
    for package in packages {
        let to = dir.join(package);
        if !to.exists() {
            copy_tree(&site.join(package), &to)?;
        }
    }
    for p in patches {
        let path = dir.join(&p.file);
        let io = |source| OverlayError::Io {
            path: path.clone(),
            source,
        };
        let text = std::fs::read_to_string(&path).map_err(io)?;
        let found = text.matches(p.find.as_str()).count();
        if found != 1 {
            return Err(OverlayError::NotOnce {
                file: p.file.clone(),
                find: p.find.clone(),
                found,
            });
        }
        std::fs::write(&path, text.replacen(&p.find, &p.replace, 1)).map_err(io)?;
    }
    Ok(dir.to_owned())
}

/// Copies a directory tree of source files (compiled caches left out).
fn copy_tree(from: &Path, to: &Path) -> Result<(), OverlayError> {
    let err = |source| OverlayError::Copy {
        from: from.to_owned(),
        to: to.to_owned(),
        source,
    };
    std::fs::create_dir_all(to).map_err(err)?;
    for e in std::fs::read_dir(from).map_err(err)? {
        let e = e.map_err(err)?;
        let name = e.file_name();
        if name == "__pycache__" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        if e.file_type().map_err(err)?.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|source| OverlayError::Copy {
                from: src.clone(),
                to: dst.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_applies_once_in_a_copy_and_the_original_stays() {
        let root = tempfile::tempdir().unwrap();
        let site = root.path().join("lib/site-packages");
        std::fs::create_dir_all(site.join("pkg/sub")).unwrap();
        std::fs::write(site.join("pkg/sub/m.py"), "x = 1\ny = 2\n").unwrap();
        let env = PythonEnv {
            python: root.path().join("bin/python"),
            version: "3.11".into(),
            sys_path: vec![site.to_string_lossy().into_owned()],
            base_prefix: "/usr".into(),
            overlay: None,
        };
        let out = root.path().join("overlay");
        let patch = |find: &str| Patch {
            file: "pkg/sub/m.py".into(),
            find: find.into(),
            replace: "x = 3".into(),
        };
        plant(&env, &out, &[patch("x = 1")]).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.join("pkg/sub/m.py")).unwrap(),
            "x = 3\ny = 2\n"
        );
        assert_eq!(
            std::fs::read_to_string(site.join("pkg/sub/m.py")).unwrap(),
            "x = 1\ny = 2\n"
        );
        let env = env.with_overlay(&out);
        assert_eq!(env.overlay.as_deref(), Some(out.as_path()));
        // Text that is not there (or not once) is an error naming the file.
        let err = plant(&env, &root.path().join("o2"), &[patch("z = 9")]).unwrap_err();
        assert!(err.to_string().contains("pkg/sub/m.py"), "{err}");
    }
}
