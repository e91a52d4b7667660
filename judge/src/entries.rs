//! Kept bugs and known limitations as data: one entry per `crashes/<id>/kept.json` (and the
//! limitations in `crashes/limitations.json`), each saying exactly which verdicts it explains.
//! A verdict an entry explains is counted as a hit of that entry instead of reported as a new
//! finding, so an entry is a suppression and must be as narrow as its evidence.
//!
//! The format, field by field, is in `crashes/README.md`. An entry is a scope (the releases
//! and backends it covers) and a list of alternatives (`when`); it explains a verdict when the
//! scope holds and every condition of one alternative does. Conditions read only typed facts:
//! the verdict's kind, mode and [`Evidence`], the layer's class and its config as Keras wrote
//! it, the case's dtype and inputs, and a few named shape predicates ([`Predicate`]) that
//! cannot be data.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use oracle::check::ModelAnalysis;
use oracle::{Case, DType};
use serde::Deserialize;
use serde_json::Value;

use oracle::triggers::{Trigger, TriggerSet};

use crate::evidence::ValueClass;
use crate::outcome::{Backend, Mode};
use crate::predicates::Predicate;
use crate::verdict::{Kind, Verdict};

/// What the judge runs against: the framework's releases and the Keras backend. Entries are
/// scoped by it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    /// Keras's version (`3.15.1`); `None` where not known (a test without a worker).
    pub keras: Option<String>,
    pub tensorflow: Option<String>,
    pub backend: Backend,
    /// Whether TensorFlow runs its oneDNN CPU kernels; `None` where not known (every entry's
    /// `onednn` holds).
    pub onednn: Option<bool>,
}

impl Target {
    /// A TensorFlow-backend target of these releases.
    pub fn tensorflow(keras: &str, tensorflow: &str) -> Self {
        Target::on(Backend::Tensorflow, keras, tensorflow)
    }

    /// A target of these releases on `backend` (`tensorflow` is the TensorFlow installed
    /// beside Keras, whatever the backend).
    pub fn on(backend: Backend, keras: &str, tensorflow: &str) -> Self {
        Target {
            keras: Some(keras.to_owned()),
            tensorflow: Some(tensorflow.to_owned()),
            backend,
            onednn: None,
        }
    }

    /// The TensorFlow backend, releases not known: every release range holds.
    pub fn unknown_tensorflow() -> Self {
        Target {
            keras: None,
            tensorflow: None,
            backend: Backend::Tensorflow,
            onednn: None,
        }
    }
}

/// Why a list of entries could not be read: always names the file, and the field where serde
/// can tell.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("cannot read suppression entry {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: oracle::bounded::ReadError,
    },
    #[error("malformed suppression entry {}: {source}", path.display())]
    Malformed {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("suppression entry {}: {problem}", path.display())]
    Invalid { path: PathBuf, problem: String },
    #[error("suppression entry {}: the id `{id}` is also given by {}", path.display(), other.display())]
    Duplicate {
        id: String,
        path: PathBuf,
        other: PathBuf,
    },
    #[error("no suppression entries in {}: expected <id>/kept.json folders or *.json lists", .0.display())]
    Empty(PathBuf),
}

/// A release range: `from` (inclusive) and `before` (exclusive: the first release where the
/// bug is fixed), each optional.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Range {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

impl Range {
    fn holds(&self, version: Option<&str>) -> bool {
        let Some(v) = version.map(Version::parse) else {
            return true;
        };
        self.from.as_deref().is_none_or(|f| v >= Version::parse(f))
            && self.before.as_deref().is_none_or(|b| v < Version::parse(b))
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.from, &self.before) {
            (None, None) => f.write_str("all"),
            (Some(a), None) => write!(f, ">={a}"),
            (None, Some(b)) => write!(f, "<{b}"),
            (Some(a), Some(b)) => write!(f, ">={a},<{b}"),
        }
    }
}

/// A release number compared part by part; a pre-release (`3.16.0.dev2026`, `2.21.0rc1`)
/// comes before its release.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Version {
    parts: Vec<u64>,
    /// 0 for a pre-release, 1 for a release (so a pre-release sorts first).
    release: u8,
}

impl Version {
    fn parse(s: &str) -> Self {
        let mut parts = Vec::new();
        let mut release = 1;
        for piece in s.trim().split('.') {
            let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() {
                release = 0;
                break;
            }
            parts.push(digits.parse().unwrap_or(u64::MAX));
            if digits.len() < piece.len() {
                release = 0;
                break;
            }
        }
        while parts.len() > 1 && parts.last() == Some(&0) {
            parts.pop();
        }
        Version { parts, release }
    }
}

/// The releases an entry covers.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Releases {
    #[serde(default)]
    pub keras: Range,
    #[serde(default)]
    pub tensorflow: Range,
}

/// A condition on one config value of the layer, as Keras wrote it. Every given field must
/// hold; all but `present: false` need the key present. On a list (`kernel_size: [3, 3]`), a
/// numeric condition holds when some entry meets it.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ValueCond {
    pub present: Option<bool>,
    pub equals: Option<Value>,
    pub not: Option<Value>,
    pub one_of: Option<Vec<Value>>,
    /// Some number is at least this.
    pub min: Option<f64>,
    /// Some number is at most this.
    pub max: Option<f64>,
    /// Some finite number is not exactly a float32 (Keras rounds it through float32).
    pub f32_inexact: Option<bool>,
    /// A string value starts with this.
    pub starts_with: Option<String>,
    /// A list (or a single value) holds this value.
    pub contains: Option<Value>,
    /// The value is a single number (`true`), or not (`false`: a list, a string, ...).
    pub number: Option<bool>,
    /// A list's last entry, or a single value, meets this (`kernel_size`'s width, which a
    /// single number gives every axis).
    pub last: Option<Box<ValueCond>>,
}

