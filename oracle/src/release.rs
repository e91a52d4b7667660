//! The Keras release the reference is evaluated for. The reference models Keras 3.15; where
//! an older release computes a layer otherwise (and not by a bug that release has), the layer
//! file asks [`before`] and models that release too.
//!
//! Like the backend, the release is a context of the evaluation: a process default (the
//! target's, once the worker has said it, [`set_default`]) and, for one evaluation, a thread's
//! own ([`with`]). Unknown (a test without a worker) reads as the release the reference
//! models.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// A Keras release, `major.minor.patch` (a development build's numeric prefix: `3.16.0` for
/// `3.16.0.dev2026...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release(pub u32, pub u32, pub u32);

impl Release {
    /// The release a version string names, from its leading numbers; `None` where it has none.
    pub fn parse(version: &str) -> Option<Release> {
        let mut parts = version
            .split(['.', '-', '+'])
            .map(|p| p.parse::<u32>().ok());
        let major = parts.next().flatten()?;
        let minor = parts.next().flatten().unwrap_or(0);
        let patch = parts.next().flatten().unwrap_or(0);
        Some(Release(major, minor, patch))
    }

    fn pack(r: Option<Release>) -> u64 {
        r.map_or(0, |Release(a, b, c)| {
            1 << 63 | u64::from(a) << 40 | u64::from(b) << 20 | u64::from(c)
        })
    }

    fn unpack(x: u64) -> Option<Release> {
        (x >> 63 == 1).then_some(Release(
            (x >> 40 & 0x7f_ffff) as u32,
            (x >> 20 & 0xf_ffff) as u32,
            (x & 0xf_ffff) as u32,
        ))
    }
}

static DEFAULT: AtomicU64 = AtomicU64::new(0);

// A thread's own release while `with` runs: `None` outside it.
thread_local! {
    static SCOPED: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The release evaluations are for where no [`with`] says otherwise (unknown until set).
pub fn set_default(release: Option<Release>) {
    DEFAULT.store(Release::pack(release), Ordering::Relaxed);
}

/// The release the current evaluation is for; `None` where unknown.
pub fn current() -> Option<Release> {
    Release::unpack(
        SCOPED
            .with(Cell::get)
            .unwrap_or_else(|| DEFAULT.load(Ordering::Relaxed)),
    )
}

/// `f`, with evaluations on this thread for `release`.
pub fn with<R>(release: Option<Release>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPED.with(|s| s.replace(Some(Release::pack(release)))));
    f()
}

/// Whether the evaluation is for a release older than `major.minor` (false where unknown).
pub fn before(major: u32, minor: u32) -> bool {
    current().is_some_and(|r| r < Release(major, minor, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_from_their_leading_numbers_and_scope_to_a_thread() {
        assert_eq!(Release::parse("3.15.1"), Some(Release(3, 15, 1)));
        assert_eq!(
            Release::parse("3.16.0.dev2026120703"),
            Some(Release(3, 16, 0))
        );
        assert_eq!(Release::parse("nightly"), None);
        assert!(!before(3, 7));
        with(Release::parse("3.3.3"), || {
            assert!(before(3, 7));
            assert!(!before(3, 3));
            with(None, || assert!(!before(3, 7)));
            assert_eq!(current(), Some(Release(3, 3, 3)));
        });
        assert_eq!(current(), None);
    }
}