impl ValueCond {
    fn holds(&self, value: Option<&Value>) -> bool {
        let Some(value) = value else {
            return self.present == Some(false)
                && self.equals.is_none()
                && self.not.is_none()
                && self.one_of.is_none()
                && self.min.is_none()
                && self.max.is_none()
                && self.f32_inexact.is_none()
                && self.starts_with.is_none()
                && self.contains.is_none()
                && self.number.is_none()
                && self.last.is_none();
        };
        let numbers: Vec<f64> = match value {
            Value::Array(a) => a.iter().filter_map(Value::as_f64).collect(),
            v => v.as_f64().into_iter().collect(),
        };
        let inexact = numbers
            .iter()
            .any(|&x| x.is_finite() && x as f32 as f64 != x);
        self.present.is_none_or(|p| p)
            && self.equals.as_ref().is_none_or(|e| same(value, e))
            && self.not.as_ref().is_none_or(|e| !same(value, e))
            && self
                .one_of
                .as_ref()
                .is_none_or(|xs| xs.iter().any(|e| same(value, e)))
            && self.min.is_none_or(|m| numbers.iter().any(|&x| x >= m))
            && self.max.is_none_or(|m| numbers.iter().any(|&x| x <= m))
            && self.f32_inexact.is_none_or(|want| inexact == want)
            && self
                .starts_with
                .as_ref()
                .is_none_or(|p| value.as_str().is_some_and(|s| s.starts_with(p.as_str())))
            && self.contains.as_ref().is_none_or(|c| match value {
                Value::Array(a) => a.iter().any(|x| same(x, c)),
                v => same(v, c),
            })
            && self.number.is_none_or(|want| value.is_number() == want)
            && self.last.as_ref().is_none_or(|c| match value {
                Value::Array(a) => a.last().is_some_and(|x| c.holds(Some(x))),
                v => c.holds(Some(v)),
            })
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        _ => a == b,
    }
}

/// Conditions on the verdict's typed evidence.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EvidenceCond {
    /// The largest absolute error the entry explains (a divergence without one, e.g. only
    /// in NaN/Inf, meets it).
    pub max_abs_error: Option<f64>,
    /// The largest relative error it explains.
    pub max_rel_error: Option<f64>,
    /// The largest normwise relative error it explains (`max|tf - ref| / max|ref|`).
    pub max_normwise_rel_error: Option<f64>,
    pub tf_value: Option<Vec<ValueClass>>,
    pub reference_value: Option<Vec<ValueClass>>,
    pub shape_differs: Option<bool>,
    pub nonfinite_inputs: Option<bool>,
    pub nonfinite_weights: Option<bool>,
    pub nonfinite_kernel: Option<bool>,
    /// Some input or weight of the whole case holds NaN or an infinity.
    pub nonfinite_case: Option<bool>,
    pub refused_downstream: Option<bool>,
    pub signals: Option<Vec<String>>,
    /// The framework agrees with the reference once the layer's float constants are rounded
    /// to float32.
    pub float32_constants: Option<bool>,
    /// The framework agrees with the reference once the layer's bias is added along the last
    /// axis instead of the channels axis.
    pub bias_on_last_axis: Option<bool>,
    /// The framework agrees with the reference once the layer's scale multiplies its
    /// normalized values as it is laid out, broadcast against the trailing axes.
    pub scale_on_trailing_axes: Option<bool>,
    /// The framework agrees with the reference once an `Embedding`'s indices are clipped into
    /// its rows.
    pub indices_clipped: Option<bool>,
    /// A float64 run whose layer inputs or reference output hold a finite value beyond
    /// float32's range.
    pub beyond_float32: Option<bool>,
    /// A `GroupNormalization` that agrees with the reference but for what a variance computed
    /// as `mean(x²) − mean(x)²` allows.
    pub naive_variance: Option<bool>,
    /// A normalization that diverges only in lanes of its statistics whose sum of squares is
    /// beyond float32's range.
    pub square_overflow: Option<bool>,
    /// A layer whose output diverges only where some input is masked (a merge's masked
    /// positions, a recurrent layer's masked steps).
    pub masked_only: Option<bool>,
    /// A float64 run within the tolerance of the layer computed in float32.
    pub float32_tolerance: Option<bool>,
}

/// Conditions on the framework's exception: its type, and words of the framework's own
/// message (never of semfuzz's), each of which must appear.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ErrorCond {
    pub types: Option<Vec<String>>,
    #[serde(default)]
    pub message_contains: Vec<String>,
    /// Words none of which may appear (to keep two entries apart).
    #[serde(default)]
    pub message_lacks: Vec<String>,
}

/// Conditions on the reference's objection to an invalid case.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ViolationCond {
    pub codes: Option<Vec<String>>,
    /// Codes it may not have (the business of another entry).
    pub not_codes: Option<Vec<String>>,
    pub categories: Option<Vec<String>>,
    pub parameters: Option<Vec<String>>,
}

/// A condition on some layer of the model (not only the verdict's).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LayerCond {
    pub classes: Option<Vec<String>>,
    #[serde(default)]
    pub config: BTreeMap<String, ValueCond>,
}

/// One alternative of an entry: every given condition must hold.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    pub verdicts: Option<Vec<Kind>>,
    /// Whether the verdict names a layer of the case.
    pub has_layer: Option<bool>,
    /// The class of the verdict's layer.
    pub classes: Option<Vec<String>>,
    /// The class a wrapper at the verdict's layer wraps (`TimeDistributed`, `Bidirectional`).
    pub wrapped_classes: Option<Vec<String>>,
    /// `eager`, `graph`, `xla`, or `build` for a refusal before any mode ran.
    pub modes: Option<Vec<ModeName>>,
    pub dtypes: Option<Vec<String>>,
    /// Conditions on the verdict's layer's config values.
    #[serde(default)]
    pub config: BTreeMap<String, ValueCond>,
    /// Some activation of the layer (or of a layer nested in its config) is one of these.
    pub activations: Option<Vec<String>>,
    pub evidence: Option<EvidenceCond>,
    pub error: Option<ErrorCond>,
    pub violation: Option<ViolationCond>,
    /// Some layer of the model meets this.
    pub any_layer: Option<LayerCond>,
    /// Named shape predicates, every one of which must hold.
    #[serde(default)]
    pub predicates: Vec<Predicate>,
    /// Why a divergence this alternative explains has no bound on its error that typed
    /// evidence could state (the bug moves values: any difference may follow). Required of a
    /// divergence without such a bound, so that an unbounded entry says so.
    pub unbounded_because: Option<String>,
    /// The refusal this alternative keeps follows from the layer's class and config alone
    /// (`unexpected-rejection`, with `classes` and `config`): generation for a target the
    /// entry holds on steers away from those config values, as from a trigger.
    pub config_decides: Option<bool>,
}

/// A mode as an entry names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModeName {
    Build,
    Eager,
    Graph,
    Xla,
    Jit,
    Compile,
}

impl ModeName {
    fn of(mode: Option<Mode>) -> Self {
        match mode {
            None => ModeName::Build,
            Some(Mode::Eager) => ModeName::Eager,
            Some(Mode::Graph) => ModeName::Graph,
            Some(Mode::Xla) => ModeName::Xla,
            Some(Mode::Jit) => ModeName::Jit,
            Some(Mode::Compile) => ModeName::Compile,
        }
    }
}

/// What an entry says, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryFile {
    /// One line: what the bug or limitation is.
    summary: String,
    /// `bug` (a kept framework bug, with a folder of evidence) or `limitation`.
    #[serde(default = "default_kind")]
    kind: EntryKind,
    #[serde(default)]
    releases: Releases,
    #[serde(default = "default_backends")]
    backends: Vec<Backend>,
    /// Only where TensorFlow's oneDNN CPU kernels are on (`true`) or off (`false`): the
    /// kernels of the other state compute differently.
    #[serde(default)]
    onednn: Option<bool>,
    when: Vec<Conditions>,
    /// The trigger generation steers away from (a name of `oracle::triggers::Trigger`; the
    /// generators apply its own repair).
    trigger: Option<String>,
}

/// A list file (`limitations.json`, or a user's list): entries by id.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListFile {
    entries: BTreeMap<String, EntryFile>,
}

fn default_kind() -> EntryKind {
    EntryKind::Bug
}

fn default_backends() -> Vec<Backend> {
    vec![Backend::Tensorflow]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    Bug,
    Limitation,
}

/// One kept bug or limitation.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The `crashes/` folder's name, or the id in a list.
    pub id: Arc<str>,
    /// Where it was read from (`builtin:crashes/<id>/kept.json` for the built-in ones).
    pub source: PathBuf,
    pub summary: String,
    pub kind: EntryKind,
    pub releases: Releases,
    pub backends: Vec<Backend>,
    /// Only with TensorFlow's oneDNN kernels on (`true`) or off (`false`); `None`: either.
    pub onednn: Option<bool>,
    when: Vec<Conditions>,
    pub trigger: Option<Trigger>,
}

/// The facts an entry is matched on.
pub struct Facts<'a> {
    pub case: &'a Case,
    pub dtype: DType,
    pub verdict: &'a Verdict,
    /// The reference's analysis of the calls (of the layers before the first violation, for
    /// an invalid case), when it has one.
    pub analysis: Option<&'a ModelAnalysis>,
    pub target: &'a Target,
}

/// Which condition of an alternative did not hold (for `known explain`).
pub type Failed = &'static str;

impl Entry {
    fn from_file(id: &str, source: PathBuf, file: EntryFile) -> Result<Self, EntryError> {
        let invalid = |problem: String| EntryError::Invalid {
            path: source.clone(),
            problem,
        };
        if file.when.is_empty() {
            return Err(invalid("`when` lists no alternative".to_owned()));
        }
        if id.is_empty() || id.contains(['/', ' ']) {
            return Err(invalid(format!(
                "`{id}` is not an id (no spaces or slashes)"
            )));
        }
        for (i, c) in file.when.iter().enumerate() {
            if let Some(d) = c
                .dtypes
                .iter()
                .flatten()
                .find(|d| d.parse::<DType>().is_err())
            {
                return Err(invalid(format!("when[{i}].dtypes: unknown dtype `{d}`")));
            }
            if let Some(e) = &c.evidence
                && [e.max_abs_error, e.max_rel_error, e.max_normwise_rel_error]
                    .iter()
                    .flatten()
                    .any(|x| x.is_nan() || *x < 0.0)
            {
                return Err(invalid(format!(
                    "when[{i}].evidence: an error bound must be a number >= 0"
                )));
            }
            // A wrong result must say how large an error it explains: an entry without a
            // bound would hide a gross new bug at the same layer.
            let finite_values = c
                .evidence
                .as_ref()
                .and_then(|e| e.tf_value.as_ref())
                .is_some_and(|t| t.iter().all(|v| v.is_finite()));
            // A mode that raised where others ran is a mode mismatch without a divergence.
            let divergence = c.error.is_none()
                && c.verdicts.as_ref().is_some_and(|vs| {
                    vs.iter()
                        .any(|k| matches!(k, Kind::Mismatch | Kind::ModeMismatch))
                });
            let bounded = c.evidence.as_ref().is_some_and(|e| {
                e.max_abs_error.is_some()
                    || e.max_rel_error.is_some()
                    || e.max_normwise_rel_error.is_some()
                    || e.nonfinite_inputs == Some(true)
                    || e.nonfinite_weights == Some(true)
                    || e.nonfinite_kernel == Some(true)
                    || e.nonfinite_case == Some(true)
                    || e.shape_differs == Some(true)
                    || e.float32_constants == Some(true)
                    || e.bias_on_last_axis == Some(true)
                    || e.scale_on_trailing_axes == Some(true)
                    || e.indices_clipped == Some(true)
                    || e.naive_variance == Some(true)
                    || e.float32_tolerance == Some(true)
            });
            if divergence && !bounded && !finite_values && c.unbounded_because.is_none() {
                return Err(invalid(format!(
                    "when[{i}] explains a divergence but states no largest error (evidence.max_abs_error or max_rel_error), no non-finite value it follows from, no shape difference, nor why it is unbounded (unbounded_because)"
                )));
            }
            if c.verdicts.is_none() {
                return Err(invalid(format!("when[{i}] names no verdicts")));
            }
            if c.config_decides == Some(true)
                && !(c
                    .verdicts
                    .iter()
                    .flatten()
                    .any(|k| *k == Kind::UnexpectedRejection)
                    && c.classes.is_some()
                    && (!c.config.is_empty() || c.error.is_some())
                    && c.wrapped_classes.is_none()
                    && c.activations.is_none()
                    && c.evidence.is_none()
                    && c.violation.is_none()
                    && c.any_layer.is_none()
                    && c.predicates.is_empty())
            {
                return Err(invalid(format!(
                    "when[{i}].config_decides: only an unexpected-rejection alternative with classes and config conditions (or, where the class alone decides, the framework's error), and no other condition on the layer, the evidence or the model, can be decided by the config"
                )));
            }
        }
        let trigger = file
            .trigger
            .as_deref()
            .map(|t| {
                t.parse::<Trigger>()
                    .map_err(|e| invalid(format!("trigger: {e}")))
            })
            .transpose()?;
        Ok(Entry {
            id: Arc::from(id),
            source,
            summary: file.summary,
            kind: file.kind,
            releases: file.releases,
            backends: file.backends,
            onednn: file.onednn,
            when: file.when,
            trigger,
        })
    }

    /// Whether this entry explains the verdict: its scope holds and one alternative's every
    /// condition does.
    pub fn explains(&self, f: &Facts) -> bool {
        self.why_not(f).is_ok()
    }

    /// `Ok(i)`: alternative `i` explains the verdict; `Err`: the first condition that failed
    /// in each alternative (or the scope's).
    pub fn why_not(&self, f: &Facts) -> Result<usize, Vec<Failed>> {
        if let Some(what) = self.scope_fails_on(f.target) {
            return Err(vec![what]);
        }
        let mut failed = Vec::new();
        for (i, c) in self.when.iter().enumerate() {
            match c.check(f) {
                Ok(()) => return Ok(i),
                Err(what) => failed.push(what),
            }
        }
        Err(failed)
    }

    /// Whether the entry's scope holds on `target`: its backend, oneDNN setting (where the
    /// target's is known) and releases.
    pub fn holds_on(&self, target: &Target) -> bool {
        self.scope_fails_on(target).is_none()
    }

    /// The first part of the entry's scope that `target` is outside of, if any.
    fn scope_fails_on(&self, target: &Target) -> Option<Failed> {
        if !self.backends.contains(&target.backend) {
            Some("backends")
        } else if let (Some(want), Some(have)) = (self.onednn, target.onednn)
            && want != have
        {
            Some("onednn")
        } else if !self.releases.keras.holds(target.keras.as_deref()) {
            Some("releases.keras")
        } else if !self.releases.tensorflow.holds(target.tensorflow.as_deref()) {
            Some("releases.tensorflow")
        } else {
            None
        }
    }

    /// Where this entry keeps a refusal by `target` that a layer's class and config decide
    /// alone: an alternative marked `config_decides` naming the layer's class, whose dtypes
    /// and config conditions `layer` meets in `dtype`. The config keys of the first such
    /// alternative; generation steers away from them, as from a trigger (no keys: the class
    /// alone decides, and the layer goes).
    pub fn refusal_keys(
        &self,
        layer: &oracle::case::Layer,
        dtype: oracle::DType,
        target: &Target,
    ) -> Option<Vec<String>> {
        if !self.holds_on(target) {
            return None;
        }
        self.when.iter().find_map(|c| {
            let decided_by_config = c.config_decides == Some(true)
                && c.classes
                    .as_ref()
                    .is_some_and(|x| x.contains(&layer.class_name));
            (decided_by_config
                && c.dtypes
                    .as_ref()
                    .is_none_or(|d| d.iter().any(|d| d == dtype.name()))
                && c.config
                    .iter()
                    .all(|(k, cond)| cond.holds(layer.config.get(k))))
            .then(|| c.config.keys().cloned().collect())
        })
    }

    /// The entry's scope in one line: releases, backends, and per alternative the verdicts,
    /// classes, modes and dtypes.
    pub fn scope(&self) -> String {
        let list = |xs: Option<Vec<String>>| xs.map_or("any".to_owned(), |x| x.join(","));
        let alternatives: Vec<String> =
            self.when
                .iter()
                .map(|c| {
                    format!(
                        "{} at {} in {} ({})",
                        list(
                            c.verdicts
                                .as_ref()
                                .map(|v| v.iter().map(|k| k.name().to_owned()).collect())
                        ),
                        list(c.classes.clone()),
                        list(c.modes.as_ref().map(|m| {
                            m.iter().map(|m| format!("{m:?}").to_lowercase()).collect()
                        })),
                        list(c.dtypes.clone()),
                    )
                })
                .collect();
        let onednn = match self.onednn {
            Some(true) => " (oneDNN on)",
            Some(false) => " (oneDNN off)",
            None => "",
        };
        format!(
            "keras {} · tensorflow {}{onednn} · {} · {}",
            self.releases.keras,
            self.releases.tensorflow,
            self.backends
                .iter()
                .map(|b| b.name())
                .collect::<Vec<_>>()
                .join(","),
            alternatives.join(" | ")
        )
    }
}

impl Conditions {
    /// `Err(name)`: the first condition that does not hold.
    fn check(&self, f: &Facts) -> Result<(), Failed> {
        let v = f.verdict;
        let need = |ok: bool, what: Failed| if ok { Ok(()) } else { Err(what) };
        need(
            self.verdicts.as_ref().is_none_or(|k| k.contains(&v.kind)),
            "verdicts",
        )?;
        need(
            self.modes
                .as_ref()
                .is_none_or(|m| m.contains(&ModeName::of(v.mode))),
            "modes",
        )?;
        need(
            self.dtypes
                .as_ref()
                .is_none_or(|d| d.iter().any(|d| d == f.dtype.name())),
            "dtypes",
        )?;
        let layer = v.layer.as_deref().and_then(|n| f.case.model.layer(n));
        need(
            self.has_layer.is_none_or(|h| h == layer.is_some()),
            "has_layer",
        )?;
        let needs_layer = self.classes.is_some()
            || self.wrapped_classes.is_some()
            || !self.config.is_empty()
            || self.activations.is_some();
        if needs_layer && layer.is_none() {
            return Err("layer");
        }
        if let Some(l) = layer {
            need(
                self.classes
                    .as_ref()
                    .is_none_or(|c| c.contains(&l.class_name)),
                "classes",
            )?;
            need(
                self.wrapped_classes.as_ref().is_none_or(|c| {
                    crate::predicates::wrapped_class(&l.config)
                        .is_some_and(|w| c.iter().any(|x| x == w))
                }),
                "wrapped_classes",
            )?;
            need(
                self.config
                    .iter()
                    .all(|(k, cond)| cond.holds(l.config.get(k))),
                "config",
            )?;
            need(
                self.activations.as_ref().is_none_or(|names| {
                    names.iter().any(|n| {
                        crate::predicates::uses_activation(
                            &l.class_name,
                            &Value::Object(l.config.clone()),
                            n,
                        )
                    })
                }),
                "activations",
            )?;
        }
        if let Some(e) = &self.evidence {
            e.check(f)?;
        }
        // Without a bound on the error it explains, or a reason why it has none, an
        // alternative explains no error on finite data: a divergence in NaN/Inf only.
        let bounded = self.evidence.as_ref().is_some_and(|e| {
            e.max_abs_error.is_some()
                || e.max_rel_error.is_some()
                || e.max_normwise_rel_error.is_some()
                || e.float32_constants == Some(true)
                || e.bias_on_last_axis == Some(true)
                || e.scale_on_trailing_axes == Some(true)
                || e.indices_clipped == Some(true)
                || e.naive_variance == Some(true)
                || e.float32_tolerance == Some(true)
        });
        if !bounded && self.unbounded_because.is_none() {
            need(!v.evidence.finite_error, "evidence.finite_error")?;
        }
        // A mode mismatch where a mode raised has no values: only an alternative about the
        // framework's error explains it.
        if v.kind == Kind::ModeMismatch && v.evidence.error.is_some() && self.error.is_none() {
            return Err("error");
        }
        if let Some(e) = &self.error {
            let Some(err) = &v.evidence.error else {
                return Err("error");
            };
            need(
                e.types.as_ref().is_none_or(|t| t.contains(&err.kind)),
                "error.types",
            )?;
            need(
                e.message_contains
                    .iter()
                    .all(|m| err.message.contains(m.as_str())),
                "error.message_contains",
            )?;
            need(
                !e.message_lacks
                    .iter()
                    .any(|m| err.message.contains(m.as_str())),
                "error.message_lacks",
            )?;
        }
        if let Some(c) = &self.violation {
            let Some(vi) = &v.evidence.violation else {
                return Err("violation");
            };
            need(
                c.codes.as_ref().is_none_or(|x| x.contains(&vi.code)),
                "violation.codes",
            )?;
            need(
                c.not_codes.as_ref().is_none_or(|x| !x.contains(&vi.code)),
                "violation.not_codes",
            )?;
            need(
                c.categories
                    .as_ref()
                    .is_none_or(|x| x.contains(&vi.category)),
                "violation.categories",
            )?;
            need(
                c.parameters
                    .as_ref()
                    .is_none_or(|x| x.contains(&vi.parameter)),
                "violation.parameters",
            )?;
        }
        if let Some(c) = &self.any_layer {
            need(
                f.case.model.layers.iter().any(|l| {
                    c.classes.as_ref().is_none_or(|x| x.contains(&l.class_name))
                        && c.config.iter().all(|(k, cond)| cond.holds(l.config.get(k)))
                }),
                "any_layer",
            )?;
        }
        for p in &self.predicates {
            need(p.holds(f), p.name())?;
        }
        Ok(())
    }
}

impl EvidenceCond {
    fn check(&self, f: &Facts) -> Result<(), Failed> {
        let e = &f.verdict.evidence;
        let need = |ok: bool, what: Failed| if ok { Ok(()) } else { Err(what) };
        let within =
            |bound: Option<f64>, got: Option<f64>| bound.is_none_or(|b| got.is_none_or(|g| g <= b));
        // A bound on the error needs the divergence's figures, or a divergence only in
        // NaN/Inf (no finite pair to measure).
        let measured = e.max_abs_error.is_some() || e.tf_value.is_some() || e.shape_differs;
        if self.max_abs_error.is_some()
            || self.max_rel_error.is_some()
            || self.max_normwise_rel_error.is_some()
        {
            need(measured && !e.shape_differs, "evidence.measured")?;
        }
        need(
            within(self.max_abs_error, e.max_abs_error),
            "evidence.max_abs_error",
        )?;
        need(
            within(self.max_rel_error, e.max_rel_error),
            "evidence.max_rel_error",
        )?;
        need(
            within(self.max_normwise_rel_error, e.normwise_rel_error),
            "evidence.max_normwise_rel_error",
        )?;
        let class_in = |want: &Option<Vec<ValueClass>>, got: Option<ValueClass>| {
            want.as_ref()
                .is_none_or(|w| got.is_some_and(|g| w.iter().any(|c| g.is(*c))))
        };
        need(class_in(&self.tf_value, e.tf_value), "evidence.tf_value")?;
        need(
            class_in(&self.reference_value, e.reference_value),
            "evidence.reference_value",
        )?;
        let flag = |want: Option<bool>, got: bool| want.is_none_or(|w| w == got);
        need(
            flag(self.shape_differs, e.shape_differs),
            "evidence.shape_differs",
        )?;
        need(
            flag(self.nonfinite_inputs, e.nonfinite_inputs),
            "evidence.nonfinite_inputs",
        )?;
        need(
            flag(self.nonfinite_weights, e.nonfinite_weights),
            "evidence.nonfinite_weights",
        )?;
        need(
            flag(self.nonfinite_kernel, e.nonfinite_kernel),
            "evidence.nonfinite_kernel",
        )?;
        need(
            flag(self.refused_downstream, e.refused_downstream),
            "evidence.refused_downstream",
        )?;
        need(
            flag(self.float32_constants, e.float32_constants),
            "evidence.float32_constants",
        )?;
        need(
            flag(self.bias_on_last_axis, e.bias_on_last_axis),
            "evidence.bias_on_last_axis",
        )?;
        need(
            flag(self.scale_on_trailing_axes, e.scale_on_trailing_axes),
            "evidence.scale_on_trailing_axes",
        )?;
        need(
            flag(self.indices_clipped, e.indices_clipped),
            "evidence.indices_clipped",
        )?;
        need(
            flag(self.beyond_float32, e.beyond_float32),
            "evidence.beyond_float32",
        )?;
        need(
            flag(self.naive_variance, e.naive_variance),
            "evidence.naive_variance",
        )?;
        need(
            flag(self.square_overflow, e.square_overflow),
            "evidence.square_overflow",
        )?;
        need(
            flag(self.masked_only, e.masked_only),
            "evidence.masked_only",
        )?;
        need(
            flag(self.float32_tolerance, e.float32_tolerance),
            "evidence.float32_tolerance",
        )?;
        need(
            self.nonfinite_case
                .is_none_or(|w| w == crate::predicates::case_nonfinite(f.case)),
            "evidence.nonfinite_case",
        )?;
        need(
            self.signals
                .as_ref()
                .is_none_or(|s| e.signal.as_ref().is_some_and(|g| s.contains(g))),
            "evidence.signals",
        )?;
        Ok(())
    }
}

/// The built-in entries, compiled in from `crashes/` (see `build.rs`).
mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin_entries.rs"));
}

/// A set of entries: the built-in ones and users' own lists.
#[derive(Debug, Clone, Default)]
pub struct Suppressions {
    entries: Vec<Entry>,
}

impl Suppressions {
    /// No entries: every verdict is reported.
    pub fn none() -> Self {
        Suppressions::default()
    }

    /// The entries kept in the repository's `crashes/`, compiled in (the test suite checks
    /// that they load).
    pub fn builtin() -> Result<Self, EntryError> {
        let mut s = Suppressions::default();
        for (source, text) in builtin::ENTRIES {
            s.add_text(Path::new(source), text)?;
        }
        Ok(s)
    }

    /// Adds the entries of a folder in the `crashes/` layout (`<id>/kept.json`) and its
    /// `*.json` lists (`{"entries": {"<id>": {...}}}`), or of one list file.
    pub fn add_path(&mut self, path: &Path) -> Result<(), EntryError> {
        let read = |p: &Path| {
            oracle::bounded::read_text(p, oracle::bounded::Kind::Suppressions).map_err(|source| {
                EntryError::Read {
                    path: p.to_owned(),
                    source,
                }
            })
        };
        if path.is_file() {
            return self.add_text(path, &read(path)?);
        }
        let dir = std::fs::read_dir(path).map_err(|e| EntryError::Read {
            path: path.to_owned(),
            source: e.into(),
        })?;
        let mut files: Vec<PathBuf> = dir
            .filter_map(Result::ok)
            .map(|e| e.path())
            .flat_map(|p| {
                if p.is_dir() {
                    Some(p.join("kept.json")).filter(|k| k.is_file())
                } else {
                    (p.extension().is_some_and(|x| x == "json")).then_some(p)
                }
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(EntryError::Empty(path.to_owned()));
        }
        for f in files {
            self.add_text(&f, &read(&f)?)?;
        }
        Ok(())
    }

    /// Adds the entries one file holds: a folder's `kept.json` (its id is the folder's name)
    /// or a list.
    fn add_text(&mut self, path: &Path, text: &str) -> Result<(), EntryError> {
        let malformed = |source| EntryError::Malformed {
            path: path.to_owned(),
            source,
        };
        let mut new = Vec::new();
        if path.file_name().is_some_and(|n| n == "kept.json") {
            let id = path
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let file: EntryFile = serde_json::from_str(text).map_err(malformed)?;
            new.push(Entry::from_file(&id, path.to_owned(), file)?);
        } else {
            let list: ListFile = serde_json::from_str(text).map_err(malformed)?;
            for (id, file) in list.entries {
                new.push(Entry::from_file(&id, path.to_owned(), file)?);
            }
        }
        for e in new {
            if let Some(other) = self.entries.iter().find(|o| o.id == e.id) {
                return Err(EntryError::Duplicate {
                    id: e.id.to_string(),
                    path: e.source.clone(),
                    other: other.source.clone(),
                });
            }
            self.entries.push(e);
        }
        Ok(())
    }

    /// The triggers the entries name: what generation steers away from.
    pub fn triggers(&self) -> TriggerSet {
        self.entries.iter().filter_map(|e| e.trigger).collect()
    }

    /// The triggers of the entries that hold on one of `targets` (their backends and
    /// releases): what generation for those targets steers away from.
    pub fn triggers_for(&self, targets: &[Target]) -> TriggerSet {
        self.entries
            .iter()
            .filter(|e| targets.iter().any(|t| e.holds_on(t)))
            .filter_map(|e| e.trigger)
            .collect()
    }

    /// The config keys of `layer` by which a kept refusal of one of `targets` refuses it
    /// (see [`Entry::refusal_keys`]), if one does.
    pub fn refusal_keys(
        &self,
        layer: &oracle::case::Layer,
        dtype: oracle::DType,
        targets: &[Target],
    ) -> Option<Vec<String>> {
        self.entries
            .iter()
            .find_map(|e| targets.iter().find_map(|t| e.refusal_keys(layer, dtype, t)))
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| &*e.id == id)
    }

    /// Every entry that explains the verdict (more than one is an error of the entries,
    /// which the test suite rules out for the built-in ones).
    pub fn explaining<'s>(&'s self, f: &Facts) -> Vec<&'s Entry> {
        self.entries.iter().filter(|e| e.explains(f)).collect()
    }

    /// The entry that explains the verdict, if any: the first by id where several do.
    pub fn explain(&self, f: &Facts) -> Option<Arc<str>> {
        let all = self.explaining(f);
        if all.len() > 1 {
            tracing::warn!(
                verdict = %f.verdict.signature,
                entries = ?all.iter().map(|e| &*e.id).collect::<Vec<_>>(),
                "several suppression entries explain one verdict"
            );
        }
        all.into_iter()
            .min_by(|a, b| a.id.cmp(&b.id))
            .map(|e| e.id.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_parts_and_pre_releases_come_first() {
        let v = Version::parse;
        assert!(v("3.15.1") > v("3.15"));
        assert!(v("3.9.0") < v("3.15.0"));
        assert!(v("3.16.0.dev2026112") < v("3.16.0"));
        assert!(v("3.16.0.dev2026112") > v("3.15.9"));
        assert_eq!(v("2.21"), v("2.21.0"));
        let r = Range {
            from: Some("3.3".into()),
            before: Some("3.16".into()),
        };
        assert!(r.holds(Some("3.15.1")) && !r.holds(Some("3.16.0")) && !r.holds(Some("3.2.1")));
        assert!(r.holds(None));
    }

    #[test]
    fn value_conditions_read_configs_as_keras_wrote_them() {
        let c = |j: &str| serde_json::from_str::<ValueCond>(j).unwrap();
        let v = |j: &str| serde_json::from_str::<Value>(j).unwrap();
        assert!(c(r#"{"f32_inexact": true}"#).holds(Some(&v("0.1"))));
        assert!(!c(r#"{"f32_inexact": true}"#).holds(Some(&v("8.0"))));
        assert!(c(r#"{"min": 2}"#).holds(Some(&v("[1, 3]"))));
        assert!(!c(r#"{"min": 2}"#).holds(None));
        assert!(c(r#"{"present": false}"#).holds(None));
        assert!(c(r#"{"equals": 1}"#).holds(Some(&v("1.0"))));
        assert!(c(r#"{"not": null}"#).holds(Some(&v("6"))));
        assert!(!c(r#"{"not": null}"#).holds(None));
        assert!(c(r#"{"one_of": ["same"]}"#).holds(Some(&v(r#""same""#))));
        assert!(c(r#"{"starts_with": "..."}"#).holds(Some(&v(r#""...b,bc->...c""#))));
        assert!(c(r#"{"number": true}"#).holds(Some(&v("0.5"))));
        assert!(!c(r#"{"number": true}"#).holds(Some(&v("[0.5, 1]"))));
        assert!(c(r#"{"number": false}"#).holds(Some(&v("[0.5, 1]"))));
        let width = c(r#"{"last": {"min": 15}}"#);
        assert!(width.holds(Some(&v("[1, 15]"))) && width.holds(Some(&v("15"))));
        assert!(!width.holds(Some(&v("[15, 1]"))) && !width.holds(Some(&v("[]"))));
        assert!(!width.holds(None));
    }

    /// `config_decides` only where the config can decide: an unexpected-rejection with
    /// classes and config conditions, and nothing about the evidence; where the class alone
    /// decides (no config condition), the framework's error must be named.
    #[test]
    fn config_decides_is_refused_where_more_than_the_config_decides() {
        let load = |when: &str| {
            Suppressions::none().add_text(
                Path::new("/x/r/kept.json"),
                &format!(r#"{{"summary": "s", "when": [{when}]}}"#),
            )
        };
        let good = r#"{"verdicts": ["unexpected-rejection"], "classes": ["Concatenate"], "config": {"axis": {"equals": 0}}, "config_decides": true}"#;
        assert!(load(good).is_ok());
        let class_alone = r#"{"verdicts": ["unexpected-rejection"], "classes": ["Dot"], "error": {"types": ["ValueError"], "message_contains": ["should be called on a list of 2 inputs"]}, "config_decides": true}"#;
        assert!(load(class_alone).is_ok());
        for bad in [
            r#"{"verdicts": ["mismatch"], "classes": ["Concatenate"], "config": {"axis": {"equals": 0}}, "config_decides": true, "unbounded_because": "x"}"#,
            r#"{"verdicts": ["unexpected-rejection"], "classes": ["Concatenate"], "config_decides": true}"#,
            r#"{"verdicts": ["unexpected-rejection"], "config": {"axis": {"equals": 0}}, "config_decides": true}"#,
            r#"{"verdicts": ["unexpected-rejection"], "classes": ["Concatenate"], "config": {"axis": {"equals": 0}}, "predicates": ["rms-axes-not-trailing"], "config_decides": true}"#,
        ] {
            let err = load(bad).unwrap_err().to_string();
            assert!(err.contains("config_decides"), "{err}");
        }
    }

    #[test]
    fn a_malformed_entry_names_its_file_and_field() {
        let mut s = Suppressions::none();
        let err = s
            .add_text(
                Path::new("/x/my-bug/kept.json"),
                r#"{"summary": "s", "when": [{"verdicts": ["mismatch"], "clases": ["ReLU"]}]}"#,
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/x/my-bug/kept.json") && err.contains("clases"),
            "{err}"
        );
        let err = s
            .add_text(
                Path::new("/x/my-bug/kept.json"),
                r#"{"summary": "s", "when": [{"verdicts": ["mismatch"], "classes": ["ReLU"]}]}"#,
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("states no largest error"), "{err}");
    }

    #[test]
    fn the_builtin_entries_load() {
        let s = Suppressions::builtin().unwrap();
        assert!(s.entries().len() >= 8);
    }

    /// Keras 3.0 and 3.1 refuse every `Dot` read back from JSON (a kept bug whose class alone
    /// decides): the entry gives no keys there, so generation drops the layer; not on 3.2.1
    /// or later, nor for another class.
    #[test]
    fn a_refusal_the_class_alone_decides_has_no_keys() {
        let case = |class: &str| {
            let input = |name: &str| {
                serde_json::json!({
                    "module": "keras.layers", "class_name": "InputLayer", "name": name,
                    "config": {"batch_shape": [null, 3], "dtype": "float32", "name": name},
                    "inbound_nodes": []
                })
            };
            let arg = |name: &str| {
                serde_json::json!({"class_name": "__keras_tensor__",
                "config": {"keras_history": [name, 0, 0]}})
            };
            let text = serde_json::json!({
                "format": "semfuzz-case/1", "dtype": "float32",
                "model": {"name": "m", "trainable": true, "layers": [
                    input("a"), input("b"),
                    {"module": "keras.layers", "class_name": class, "name": "l",
                     "config": {"name": "l", "axes": -1},
                     "inbound_nodes": [{"args": [[arg("a"), arg("b")]], "kwargs": {}}]}
                ], "input_layers": [["a", 0, 0], ["b", 0, 0]], "output_layers": [["l", 0, 0]]},
                "weights": {}, "inputs": [
                    {"shape": [1, 3], "data": [0, 0, 0]}, {"shape": [1, 3], "data": [0, 0, 0]}
                ]
            });
            Case::from_json_str(&text.to_string(), "dot.case.json").unwrap()
        };
        let s = Suppressions::builtin().unwrap();
        let keys = |class: &str, keras: &str| {
            s.refusal_keys(
                &case(class).model.layers[2],
                DType::Float32,
                &[Target::tensorflow(keras, "2.16.2")],
            )
        };
        assert_eq!(keys("Dot", "3.0.5"), Some(vec![]));
        assert_eq!(keys("Dot", "3.1.1"), Some(vec![]));
        assert_eq!(keys("Dot", "3.2.1"), None);
        assert_eq!(keys("Dot", "3.15.1"), None);
        assert_eq!(keys("Add", "3.0.5"), None);
    }

    /// Keras 3.3.3 refuses a `MultiHeadAttention` given `output_shape` at build (a kept bug,
    /// fixed in 3.7): the entry names the key on 3.3.3, not on 3.15.1, not where the key is
    /// absent, and not on another backend than the entry's.
    #[test]
    fn a_refusal_decided_by_config_names_its_keys_on_its_releases_only() {
        let case = |config: serde_json::Value| {
            let text = serde_json::json!({
                "format": "semfuzz-case/1", "dtype": "float32",
                "model": {"name": "m", "trainable": true, "layers": [
                    {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                     "config": {"batch_shape": [null, 2, 4], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
                    {"module": "keras.layers", "class_name": "MultiHeadAttention", "name": "mha",
                     "config": config,
                     "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                        "config": {"keras_history": ["x", 0, 0]}}, {"class_name": "__keras_tensor__",
                        "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}
                ], "input_layers": [["x", 0, 0]], "output_layers": [["mha", 0, 0]]},
                "weights": {}, "inputs": [{"shape": [1, 2, 4], "data": [0, 0, 0, 0, 0, 0, 0, 0]}]
            });
            Case::from_json_str(&text.to_string(), "mha.case.json").unwrap()
        };
        let s = Suppressions::builtin().unwrap();
        let with = case(
            serde_json::json!({"name": "mha", "num_heads": 1, "key_dim": 2, "output_shape": 3}),
        );
        let without = case(serde_json::json!({"name": "mha", "num_heads": 1, "key_dim": 2}));
        let old = Target::tensorflow("3.3.3", "2.16.2");
        let pinned = Target::tensorflow("3.15.1", "2.21.0");
        let keys = |c: &Case, t: &Target| {
            s.refusal_keys(&c.model.layers[1], DType::Float32, std::slice::from_ref(t))
        };
        assert_eq!(keys(&with, &old), Some(vec!["output_shape".to_owned()]));
        assert_eq!(keys(&with, &pinned), None);
        assert_eq!(keys(&without, &old), None);
        let old_on_jax = Target::on(Backend::Jax, "3.3.3", "2.16.2");
        assert_eq!(keys(&with, &old_on_jax), None);
    }
}
