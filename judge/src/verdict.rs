//! The one place that turns the oracle's judgement and TensorFlow's outcome into verdicts.
//!
//! Each layer is compared with the reference applied to *TF's own inputs to that layer*
//! (its producers' TF outputs), within that layer's tolerance, so tolerances never compound
//! over depth and the verdict names the first layer that diverges.

use std::collections::HashMap;

use ndarray::{ArrayD, Dimension};
use oracle::check::{CallKind, CheckError, ModelAnalysis};
use oracle::layers::Mask;
use oracle::tolerance::Tolerance;
use oracle::{Case, DType, Violation};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::entries::{Facts, Suppressions, Target};
use crate::evidence::{Evidence, ValueClass, largest_errors};
use crate::outcome::{Backend, LayerOutputs, Mode, ModeOutcome, PyError, TfOutcome};

/// Every verdict, named as everywhere else (CLI, JSON, findings folders).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Agree,
    Mismatch,
    ModeMismatch,
    BackendMismatch,
    Crash,
    Timeout,
    Oom,
    MissingValidation,
    LateError,
    UnclearError,
    UnexpectedRejection,
    UnexpectedNan,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Agree => "agree",
            Kind::Mismatch => "mismatch",
            Kind::ModeMismatch => "mode-mismatch",
            Kind::BackendMismatch => "backend-mismatch",
            Kind::Crash => "crash",
            Kind::Timeout => "timeout",
            Kind::Oom => "oom",
            Kind::MissingValidation => "missing-validation",
            Kind::LateError => "late-error",
            Kind::UnclearError => "unclear-error",
            Kind::UnexpectedRejection => "unexpected-rejection",
            Kind::UnexpectedNan => "unexpected-nan",
        }
    }
}

/// How a maintainer would rank a finding, first to last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    /// A wrong value on finite data (`mismatch`, `mode-mismatch` where both modes ran,
    /// `unexpected-nan`).
    WrongResult,
    /// The worker died, hung or blew its memory.
    Crash,
    /// Invalid input taken, refused only in a kernel, or valid input refused (by every mode,
    /// or by one while another runs it).
    Validation,
    /// An error message that names neither the layer nor the argument.
    Message,
    /// A divergence that follows only from NaN/Inf in the layer's inputs or weights, only
    /// from overflow (the exact result is itself infinite and no finite element differs: the
    /// framework's NaN or infinity there depends on the order of its sums), or an error
    /// within float32 rounding in a float64 layer (a constant rounded through float32): no
    /// IEEE behaviour is promised there. Kept apart.
    Ieee,
}

impl Tier {
    pub const ALL: [Tier; 5] = [
        Tier::WrongResult,
        Tier::Crash,
        Tier::Validation,
        Tier::Message,
        Tier::Ieee,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tier::WrongResult => "wrong-result",
            Tier::Crash => "crash",
            Tier::Validation => "validation",
            Tier::Message => "message",
            Tier::Ieee => "ieee",
        }
    }

    /// The tier of a verdict of `kind` with `evidence`, in a run of `dtype` (`None` for an
    /// agreement).
    pub fn of(kind: Kind, evidence: &Evidence, dtype: DType) -> Option<Tier> {
        Some(match kind {
            Kind::Agree => return None,
            Kind::Crash | Kind::Timeout | Kind::Oom => Tier::Crash,
            Kind::MissingValidation | Kind::LateError | Kind::UnexpectedRejection => {
                Tier::Validation
            }
            Kind::UnclearError => Tier::Message,
            // A mode that refuses a model another mode runs refuses valid input.
            Kind::ModeMismatch if evidence.error.is_some() => Tier::Validation,
            Kind::Mismatch | Kind::ModeMismatch | Kind::BackendMismatch | Kind::UnexpectedNan => {
                let nonfinite = evidence.nonfinite_inputs || evidence.nonfinite_weights;
                let float32_rounding = dtype == DType::Float64
                    && !evidence.shape_differs
                    && evidence.tf_value.is_some_and(ValueClass::is_finite)
                    && evidence.reference_value.is_some_and(ValueClass::is_finite)
                    && evidence
                        .normwise_rel_error
                        .is_some_and(|r| r <= FLOAT32_ROUNDING);
                // The exact result overflows on finite data, and that is all that differs.
                let overflow = !evidence.finite_error
                    && !evidence.shape_differs
                    && matches!(
                        evidence.reference_value,
                        Some(ValueClass::PosInf | ValueClass::NegInf)
                    );
                // A float32 run whose intermediates overflow float32 (the layer's error bound
                // is itself beyond its range), and only NaN or infinities differ: what any
                // float32 computation of the layer may give.
                let intermediates_overflow = dtype == DType::Float32
                    && evidence.beyond_float32
                    && !evidence.finite_error
                    && !evidence.shape_differs;
                if nonfinite
                    || overflow
                    || intermediates_overflow
                    || float32_rounding
                    || evidence.float32_constants
                {
                    Tier::Ieee
                } else {
                    Tier::WrongResult
                }
            }
        })
    }
}

/// The largest relative error float32 rounding of a constant explains in a float64 layer:
/// two float32 ulps (2^-22), for the rounding of the constant and of one operation with it.
pub const FLOAT32_ROUNDING: f64 = 2.384_185_791_015_625e-7;

/// One verdict on one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub kind: Kind,
    /// `verdict/LayerClass/category-or-exception`: survives minimisation (no shapes, no values).
    pub signature: String,
    pub layer: Option<String>,
    pub mode: Option<Mode>,
    pub detail: String,
    /// The typed facts the verdict rests on (what kept-bug entries match on).
    pub evidence: Evidence,
    /// How a maintainer would rank it (`None` for an agreement).
    pub tier: Option<Tier>,
    /// Set when a suppression entry explains the outcome (a known limitation, or a confirmed
    /// framework bug kept in `crashes/`): counted, not a finding.
    pub known: Option<Arc<str>>,
}

impl Verdict {
    pub(crate) fn new(
        kind: Kind,
        class: &str,
        extra: &str,
        layer: Option<&str>,
        detail: String,
    ) -> Self {
        let mut signature = format!(
            "{}/{}",
            kind.name(),
            if class.is_empty() { "model" } else { class }
        );
        if !extra.is_empty() {
            signature.push('/');
            signature.push_str(extra);
        }
        Verdict {
            kind,
            signature,
            layer: layer.map(str::to_owned),
            mode: None,
            detail,
            evidence: Evidence::default(),
            tier: None,
            known: None,
        }
    }

    /// A verdict of a backend other than TensorFlow names it at the end of its signature
    /// (`mismatch/Dense/on-jax`), so that its folder is apart from TensorFlow's when one
    /// campaign runs several backends. TensorFlow's signatures stay as they always were.
    fn name_backend(&mut self, backend: Backend) {
        if backend != Backend::Tensorflow && self.kind != Kind::Agree {
            self.signature.push_str("/on-");
            self.signature.push_str(backend.name());
        }
    }

    fn in_mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    fn with(mut self, evidence: Evidence) -> Self {
        self.evidence = evidence;
        self
    }

    /// A finding worth keeping (not agreement, not a known limitation).
    pub fn is_finding(&self) -> bool {
        self.kind != Kind::Agree && self.known.is_none()
    }
}

/// Python error types that Keras raises by accident (an index past the end, a division by
/// zero), never as the answer of a check: a refusal with one is an internal error, however
/// clearly its wrapper names the layer. Not `KeyError`: `from_config` refuses a config that
/// lacks a key it needs with one, naming the key.
pub const INTERNAL_ERRORS: [&str; 5] = [
    "ZeroDivisionError",
    "IndexError",
    "AttributeError",
    "AssertionError",
    "UnboundLocalError",
];

/// What Python says for the accidents of [`INTERNAL_ERRORS`], and for a `math` function
/// outside its domain (a `ValueError`, `math.sqrt(-1)`): how they read inside the `TypeError`
/// that `from_config` wraps a layer's failing constructor in, which keeps only the message.
pub const INTERNAL_MESSAGES: [&str; 6] = [
    "division by zero",
    "modulo by zero",
    "math domain error",
    "index out of range",
    "object has no attribute",
    "unsupported operand type",
];

/// The innermost message of an error Keras's deserialization wrapped (`<class ...> could
/// not be deserialized properly ... Exception encountered: <message>`), when that message is
/// one of [`INTERNAL_MESSAGES`].
fn internal_when_deserialized(message: &str) -> Option<&str> {
    if !message.contains("could not be deserialized properly") {
        return None;
    }
    let inner = message.rsplit("Exception encountered: ").next()?.trim();
    INTERNAL_MESSAGES
        .iter()
        .any(|m| inner.contains(m))
        .then_some(inner)
}

/// How a mode mismatch's detail ends when the layer's inputs hold NaN or an infinity.
const NONFINITE_INPUTS: &str = " (which hold non-finite values)";

/// Whether an error of type `kind` comes from inside one of `backend`'s kernels rather than
/// from Keras's checks: TensorFlow's kernel errors; PyTorch's `RuntimeError` (what its C++
/// operators raise; Keras's layers check with `ValueError`); JAX's runtime errors. JAX's
/// shape rules raise `TypeError` and `ValueError`, as Keras's checks do: by type they cannot
/// be told apart, so they are judged as Keras's.
fn kernel_error(backend: Backend, kind: &str) -> bool {
    kernel_error_types(backend).contains(&kind)
}

/// The error types of [`kernel_error`] on `backend`.
pub fn kernel_error_types(backend: Backend) -> &'static [&'static str] {
    match backend {
        Backend::Tensorflow => &KERNEL_ERRORS,
        Backend::Torch => &["RuntimeError"],
        Backend::Jax => &["XlaRuntimeError", "JaxRuntimeError"],
    }
}

/// TF error types that come from inside a kernel rather than from Keras's checks.
const KERNEL_ERRORS: [&str; 9] = [
    "InvalidArgumentError",
    "InternalError",
    "UnknownError",
    "ResourceExhaustedError",
    "FailedPreconditionError",
    "AbortedError",
    "OutOfRangeError",
    "UnimplementedError",
    "NotFoundError",
];

/// The judge of one target: its suppression entries and what it runs against.
#[derive(Debug, Clone)]
pub struct Judge {
    pub suppressions: Suppressions,
    pub target: Target,
}

impl Judge {
    pub fn new(suppressions: Suppressions, target: Target) -> Self {
        Judge {
            suppressions,
            target,
        }
    }

    /// The built-in entries, on a TensorFlow target of unknown releases (tests without a
    /// worker).
    pub fn builtin() -> Result<Self, crate::entries::EntryError> {
        Ok(Judge::new(
            Suppressions::builtin()?,
            Target::unknown_tensorflow(),
        ))
    }

    /// The verdicts on what TF did with `case` (run in `dtype`), given the reference's
    /// judgement of it; each one a suppression entry explains is marked `known`. An empty
    /// list means the reference cannot judge it (unsupported) and TF did nothing that needs
    /// no reference (no crash, hang or OOM).
    pub fn judge(
        &self,
        case: &Case,
        dtype: DType,
        oracle: &Result<ModelAnalysis, CheckError>,
        tf: &TfOutcome,
    ) -> Vec<Verdict> {
        self.judge_in_context(|| self.judge_here(case, dtype, oracle, tf))
    }

    /// Runs `f` with the reference evaluated for the target's backend and release.
    fn judge_in_context<R>(&self, f: impl FnOnce() -> R) -> R {
        let release = self
            .target
            .keras
            .as_deref()
            .and_then(oracle::release::Release::parse);
        oracle::backend::with(self.target.backend, || oracle::release::with(release, f))
    }

    /// [`Judge::judge`], the reference evaluated for the target's backend and release.
    fn judge_here(
        &self,
        case: &Case,
        dtype: DType,
        oracle: &Result<ModelAnalysis, CheckError>,
        tf: &TfOutcome,
    ) -> Vec<Verdict> {
        // An invalid case's layers that do not depend on its violations ran in TF on the
        // shapes the reference finds for them: the judge and the matchers need those as much
        // as a valid case's.
        let prefix = match oracle {
            Err(CheckError::Invalid(_)) => crate::predicates::calls_before_violation(case, dtype),
            _ => None,
        };
        let analysis = oracle.as_ref().ok().or(prefix.as_ref());
        let explain =
            |v: &Verdict, analysis: Option<&ModelAnalysis>| self.explain(case, dtype, v, analysis);
        let mut verdicts = judge_outcome(case, dtype, oracle, analysis, tf, &explain);
        for v in verdicts.iter_mut() {
            v.tier = Tier::of(v.kind, &v.evidence, dtype);
            if v.known.is_none() {
                v.known = self.explain(case, dtype, v, analysis);
            }
            v.name_backend(self.target.backend);
        }
        verdicts
    }

    /// Two backends' runs of one case compared layer by layer: a `backend-mismatch` at the
    /// first layer whose inputs are identical in both runs (bit for bit) but whose outputs
    /// differ beyond the layer's tolerance. Each side's first mode with outputs is compared.
    /// A layer either side's judgement has a verdict at (a divergence from the reference, a
    /// kept bug, an error) is not compared again: that verdict already says it. `a` and `b`
    /// are (backend, what it did, its verdicts); the cases a reference cannot analyse are
    /// not compared. Where each side that is off its own backend's reference at that layer
    /// is off by what one of its backend's entries explains (a side's own run may have
    /// stopped at an earlier divergence before judging the layer), the backend-mismatch is
    /// that entry's: `known`.
    pub fn compare_backends(
        case: &Case,
        dtype: DType,
        oracle: &Result<ModelAnalysis, CheckError>,
        a: (&Judge, &TfOutcome, &[Verdict]),
        b: (&Judge, &TfOutcome, &[Verdict]),
    ) -> Option<Verdict> {
        let analysis = oracle.as_ref().ok()?;
        fn outputs(tf: &TfOutcome) -> Option<(Mode, &LayerOutputs)> {
            match tf {
                TfOutcome::Ran { modes, .. } => modes.iter().find_map(|(m, o)| match o {
                    ModeOutcome::Outputs(out) => Some((*m, out)),
                    _ => None,
                }),
                _ => None,
            }
        }
        let ((mode_a, out_a), (mode_b, out_b)) = (outputs(a.1)?, outputs(b.1)?);
        let values = AsFed::of(case, dtype);
        // The masks each side's calls were given, worked out from its own arrays, and each
        // side's divergences from its own backend's reference, at every layer.
        let judged_alone = |backend: Backend, mode: Mode, out: &LayerOutputs| {
            let mut masks = CallMasks::new();
            let off = oracle::backend::with(backend, || {
                divergences(
                    case,
                    dtype,
                    analysis,
                    out,
                    &values,
                    mode,
                    &|_| true,
                    &mut masks,
                )
            });
            (masks, off)
        };
        let (a, b) = (
            (a.0.target.backend, a.1, a.2, a.0),
            (b.0.target.backend, b.1, b.2, b.0),
        );
        let ((masks_a, off_a), (masks_b, off_b)) = (
            judged_alone(a.0, mode_a, out_a),
            judged_alone(b.0, mode_b, out_b),
        );
        let judged = |name: &str| {
            a.2.iter()
                .chain(b.2)
                .any(|v| v.kind != Kind::Agree && v.layer.as_deref() == Some(name))
        };
        // Where each backend is within the tolerance of the reference for that backend, the
        // two legitimately differ (TF's float32 LeakyReLU slope, which the reference models
        // for TF alone): no backend-mismatch.
        let (backend_a, backend_b) = (a.0, b.0);
        let apart = move |spec: &dyn oracle::layers::Spec,
                          ia: &[&ArrayD<f64>],
                          masks: &[Option<&Mask>],
                          w: &[&ArrayD<f64>],
                          got_a: &[ArrayD<f64>],
                          got_b: &[ArrayD<f64>]| {
            [(backend_a, got_a), (backend_b, got_b)]
                .iter()
                .all(|&(backend, got)| {
                    oracle::backend::with(backend, || {
                        let (reference, _) = oracle::check::eval_call(spec, ia, masks, w);
                        let tol = spec.tolerance_masked(dtype, ia, masks, w).flushing(dtype);
                        reference.len() == got.len()
                            && reference.iter().zip(got).all(|(r, g)| {
                                r.shape() == g.shape()
                                    && rounded(r, dtype)
                                        .iter()
                                        .zip(g.iter())
                                        .all(|(&r, &g)| tol.accepts(g, r))
                            })
                    })
                })
        };
        let (layer, nonfinite, evidence) = identical_input_divergence(
            case,
            dtype,
            analysis,
            (out_a, Some(&masks_a)),
            (out_b, Some(&masks_b)),
            &values,
            // Each backend may be off the exact value by up to the tolerance, on either side.
            2.0,
            &judged,
            Some(&apart),
        )?;
        let (fa, fb) = (Framework::of(a.0), Framework::of(b.0));
        let mut v = Verdict::new(
            Kind::BackendMismatch,
            &layer.class_name,
            &format!("{}-{}", a.0, b.0),
            Some(&layer.name),
            format!(
                "'{}' differs between {fa} ({}) and {fb} ({}) on identical inputs{}",
                layer.name,
                mode_a.name(),
                mode_b.name(),
                if nonfinite { NONFINITE_INPUTS } else { "" }
            ),
        )
        .with(evidence);
        v.tier = Tier::of(v.kind, &v.evidence, dtype);
        // Each side off its own reference at the layer, as that side's judgement would have
        // said it, explained by that side's entries.
        let explained: Option<Vec<Arc<str>>> = [(a.3, &off_a), (b.3, &off_b)]
            .into_iter()
            .filter_map(|(judge, off)| {
                let mut own = off
                    .iter()
                    .find(|o| o.layer.as_deref() == Some(layer.name.as_str()))?
                    .clone();
                own.tier = Tier::of(own.kind, &own.evidence, dtype);
                own.name_backend(judge.target.backend);
                Some(judge.judge_in_context(|| judge.explain(case, dtype, &own, Some(analysis))))
            })
            .collect();
        if let Some(ids) = explained
            && !ids.is_empty()
        {
            v.known = ids.into_iter().next();
        }
        Some(v)
    }

    /// Calls `f` with the facts the entries match a verdict on (the analysis of the layers
    /// before the first violation, for an invalid case).
    pub fn with_facts<R>(
        &self,
        case: &Case,
        dtype: DType,
        oracle: &Result<ModelAnalysis, CheckError>,
        v: &Verdict,
        f: impl FnOnce(&Facts) -> R,
    ) -> R {
        let prefix = match oracle {
            Err(CheckError::Invalid(_)) => crate::predicates::calls_before_violation(case, dtype),
            _ => None,
        };
        f(&Facts {
            case,
            dtype,
            verdict: v,
            analysis: oracle.as_ref().ok().or(prefix.as_ref()),
            target: &self.target,
        })
    }

    /// The entry that explains a verdict, if any.
    pub fn explain(
        &self,
        case: &Case,
        dtype: DType,
        v: &Verdict,
        analysis: Option<&ModelAnalysis>,
    ) -> Option<Arc<str>> {
        if v.kind == Kind::Agree {
            return None;
        }
        let facts = Facts {
            case,
            dtype,
            verdict: v,
            analysis,
            target: &self.target,
        };
        self.suppressions.explain(&facts)
    }
}

/// The framework a verdict's prose names: that of the backend the judgement is for.
pub struct Framework;

impl Framework {
    /// The framework of `backend`, as prose names it.
    pub fn of(backend: Backend) -> &'static str {
        match backend {
            Backend::Tensorflow => "TensorFlow",
            Backend::Jax => "JAX",
            Backend::Torch => "PyTorch",
        }
    }
}

impl std::fmt::Display for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Framework::of(oracle::backend::current()))
    }
}

/// [`Framework`], to name in a verdict's prose (`"{FW} runs ..."`).
const FW: Framework = Framework;

/// Explains a verdict by a suppression entry (the layer's analysis at hand).
type Explain<'a> = dyn Fn(&Verdict, Option<&ModelAnalysis>) -> Option<Arc<str>> + 'a;

fn judge_outcome(
    case: &Case,
    dtype: DType,
    oracle: &Result<ModelAnalysis, CheckError>,
    checked: Option<&ModelAnalysis>,
    tf: &TfOutcome,
    explain: &Explain,
) -> Vec<Verdict> {
    let class_of = |layer: &Option<String>| {
        layer
            .as_deref()
            .and_then(|l| case.model.layer(l))
            .map(|l| l.class_name.clone())
            .unwrap_or_default()
    };
    // Where the worker died, hung or grew: the mode it had started, when it had.
    let in_mode = |v: Verdict, mode: &Option<Mode>| match mode {
        Some(m) => v.in_mode(*m),
        None => v,
    };
    match tf {
        TfOutcome::Crash {
            signal,
            layer,
            mode,
            stderr_tail,
        } => {
            let what = signal
                .map(crate::outcome::signal_name)
                .unwrap_or_else(|| "exit".to_owned());
            let tail: Vec<&str> = stderr_tail.lines().rev().take(5).collect();
            let verdict = Verdict::new(
                Kind::Crash,
                &class_of(layer),
                &what,
                layer.as_deref(),
                format!(
                    "the worker died by {what}; stderr ends: {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ),
            )
            .with(Evidence {
                signal: Some(what.clone()),
                ..Evidence::default()
            });
            return vec![in_mode(verdict, mode)];
        }
        TfOutcome::Timeout { layer, mode } => {
            let verdict = Verdict::new(
                Kind::Timeout,
                &class_of(layer),
                "",
                layer.as_deref(),
                format!("{FW} did not finish in time"),
            );
            return vec![in_mode(verdict, mode)];
        }
        TfOutcome::OutOfMemory {
            layer,
            mode,
            rss_mib,
        } => {
            let verdict = Verdict::new(
                Kind::Oom,
                &class_of(layer),
                "",
                layer.as_deref(),
                format!("the worker grew to {rss_mib} MiB"),
            );
            return vec![in_mode(verdict, mode)];
        }
        _ => {}
    }
    match oracle {
        Err(CheckError::Unsupported(_)) => Vec::new(),
        Err(CheckError::Invalid(v)) => judge_invalid(case, v, tf, checked),
        Ok(analysis) => match value_violation(case, analysis, tf) {
            Some(v) => judge_invalid(case, &v, tf, checked),
            None => judge_valid(case, dtype, analysis, tf, explain),
        },
    }
}

/// A value precondition (checked when a layer runs) that the case breaks in the reference,
/// when TF refused to run it: the refusal is then judged as the answer to that violation.
fn value_violation(case: &Case, analysis: &ModelAnalysis, tf: &TfOutcome) -> Option<Violation> {
    let refused = match tf {
        TfOutcome::Rejected(_) => true,
        TfOutcome::Ran { modes, .. } => modes
            .iter()
            .any(|(_, o)| matches!(o, ModeOutcome::Error(..))),
        _ => false,
    };
    if !refused {
        return None;
    }
    match oracle::check::eval(case, analysis) {
        Err(oracle::check::EvalError::Invalid(v)) => Some(*v),
        _ => None,
    }
}

/// `checked`: the calls the reference checked and accepted, those of the layers that do not
/// depend on a violation (`None`: not known).
fn judge_invalid(
    case: &Case,
    v: &Violation,
    tf: &TfOutcome,
    checked: Option<&ModelAnalysis>,
) -> Vec<Verdict> {
    let errors: Vec<(Option<Mode>, &PyError)> = match tf {
        TfOutcome::Rejected(e) => vec![(None, e)],
        TfOutcome::Ran { modes, .. } => modes
            .iter()
            .filter_map(|(m, o)| match o {
                ModeOutcome::Error(e, _) => Some((Some(*m), e)),
                ModeOutcome::Outputs(_) => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let first_error = errors.first().copied();
    // A mode that ran the whole model says Keras took the invalid layer. Another mode's
    // error at a layer that is neither the invalid one nor fed by it (nor part of it) is no
    // answer to the violation: it is that mode's own trouble elsewhere in the model, which
    // valid models show too (XLA's refusal of an adaptive pooling on another branch).
    // XLA compiles kernels of its own: its run of a layer that only TF's CPU kernels refuse
    // (a data format or dtype they lack) is no missing validation.
    let ran = |m: Mode, o: &ModeOutcome| {
        matches!(o, ModeOutcome::Outputs(_)) && !(v.cpu_kernels() && m == Mode::Xla)
    };
    let ran_somewhere = matches!(tf, TfOutcome::Ran { modes, .. }
        if modes.iter().any(|(m, o)| ran(*m, o)));
    if first_error.is_none()
        && !ran_somewhere
        && let TfOutcome::Ran { modes, .. } = tf
        && let Some((xla, _)) = modes.iter().find(|(m, _)| *m == Mode::Xla)
    {
        return vec![
            Verdict::new(
                Kind::Agree,
                &v.class,
                "",
                Some(&v.layer),
                format!(
                    "inconclusive: XLA runs it with kernels of its own; the reference's objection is one of TF's CPU kernels: {v}"
                ),
            )
            .in_mode(*xla),
        ];
    }
    // Where no mode ran the model, each mode's refusal is judged: the first mode's verdict,
    // and another mode's where it finds a problem of a kind not found yet (one mode's kernel
    // refusing late where another refused clearly). An error at a layer that is neither the
    // invalid one nor fed by it (nor part of it) answers nothing about the violation.
    if !ran_somewhere && !errors.is_empty() {
        let mut verdicts: Vec<Verdict> = Vec::new();
        for &(mode, e) in &errors {
            let verdict = refused_elsewhere(case, v, mode, e, checked)
                .unwrap_or_else(|| judge_refusal(case, v, mode, e));
            if verdicts.is_empty()
                || verdict.kind != Kind::Agree && verdicts.iter().all(|w| w.kind != verdict.kind)
            {
                verdicts.push(verdict);
            }
        }
        return verdicts;
    }
    let unrelated =
        first_error
            .filter(|_| ran_somewhere)
            .and_then(|(m, e)| match blamed(case, e) {
                (class, Some(name))
                    if name != v.layer
                        && !own_call(case, v, class)
                        && !consumes(&case.model, name, &v.layer) =>
                {
                    Some((m, e, name))
                }
                _ => None,
            });
    let Some((mode, e)) = first_error.filter(|_| unrelated.is_none()) else {
        let elsewhere = unrelated.map_or(String::new(), |(m, e, name)| {
            format!(
                " ({} raised elsewhere in the model, at layer '{name}': {}: {})",
                m.map_or("a mode", |m| m.name()),
                e.kind,
                first_line(&e.message)
            )
        });
        return vec![
            Verdict::new(
                Kind::MissingValidation,
                &v.class,
                v.category.name(),
                Some(&v.layer),
                format!(
                    "{FW} runs a model the reference calls invalid ({}): {v}{elsewhere}",
                    v.tag.name()
                ),
            )
            .with(Evidence::violation(v)),
        ];
    };
    let mut verdicts = vec![judge_refusal(case, v, mode, e)];
    // A mode that ran the whole model took what another mode refused: a missing validation
    // in that mode. Values only a kernel checks: it computed something from values another
    // mode's kernel refused (XLA's gather clamps an index out of range).
    if let TfOutcome::Ran { modes, .. } = tf {
        let refused_in = mode.map_or("another mode", |m| m.name());
        let said = format!("{}: {}", e.kind, first_line(&e.message));
        verdicts.extend(modes.iter().filter(|(m, o)| ran(*m, o)).map(|(m, _)| {
            let detail = if v.category == oracle::Category::InputValue {
                format!(
                    "{FW} runs '{}' on values the reference refuses, which {refused_in} refused ({said}): {v}",
                    v.layer
                )
            } else {
                format!(
                    "{FW} runs a model the reference calls invalid ({}), which {refused_in} refused ({said}): {v}",
                    v.tag.name()
                )
            };
            Verdict::new(
                Kind::MissingValidation,
                &v.class,
                v.category.name(),
                Some(&v.layer),
                detail,
            )
            .with(Evidence::violation(v).with_error(e))
            .in_mode(*m)
        }));
    }
    verdicts
}

/// The verdict on one mode's error (`None`: a rejection before any mode ran) as TF's answer
/// to the violation `v`.
fn judge_refusal(case: &Case, v: &Violation, mode: Option<Mode>, e: &PyError) -> Verdict {
    let said = format!("{}: {}", e.kind, first_line(&e.message));
    // Keras builds a layer whose violation only TF's kernels refuse, with the output shape a
    // device that has the kernel computes; a later layer, made for the shape the case's
    // author expected, may then refuse that shape first. The case says nothing about how TF
    // treats the violation.
    // A class that may be the layer's own call (see `own_call`) is not another layer, even
    // where it locates one.
    let refused_first = || match blamed(case, e) {
        (class, _) if own_call(case, v, class) => None,
        (_, Some(name)) => (name != v.layer).then(|| format!("layer '{name}'")),
        (class, None) => {
            (!class.is_empty() && class != v.class).then(|| format!("a {class} layer"))
        }
    };
    let mut downstream = false;
    let (kind, error_kind, detail) = if let Some(other) = v.at_run().then(refused_first).flatten() {
        (
            Kind::Agree,
            "",
            format!(
                "inconclusive: Keras builds it (it is refused only when it runs), and {other} refused first: {said}"
            ),
        )
    } else if let Some(other) = e.constructor.then(refused_first).flatten() {
        // Keras constructs every layer of a functional config before it builds any: another
        // layer's constructor refused the model, and the invalid layer was never built.
        (
            Kind::Agree,
            "",
            format!(
                "inconclusive: the constructor of {other} refused the model before any layer was built: {said}"
            ),
        )
    } else if let Some(later) =
        refused_downstream(case, e, v).filter(|_| v.category != oracle::Category::InputValue)
    {
        // Keras builds the layers of a model in order: a layer that consumes the invalid
        // layer's output was reached, so the invalid layer was built without complaint.
        downstream = true;
        (
            Kind::MissingValidation,
            v.category.name(),
            format!(
                "{FW} builds a layer the reference calls invalid ({}): {v}; {later}, which consumes its output, refused first: {said}",
                v.tag.name()
            ),
        )
    } else if v.category == oracle::Category::InputValue {
        // Only the kernel sees values: any error is the expected refusal.
        (Kind::Agree, "", format!("rejected when it ran: {said}"))
    } else if kernel_error(oracle::backend::current(), &e.kind)
        && v.refused == oracle::violation::Refused::UnknownAtBuild
    {
        // Sizes the model leaves unknown: only the run can refuse it, and the kernel did.
        (
            Kind::Agree,
            "",
            format!("rejected when it ran, where the sizes became known: {said}"),
        )
    } else if kernel_error(oracle::backend::current(), &e.kind) {
        (
            Kind::LateError,
            e.kind.as_str(),
            format!("rejected only inside a kernel ({said}); the reference says: {v}"),
        )
    } else if INTERNAL_ERRORS.contains(&e.kind.as_str()) {
        (
            Kind::LateError,
            e.kind.as_str(),
            format!("rejected only by an internal error ({said}); the reference says: {v}"),
        )
    } else if let Some(inner) = internal_when_deserialized(&e.message) {
        // The wrapper's config names the layer and every argument; what failed is an
        // accident inside its constructor.
        (
            Kind::LateError,
            e.kind.as_str(),
            format!(
                "rejected only by an internal error in its constructor ({}: ... {inner}); the reference says: {v}",
                e.kind
            ),
        )
    } else if names_the_problem(e, v) {
        (Kind::Agree, "", format!("rejected clearly: {said}"))
    } else {
        (
            Kind::UnclearError,
            e.kind.as_str(),
            format!(
                "the error names neither layer '{}' nor `{}`: {said}; the reference says: {v}",
                v.layer, v.parameter
            ),
        )
    };
    let mut evidence = Evidence::violation(v).with_error(e);
    evidence.refused_downstream = downstream;
    let verdict = Verdict::new(kind, &v.class, error_kind, Some(&v.layer), detail).with(evidence);
    match mode {
        Some(m) => verdict.in_mode(m),
        None => verdict,
    }
}

/// The verdict on an error located at a layer that is neither the violation's layer, nor
/// part of its call, nor fed by it; None for any other error. Located means by the worker
/// (the graph node the error names, or the frame that raised it), or by Keras's call wrapper
/// (`Exception encountered when calling X.call()`) where one layer of the case has class `X`.
/// A layer a message merely mentions may be one it mentions in passing, so such an error is
/// still judged as the answer to the violation. Where the violation's layer consumes
/// that layer's output, Keras (which builds and calls layers in order) failed there before it
/// reached the invalid layer, and the reference checked and accepted that layer on its way to
/// the violation: an unexpected rejection there. Elsewhere (another branch) likewise where
/// the reference checked that layer and accepted it (it is in `checked`: it depends on no
/// violation); otherwise the case is inconclusive: the invalid layer may or may not have
/// been reached, and the reference did not check that layer.
fn refused_elsewhere(
    case: &Case,
    v: &Violation,
    mode: Option<Mode>,
    e: &PyError,
    checked: Option<&ModelAnalysis>,
) -> Option<Verdict> {
    let layer = match e.layer.as_deref() {
        Some(name) => case.model.layer(name),
        None => match called_layers(case, &e.message) {
            (Some(l), None) => Some(l),
            _ => None,
        },
    }?;
    let (class, name) = (layer.class_name.as_str(), layer.name.as_str());
    // Values are checked only when the invalid layer's kernel runs, not when it is built or
    // traced: a layer after it that refuses while traced was refused on its own account.
    let values = v.category == oracle::Category::InputValue;
    let after = consumes(&case.model, name, &v.layer);
    if name == v.layer || own_call(case, v, class) || after && !values {
        return None;
    }
    let before = consumes(&case.model, &v.layer, name);
    // Checked means its shapes and arguments: a layer with preconditions on its input
    // values (an `Embedding`'s indices) is not known to be accepted, as the values of an
    // invalid model are never computed.
    let accepted = || {
        let li = case.model.layers.iter().position(|l| l.name == name);
        checked.is_some_and(|a| {
            a.calls.iter().any(|c| {
                Some(c.layer) == li
                    && !matches!(&c.kind, oracle::check::CallKind::Layer(spec) if spec.checks_values())
            })
        })
    };
    if !before && !after && !accepted() {
        let verdict = Verdict::new(
            Kind::Agree,
            &v.class,
            "",
            Some(&v.layer),
            format!(
                "inconclusive: {FW} refused layer '{name}', on another branch, which says nothing about the violation: {}: {}",
                e.kind,
                first_line(&e.message)
            ),
        );
        return Some(match mode {
            Some(m) => verdict.in_mode(m),
            None => verdict,
        });
    }
    let later = if before {
        format!(
            "; the reference's first violation is later, at '{}': {v}",
            v.layer
        )
    } else if after {
        format!(
            "; the reference accepts it, and objects only to values before it, which TF checks when '{}' runs: {v}",
            v.layer
        )
    } else {
        format!(
            "; the reference accepts it, and its violation is on another branch, at '{}': {v}",
            v.layer
        )
    };
    let verdict = match mode {
        Some(m) => Verdict::new(
            Kind::UnexpectedRejection,
            class,
            &format!("{}:{}", m.name(), e.kind),
            Some(name),
            format!("{}{later}", raises_where(m, e)),
        )
        .in_mode(m),
        None => Verdict::new(
            Kind::UnexpectedRejection,
            class,
            &e.kind,
            Some(name),
            format!(
                "the reference accepts the layers before '{}'; {FW} refuses it at {}: {}: {}{later}",
                v.layer,
                e.phase,
                e.kind,
                what_it_says(&e.message)
            ),
        ),
    }
    .with(Evidence::refusal(e));
    Some(verdict)
}

/// The layer an error names (`layer 'x'`), when it is not the violation's layer but one that
/// consumes its output (directly or through other layers); or the class it names (`a Reshape
/// layer`), when every layer of that class does. A class that the violation's layer wraps
/// (`TimeDistributed(Conv1D)`) or builds inside itself (a `MultiHeadAttention`'s
/// `EinsumDense` projections) may be that layer's own call: not counted.
fn refused_downstream(case: &Case, e: &PyError, v: &Violation) -> Option<String> {
    let (class, name) = blamed(case, e);
    if class.is_empty() || own_call(case, v, class) {
        return None;
    }
    let later = |name: &str| name != v.layer && consumes(&case.model, name, &v.layer);
    match name {
        Some(name) => later(name).then(|| format!("layer '{name}'")),
        // The invalid layer's own class may be its own call.
        None if class == v.class => None,
        None => {
            let mut of_class = case.model.layers.iter().filter(|l| l.class_name == class);
            of_class
                .all(|l| later(&l.name))
                .then(|| format!("a {class} layer"))
        }
    }
}

/// Whether a layer of `class` may be part of the violation's layer's own call: the class it
/// wraps (`TimeDistributed(Conv1D)`), or one it builds inside itself (an attention layer's
/// `EinsumDense` projections, `Softmax` and `Dropout`).
fn own_call(case: &Case, v: &Violation, class: &str) -> bool {
    let wraps_it = case
        .model
        .layer(&v.layer)
        .is_some_and(|l| crate::predicates::wrapped_class(&l.config) == Some(class));
    let inside_it = matches!(
        v.class.as_str(),
        "MultiHeadAttention" | "GroupQueryAttention"
    ) && matches!(class, "EinsumDense" | "Softmax" | "Dropout");
    wraps_it || inside_it
}

/// Whether top-level layer `later` consumes an output of layer `earlier`, directly or through
/// other layers (in a sequential model, each layer consumes the one before it).
fn consumes(model: &oracle::case::Model, later: &str, earlier: &str) -> bool {
    let position = |name: &str| model.layers.iter().position(|l| l.name == name);
    let (Some(from), Some(to)) = (position(earlier), position(later)) else {
        return false;
    };
    if from == to {
        return false;
    }
    if model.kind == oracle::case::ModelKind::Sequential {
        return from < to;
    }
    let mut reached = vec![false; model.layers.len()];
    reached[from] = true;
    // Layers need not be listed in topological order: grow the reached set until it stops.
    let mut grew = true;
    while grew && !reached[to] {
        grew = false;
        for (i, layer) in model.layers.iter().enumerate() {
            if reached[i] {
                continue;
            }
            let fed = layer.nodes.iter().any(|n| {
                n.tensors()
                    .iter()
                    .any(|t| position(&t.layer).is_some_and(|p| reached[p]))
            });
            if fed {
                reached[i] = true;
                grew = true;
            }
        }
    }
    reached[to]
}

/// The Python class Keras names in its messages for a layer whose configs carry another
/// (exported) class name.
fn python_class(class: &str) -> &str {
    match class {
        "GroupQueryAttention" => "GroupedQueryAttention",
        other => other,
    }
}

/// What names a violation's problem in an error message: the layer's name quoted or as a
/// variable path (`'layer_normalization/gamma'`), its class and the Python class Keras names
/// for it (`names`, each found as it is), or the argument (`argument`, found in any case, so
/// that one named at the start of a sentence counts too: "Axis 0 of ..."). The judge's
/// `unclear-error` rule, and what an exported repro checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProblemNames {
    pub names: Vec<String>,
    /// `None` where the violation is about the inputs.
    pub argument: Option<String>,
}

impl ProblemNames {
    pub fn of(v: &Violation) -> Self {
        let layer = &v.layer;
        let mut names = vec![
            format!("'{layer}'"),
            format!("\"{layer}\""),
            format!("Layer {layer} "),
            format!("'{layer}/"),
            v.class.clone(),
        ];
        let python = python_class(&v.class);
        if python != v.class {
            names.push(python.to_owned());
        }
        let param = v.parameter.split('[').next().unwrap_or("");
        let argument = (!param.is_empty() && param != "inputs").then(|| param.to_owned());
        ProblemNames { names, argument }
    }

    /// Whether `message` names the problem.
    pub fn in_message(&self, message: &str) -> bool {
        self.names.iter().any(|n| message.contains(n.as_str()))
            || self
                .argument
                .as_ref()
                .is_some_and(|a| message.to_lowercase().contains(&a.to_lowercase()))
    }
}

/// Whether an error message names the layer or the argument the violation is about.
fn names_the_problem(e: &PyError, v: &Violation) -> bool {
    ProblemNames::of(v).in_message(&e.message)
}

/// The layer a Keras/TF exception comes from, as its message names it: the class (empty when
/// unknown) and, when it can be told, the layer's name in the case.
///
/// Keras names a layer by name in its own checks (`Input 0 of layer 'dense' is incompatible
/// ...`, `Layer 'dense' expected 2 variables ...`) and by class in the wrapper it puts around
/// the innermost failing call (`Exception encountered when calling Dense.call().`). A name
/// wins; a class locates the layer when exactly one layer of the case has it. Before both,
/// the layer the worker found the failing graph node's name scope to be traced in.
fn blamed<'a>(case: &'a Case, e: &PyError) -> (&'a str, Option<&'a str>) {
    if let Some(l) = e.layer.as_deref().and_then(|n| case.model.layer(n)) {
        return (&l.class_name, Some(&l.name));
    }
    blamed_by_message(case, &e.message)
}

/// The name of the case's layer an exception comes from, when it can be told.
pub fn error_layer<'a>(case: &'a Case, e: &PyError) -> Option<&'a str> {
    blamed(case, e).1
}

/// [`blamed`] from the message alone.
fn blamed_by_message<'a>(case: &'a Case, message: &str) -> (&'a str, Option<&'a str>) {
    let by_name = case
        .model
        .layers
        .iter()
        .filter_map(|l| {
            ["layer '", "Layer '", "layer \"", "Layer \""]
                .iter()
                .filter_map(|p| {
                    let quote = &p[p.len() - 1..];
                    message.find(&format!("{p}{}{quote}", l.name))
                })
                .min()
                .map(|at| (at, l))
        })
        .min_by_key(|(at, _)| *at);
    if let Some((_, l)) = by_name {
        return (&l.class_name, Some(&l.name));
    }
    // An error of graph or XLA code names the op's node, inside the layer's name scope:
    // `{{node functional_1/<layer name>/<op>}}`.
    if let Some(at) = message.find("{{node ") {
        let path = message[at + "{{node ".len()..]
            .split(['}', ' ', '\''])
            .next()
            .unwrap_or("");
        for part in path.split('/').skip(1) {
            if let Some(l) = case.model.layers.iter().find(|l| l.name == part) {
                return (&l.class_name, Some(&l.name));
            }
        }
    }
    match called_layers(case, message) {
        (Some(l), None) => (&l.class_name, Some(&l.name)),
        (Some(l), Some(_)) => (&l.class_name, None),
        (None, _) => ("", None),
    }
}

/// The first two of the case's layers of the class whose call Keras's wrapper names
/// (`Exception encountered when calling X.call()`): the first alone says which layer raised.
fn called_layers<'a>(
    case: &'a Case,
    message: &str,
) -> (
    Option<&'a oracle::case::Layer>,
    Option<&'a oracle::case::Layer>,
) {
    let Some(class) = called_class(message) else {
        return (None, None);
    };
    let mut same = case
        .model
        .layers
        .iter()
        .filter(|l| python_class(&l.class_name) == class);
    (same.next(), same.next())
}

/// `Class` in Keras's `Exception encountered when calling Class.call().`
fn called_class(message: &str) -> Option<&str> {
    const MARK: &str = "Exception encountered when calling ";
    let rest = &message[message.find(MARK)? + MARK.len()..];
    let class = rest.split(['.', ' ', '\n']).next()?;
    (!class.is_empty() && class.chars().all(|c| c.is_alphanumeric() || c == '_')).then_some(class)
}

/// A mode's error where the reference accepts the layer (the words the known-bug matchers
/// look for).
fn raises_where(mode: Mode, e: &PyError) -> String {
    format!(
        "{} raises where the reference (and other modes) do not: {}: {}",
        mode.name(),
        e.kind,
        what_it_says(&e.message)
    )
}

/// What an exception says, without Keras's call wrapper (`Exception encountered when calling
/// X.call().`, the bold escape codes around the original message).
fn what_it_says(message: &str) -> &str {
    let inner = if message.starts_with("Exception encountered when calling ") {
        message
            .lines()
            .skip(1)
            .find(|l| !l.trim().is_empty())
            .unwrap_or(message)
    } else {
        message
    };
    first_line(inner)
        .trim_start_matches("\x1b[1m")
        .trim_end_matches("\x1b[0m")
}

fn first_line(s: &str) -> &str {
    let line = s.lines().next().unwrap_or("");
    &line[..line.len().min(300)]
}

fn judge_valid(
    case: &Case,
    dtype: DType,
    analysis: &ModelAnalysis,
    tf: &TfOutcome,
    explain: &Explain,
) -> Vec<Verdict> {
    let modes = match tf {
        TfOutcome::Rejected(e) => {
            let (class, layer) = blamed(case, e);
            if let Some(v) = index_rounded_onto_input_dim(case, dtype, analysis, e, layer) {
                return vec![v];
            }
            let v = Verdict::new(
                Kind::UnexpectedRejection,
                class,
                &e.kind,
                layer,
                format!(
                    "the reference accepts the model; {FW} refuses it at {}: {}: {}",
                    e.phase,
                    e.kind,
                    what_it_says(&e.message)
                ),
            )
            .with(Evidence::refusal(e));
            return vec![v];
        }
        TfOutcome::Ran { modes, .. } => modes,
        _ => unreachable!("handled by judge"),
    };
    let mut verdicts = Vec::new();
    let values = AsFed::of(case, dtype);
    let eager = modes.iter().find_map(|(m, o)| match o {
        ModeOutcome::Outputs(out) if *m == Mode::Eager => Some(out),
        _ => None,
    });
    // Each mode's masks of each call judged, for comparing the modes with them.
    let mut masks_by_mode: HashMap<Mode, CallMasks> = HashMap::new();
    for (mode, outcome) in modes {
        match outcome {
            ModeOutcome::Error(e, before) => {
                // A wrong output of a call that finished before the error is the finding:
                // the later layer raised on what it was given (a layer whose output has a
                // wrong shape makes its consumer refuse it). Only a divergence no kept entry
                // explains stands for the error: a known rounding upstream is no cause of a
                // refusal, which is then reported as well.
                let explained = |v: &Verdict| explain(v, Some(analysis)).is_some();
                let masks = masks_by_mode.entry(*mode).or_default();
                let upstream = divergences(
                    case, dtype, analysis, before, &values, *mode, &explained, masks,
                );
                if upstream.iter().any(|v| !explained(v)) {
                    let (_, layer) = blamed(case, e);
                    let then = format!(
                        "; then {FW} raised {} at {}: {}",
                        e.kind,
                        layer.map_or("a later layer".to_owned(), |l| format!("'{l}'")),
                        what_it_says(&e.message)
                    );
                    verdicts.extend(upstream.into_iter().map(|mut v| {
                        v.detail.push_str(&then);
                        v
                    }));
                    continue;
                }
                verdicts.extend(upstream);
                let ran_elsewhere = modes
                    .iter()
                    .any(|(_, o)| matches!(o, ModeOutcome::Outputs(_)));
                let kind = if ran_elsewhere {
                    Kind::ModeMismatch
                } else {
                    Kind::UnexpectedRejection
                };
                let (class, layer) = blamed(case, e);
                if let Some(v) = index_rounded_onto_input_dim(case, dtype, analysis, e, layer) {
                    verdicts.push(v.in_mode(*mode));
                    continue;
                }
                let v = Verdict::new(
                    kind,
                    class,
                    &format!("{}:{}", mode.name(), e.kind),
                    layer,
                    raises_where(*mode, e),
                )
                .with(Evidence::refusal(e))
                .in_mode(*mode);
                verdicts.push(v);
            }
            ModeOutcome::Outputs(out) => {
                let explained = |v: &Verdict| explain(v, Some(analysis)).is_some();
                let masks = masks_by_mode.entry(*mode).or_default();
                verdicts.extend(divergences(
                    case, dtype, analysis, out, &values, *mode, &explained, masks,
                ));
                if let (Some(base), true) = (eager, *mode != Mode::Eager)
                    && let Some(v) = mode_divergence(
                        case,
                        dtype,
                        analysis,
                        (base, masks_by_mode.get(&Mode::Eager)),
                        (out, masks_by_mode.get(mode)),
                        *mode,
                        &values,
                    )
                {
                    verdicts.push(v.in_mode(*mode));
                }
            }
        }
    }
    if verdicts.is_empty() {
        verdicts.push(Verdict::new(
            Kind::Agree,
            "",
            "",
            None,
            format!(
                "{} mode(s) agree with the reference layer by layer",
                modes.len()
            ),
        ));
    }
    verdicts
}

/// Agreement where the framework refuses an `Embedding` index (TF's `GatherV2`: "is not in
/// [0, n)"; PyTorch's `IndexError`: "index out of range in self") that the reference computed
/// just below `input_dim`: the framework's own rounding of the layers before
/// carried the value onto `input_dim`, which the int32 cast then keeps (a float32
/// UnitNormalization giving exactly 1.0 where the exact value is 0.99999994, before an
/// `Embedding(input_dim=1)`). "Just below" is within 64 roundings of the compute dtype.
fn index_rounded_onto_input_dim(
    case: &Case,
    dtype: DType,
    analysis: &ModelAnalysis,
    e: &PyError,
    layer: Option<&str>,
) -> Option<Verdict> {
    let tf_gather = e.message.contains("GatherV2") && e.message.contains(" is not in [0, ");
    let torch_index = e.kind == "IndexError" && e.message.contains("index out of range in self");
    if !(tf_gather || torch_index) {
        return None;
    }
    let evaluation = oracle::check::eval(case, analysis).ok()?;
    let band = 64.0 * Tolerance::eps(dtype);
    let near = analysis.calls.iter().find_map(|call| {
        let l = &case.model.layers[call.layer];
        let n = l
            .config
            .get("input_dim")
            .and_then(serde_json::Value::as_u64)? as f64;
        if l.class_name != "Embedding" || layer.is_some_and(|name| name != l.name) {
            return None;
        }
        let inputs = evaluation.inputs_of(case, call)?;
        let x = inputs.first()?;
        x.iter()
            .find(|&&v| v < n && n - v <= band * n)
            .map(|&v| (l, v, n))
    });
    let (l, v, n) = near?;
    Some(Verdict::new(
        Kind::Agree,
        "",
        "",
        Some(&l.name),
        format!(
            "{FW} refuses an index of '{}' that the reference computes as {v:e}, just below input_dim {n}: its own rounding reached {n}",
            l.name
        ),
    ))
}

/// The arrays a call consumes in one mode: TF's outputs of its producers, or the case's
/// inputs (as TF received them, in `dtype`).
fn call_inputs<'a>(
    case: &'a Case,
    analysis: &ModelAnalysis,
    call: &oracle::check::CheckedCall,
    out: &'a LayerOutputs,
    inputs: &'a [ArrayD<f64>],
) -> Option<Vec<&'a ArrayD<f64>>> {
    call.inputs
        .iter()
        .map(|r| tensor_value(case, analysis, r, out, inputs))
        .collect()
}

/// One tensor of the model in one mode: TF's output, or a model input as TF received it.
fn tensor_value<'a>(
    case: &'a Case,
    analysis: &ModelAnalysis,
    r: &oracle::case::TensorRef,
    out: &'a LayerOutputs,
    inputs: &'a [ArrayD<f64>],
) -> Option<&'a ArrayD<f64>> {
    let l = case.model.layers.iter().position(|x| x.name == r.layer)?;
    match &analysis.call(l, r.node)?.kind {
        CallKind::Input { position } => inputs.get(*position),
        _ => out.get(&(r.layer.clone(), r.node))?.get(r.index),
    }
}

/// Per element of output `i` (row-major), whether a sum it depends on overflows in some order
/// ([`oracle::layers::Spec::order_dependent_overflow`]); all false where the layer flags none
/// or flags another shape.
fn element_flags(flags: Option<&[ArrayD<bool>]>, i: usize, shape: &[usize]) -> Vec<bool> {
    match flags.and_then(|f| f.get(i)) {
        Some(f) if f.shape() == shape => f.iter().copied().collect(),
        _ => vec![false; shape.iter().product()],
    }
}

fn rounded(a: &ArrayD<f64>, dtype: DType) -> ArrayD<f64> {
    if dtype == DType::Float32 {
        a.mapv(|x| x as f32 as f64)
    } else {
        a.clone()
    }
}

/// The case's inputs and weights as TF received them in `dtype` (rounded to float32 for a
/// float32 run of a float64 case; inputs with their own dtype unchanged), computed once per
/// judgement.
struct AsFed {
    inputs: Vec<ArrayD<f64>>,
    weights: HashMap<String, Vec<ArrayD<f64>>>,
}

impl AsFed {
    fn of(case: &Case, dtype: DType) -> Self {
        let inputs = case
            .inputs
            .iter()
            .map(|t| {
                if t.dtype.is_some() {
                    t.data.clone()
                } else {
                    rounded(&t.data, dtype)
                }
            })
            .collect();
        let weights = case
            .weights
            .iter()
            .map(|(n, ts)| {
                (
                    n.clone(),
                    ts.iter().map(|t| rounded(&t.data, dtype)).collect(),
                )
            })
            .collect();
        AsFed { inputs, weights }
    }
}

/// The masks each judged call was given (one per input; `None` unmasked), by (layer, call
/// index): only calls given some mask are kept.
type CallMasks = HashMap<(String, usize), Vec<Option<Mask>>>;

/// The layers (in topological order) whose TF output differs from the reference on TF's own
/// inputs in `mode`, up to the first that `explained` (a known framework bug) does not
/// account for: a known bug early in a model does not hide the layers after it, each of
/// which is judged on what TF fed it.
#[allow(clippy::too_many_arguments)]
fn divergences(
    case: &Case,
    dtype: DType,
    analysis: &ModelAnalysis,
    out: &LayerOutputs,
    values: &AsFed,
    mode: Mode,
    explained: &dyn Fn(&Verdict) -> bool,
    call_masks: &mut CallMasks,
) -> Vec<Verdict> {
    let mut found = Vec::new();
    let AsFed { inputs, weights } = values;
    // The Keras masks of TF's outputs, computed from TF's own arrays (model inputs are
    // unmasked). TF's layers inside a nested model are not probed: the masks its outputs
    // carry are the reference's, on what TF fed the nested model.
    let mut masks: HashMap<(&str, usize), Vec<Option<Mask>>> = HashMap::new();
    // What the consumers of each call judged so far may see of rounding in its output, if
    // TF recomputes it for them (see `Tolerance::recomputed`): its own tolerance, or for a
    // layer that only moves data, that of its producers.
    let mut own_tolerances: HashMap<(&str, usize), Tolerance> = HashMap::new();
    'calls: for call in &analysis.calls {
        // A layer's spec, or a nested model's analysis.
        let spec = match &call.kind {
            CallKind::Layer(spec) => Ok(spec),
            CallKind::Nested(sub) => Err(sub),
            CallKind::Input { .. } => continue,
        };
        let layer = &case.model.layers[call.layer];
        let Some(args) = call_inputs(case, analysis, call, out, inputs) else {
            continue;
        };
        let owned_masks: Vec<Option<Mask>> = match &call.mask_inputs {
            // The mask tensors the call is given, as TF computed them.
            Some(given) => (0..call.inputs.len())
                .map(|i| {
                    let r = given.get(i)?.as_ref()?;
                    let t = tensor_value(case, analysis, r, out, inputs)?;
                    Some(t.mapv(|x| x != 0.0))
                })
                .collect(),
            None => call
                .inputs
                .iter()
                .map(|r| {
                    masks
                        .get(&(r.layer.as_str(), r.node))
                        .and_then(|m| m.get(r.index))
                        .cloned()
                        .flatten()
                })
                .collect(),
        };
        let arg_masks: Vec<Option<&Mask>> = owned_masks.iter().map(Option::as_ref).collect();
        if owned_masks.iter().any(Option::is_some) {
            call_masks.insert((layer.name.clone(), call.node), owned_masks.clone());
        }
        let w: Vec<&ArrayD<f64>> = weights
            .get(layer.name.as_str())
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        // What the layer was given, for the evidence of a divergence there.
        let given = Evidence {
            nonfinite_inputs: args.iter().any(|a| a.iter().any(|x| !x.is_finite())),
            nonfinite_weights: w.iter().any(|a| a.iter().any(|x| !x.is_finite())),
            nonfinite_kernel: w.first().is_some_and(|a| a.iter().any(|x| !x.is_finite())),
            ..Evidence::default()
        };
        let spec = match spec {
            Ok(spec) => spec,
            Err(sub) => {
                if let Ok((_, m)) = oracle::check::eval_nested(layer, sub, &args, &arg_masks, &w)
                    && m.iter().any(Option::is_some)
                {
                    masks.insert((layer.name.as_str(), call.node), m);
                }
                continue;
            }
        };
        let shapes_fit = args.iter().zip(&call.input_shapes).all(|(a, s)| {
            a.ndim() == s.len()
                && a.shape()
                    .iter()
                    .zip(s)
                    .all(|(x, y)| y.is_none_or(|y| y == *x))
        });
        if shapes_fit
            && let Some(m) = spec.compute_mask(&args, &arg_masks)
            && m.iter().any(Option::is_some)
        {
            masks.insert((layer.name.as_str(), call.node), m);
        }
        let Some(tf_out) = out.get(&(layer.name.clone(), call.node)) else {
            continue;
        };
        if !shapes_fit {
            continue; // TF fed this layer something of another shape: reported upstream
        }
        let shapes: Vec<Vec<usize>> = args.iter().map(|a| a.shape().to_vec()).collect();
        if w.len() != spec.weights(&shapes).len() {
            // The case gives this layer no weights (or not all): Keras initialised its own,
            // which the reference does not know, so the layer cannot be judged.
            continue;
        }
        if let Err(mut v) = spec.check_values(&args) {
            if v.tag == oracle::Tag::Semantic {
                continue; // no defined result to compare with
            }
            v.layer.clone_from(&layer.name);
            v.class.clone_from(&layer.class_name);
            {
                let v = Verdict::new(
                    Kind::MissingValidation,
                    &layer.class_name,
                    v.category.name(),
                    Some(&layer.name),
                    format!(
                        "{FW} runs '{}' on values the reference refuses: {v}",
                        layer.name
                    ),
                )
                .with(Evidence::violation(&v))
                .in_mode(mode);
                found.push(v.clone());
                if !explained(&v) {
                    return found;
                }
                continue 'calls;
            }
        }
        let (reference, _) = oracle::check::eval_call(spec.as_ref(), &args, &arg_masks, &w);
        let mut tol = spec
            .tolerance_masked(dtype, &args, &arg_masks, &w)
            .flushing(dtype);
        let producers: Vec<Tolerance> = call
            .inputs
            .iter()
            .filter_map(|r| own_tolerances.get(&(r.layer.as_str(), r.node)).copied())
            .collect();
        // A layer that only moves data hands on its producers' rounding as it is.
        let handed_on = if tol.abs == 0.0 && tol.rel == 0.0 {
            Tolerance::EXACT.recomputed_by(&producers)
        } else {
            tol
        };
        own_tolerances.insert((layer.name.as_str(), call.node), handed_on);
        if mode.traced() {
            tol = tol.recomputed(dtype, &producers);
        }
        // With every input and weight of the layer finite, a non-finite output can only come
        // from overflow, and an infinite absolute tolerance says this layer's sums can
        // overflow (their magnitude bound does). Which non-finite value an overflowing sum
        // gives is then the kernel's choice, not a semantic one: rounded products summed in
        // some order give NaN (`inf - inf`) or an infinity, and an FMA (one rounding for
        // `x·w + acc`) adds a product beyond the range to an infinite accumulator exactly,
        // leaving it infinite. On the same float64 `Conv2D` sum (terms -4·MAX, +4·MAX three
        // times) TF's Eigen kernel gives NaN and XLA +inf; float32 oneDNN gives +inf too. So
        // there any non-finite TF value meets any non-finite reference value.
        let overflow_only = tol.abs.is_infinite()
            && args
                .iter()
                .chain(w.iter())
                .all(|a| a.iter().all(|x| x.is_finite()));
        let accepts = |got: f64, want: f64| {
            tol.accepts(got, want) || overflow_only && !got.is_finite() && !want.is_finite()
        };
        let recompute = Recompute {
            layer,
            node: call.node,
            dtype,
            args: &args,
            masks: &arg_masks,
            w: &w,
            tf_out,
            agree: &accepts,
        };
        // Where the layer says a sum of finite terms overflows in some order and not in
        // another (a LayerNormalization or GroupNormalization lane, whose order TF's modes
        // choose differently), TF's order decides: a non-finite TF value there is as
        // defensible as the reference's finite one, and a finite one as the reference's
        // non-finite one (a lane shorter than a SIMD packet, which the reference sums in
        // element order, as eager mode does, and XLA may not). Only at those elements, and
        // only a difference in finiteness; two finite values are compared as usual, the other
        // elements judged as usual. Nor is `overflow_only` widened: an infinite magnitude
        // bound says that the terms' absolute values sum past the range, not that some order
        // overflows (+1e308 and -1e308 add to 0 in every order), so only the layer can tell
        // which elements may.
        // Worked out only where an element would otherwise diverge: a layer's flags may cost
        // as much as its evaluation (a recurrent layer's error bound).
        let order_dependent = std::cell::OnceCell::new();
        for (i, (r, t)) in reference.iter().zip(tf_out).enumerate() {
            let r = rounded(r, dtype);
            if r.shape() != t.shape() {
                {
                    let v = Verdict::new(
                        Kind::Mismatch,
                        &layer.class_name,
                        "",
                        Some(&layer.name),
                        format!(
                            "output {i} of '{}' has shape {:?} in {FW}, {:?} in the reference",
                            layer.name,
                            t.shape(),
                            r.shape()
                        ),
                    )
                    .with(Evidence {
                        shape_differs: true,
                        // A scale multiplied as laid out may broadcast to a larger tensor.
                        scale_on_trailing_axes: recompute.scale_on_trailing_axes(),
                        ..given.clone()
                    })
                    .in_mode(mode);
                    found.push(v.clone());
                    if !explained(&v) {
                        return found;
                    }
                    continue 'calls;
                }
            }
            let diverging = |either: &[bool]| {
                r.indexed_iter()
                    .zip(t.iter())
                    .enumerate()
                    .find(|&(j, ((_, &w), &g))| {
                        !(accepts(g, w)
                            || either.get(j).copied().unwrap_or(false)
                                && (!g.is_finite() || !w.is_finite()))
                    })
                    .map(|(_, x)| x)
            };
            let mut divergence = diverging(&[]);
            if divergence.is_some() {
                let flags = order_dependent
                    .get_or_init(|| spec.order_dependent_overflow_masked(&args, &arg_masks, &w));
                divergence = diverging(&element_flags(flags.as_deref(), i, r.shape()));
            }
            if let Some(((idx, &want), &got)) = divergence {
                let kind = if want.is_finite() != got.is_finite() || want.is_nan() != got.is_nan() {
                    Kind::UnexpectedNan
                } else {
                    Kind::Mismatch
                };
                // The masks of the call with the float32-rounded constants the framework
                // agrees with (`None`: it agrees with none).
                let rounded_masks = (dtype == DType::Float64)
                    .then(|| recompute.float32_constants())
                    .flatten();
                {
                    let v = Verdict::new(
                    kind,
                    &layer.class_name,
                    "",
                    Some(&layer.name),
                    format!(
                        "'{}' output {i} at {:?}: {FW} {got:e}, reference {want:e} (tolerance abs {:.1e} rel {:.1e})",
                        layer.name,
                        idx.slice(),
                        tol.abs,
                        tol.rel
                    ),
                )
                .with({
                    let (max_abs_error, max_rel_error, normwise_rel_error) =
                        largest_errors(t.iter().zip(r.iter()));
                    let finite_error = t
                        .iter()
                        .zip(r.iter())
                        .any(|(&g, &w)| g.is_finite() && w.is_finite() && !accepts(g, w));
                    let float32_constants = rounded_masks.is_some();
                    let bias_on_last_axis = recompute.bias_on_last_axis();
                    let scale_on_trailing_axes = recompute.scale_on_trailing_axes();
                    let indices_clipped = recompute.indices_clipped();
                    // What the layer computed in float32 may be off by.
                    let f32_tol = (dtype == DType::Float64).then(|| {
                        spec.tolerance_masked(DType::Float32, &args, &arg_masks, &w)
                            .flushing(DType::Float32)
                    });
                    // PyTorch computes a float64 GroupNormalization in float32: beside the
                    // variance, each element takes that dtype's rounding.
                    let naive_variance = naive_variance_explains(
                        layer,
                        &args,
                        &w,
                        t,
                        &r,
                        &|g, w| accepts(g, w) || f32_tol.is_some_and(|f| f.accepts(g, w)),
                    );
                    let square_overflow = square_overflow_explains(layer, &args, t, &r, &accepts);
                    let masked_only = masked_only_explains(i, &arg_masks, t, &r, &accepts);
                    let float32_tolerance = f32_tol.is_some_and(|f32_tol| {
                        t.iter()
                            .zip(r.iter())
                            .all(|(&g, &w)| accepts(g, w) || f32_tol.accepts(g, w))
                    });
                    // A value float32 cannot hold: in the layer's inputs or output, or inside
                    // the layer, where its float32 error bound is itself beyond float32's
                    // range (a recurrent layer's state, a sum's terms).
                    let beyond = |x: &f64| x.is_finite() && x.abs() > f64::from(f32::MAX);
                    let beyond_float32 = f32_tol.is_some_and(|f32_tol| {
                        args.iter().any(|a| a.iter().any(beyond))
                            || r.iter().any(beyond)
                            || f32_tol.abs > f64::from(f32::MAX)
                    }) || (dtype == DType::Float32 && tol.abs > f64::from(f32::MAX));
                    Evidence {
                        max_abs_error,
                        max_rel_error,
                        normwise_rel_error,
                        finite_error,
                        float32_constants,
                        bias_on_last_axis,
                        scale_on_trailing_axes,
                        indices_clipped,
                        naive_variance,
                        square_overflow,
                        masked_only,
                        float32_tolerance,
                        beyond_float32,
                        tf_value: Some(ValueClass::of(got)),
                        reference_value: Some(ValueClass::of(want)),
                        ..given.clone()
                    }
                })
                .in_mode(mode);
                    found.push(v.clone());
                    if !explained(&v) {
                        return found;
                    }
                    // Explained as the layer computed in float32 (a backend's kept
                    // limitation): a compiled consumer may recompute it with float32
                    // roundings of its own, so consumers see its float32 tolerance.
                    if v.evidence.float32_tolerance {
                        own_tolerances.insert(
                            (layer.name.as_str(), call.node),
                            spec.tolerance_masked(DType::Float32, &args, &arg_masks, &w)
                                .flushing(DType::Float32),
                        );
                    }
                    // Explained by the rounding: the masks the framework hands on are those
                    // of the rounded constants (a float64 Masking's float32 `mask_value`).
                    if let Some(m) = rounded_masks {
                        let key = (layer.name.as_str(), call.node);
                        if m.iter().any(Option::is_some) {
                            masks.insert(key, m);
                        } else {
                            masks.remove(&key);
                        }
                    }
                    continue 'calls;
                }
            }
        }
    }
    found
}

/// One call of a layer as the judge recomputes it for evidence: its inputs, their masks and
/// the layer's weights, the framework's outputs, and what accepts one of their elements
/// against the reference's (framework value first).
struct Recompute<'a> {
    layer: &'a oracle::case::Layer,
    node: usize,
    dtype: DType,
    args: &'a [&'a ArrayD<f64>],
    masks: &'a [Option<&'a Mask>],
    w: &'a [&'a ArrayD<f64>],
    tf_out: &'a [ArrayD<f64>],
    agree: &'a dyn Fn(f64, f64) -> bool,
}

impl Recompute<'_> {
    /// The reference's outputs of this call with `config` in place of the layer's own (and
    /// these weights), with the masks they carry; `None` where the class has no reference or
    /// refuses the config.
    fn reference_with(
        &self,
        config: &serde_json::Map<String, serde_json::Value>,
        w: &[&ArrayD<f64>],
    ) -> Option<oracle::check::MaskedOutputs> {
        self.reference_with_args(config, self.args, w)
    }

    /// As [`Self::reference_with`], on these inputs in place of the call's.
    fn reference_with_args(
        &self,
        config: &serde_json::Map<String, serde_json::Value>,
        args: &[&ArrayD<f64>],
        w: &[&ArrayD<f64>],
    ) -> Option<oracle::check::MaskedOutputs> {
        let layer = self.layer;
        let kind = oracle::layers::lookup(&layer.class_name, layer.module.as_deref())?;
        let default_node = Default::default();
        let spec = kind
            .parse(&oracle::layers::CallSite {
                config,
                node: layer.nodes.get(self.node).unwrap_or(&default_node),
                dtype: self.dtype,
            })
            .ok()?;
        Some(oracle::check::eval_call(spec.as_ref(), args, self.masks, w))
    }

    /// Whether the reference's outputs of a call, with some of the layer's float config
    /// constants that float32 cannot hold rounded to float32, all pass `agree` against the
    /// framework's: Keras turns some such constants (not always all of a layer's) into float32
    /// tensors before they meet float64 data, so each subset of the rounded arguments is tried
    /// (of at most six of them). The masks that call hands on where some subset agrees; `None`
    /// where none does, or the class has no reference.
    fn float32_constants(&self) -> Option<Vec<Option<Mask>>> {
        let layer = self.layer;
        fn round(v: &mut serde_json::Value) -> bool {
            match v {
                serde_json::Value::Number(n) => match n.as_f64() {
                    Some(x) if n.is_f64() && x.is_finite() && x as f32 as f64 != x => {
                        *v = serde_json::json!(x as f32 as f64);
                        true
                    }
                    _ => false,
                },
                serde_json::Value::Array(a) => a.iter_mut().fold(false, |c, x| round(x) | c),
                _ => false,
            }
        }
        let rounded: Vec<(&String, serde_json::Value)> = layer
            .config
            .iter()
            .filter_map(|(k, v)| {
                let mut r = v.clone();
                round(&mut r).then_some((k, r))
            })
            .take(6)
            .collect();
        (1u32..1 << rounded.len()).find_map(|subset| {
            let mut config = layer.config.clone();
            for (i, (k, r)) in rounded.iter().enumerate() {
                if subset & (1 << i) != 0 {
                    config.insert((*k).clone(), r.clone());
                }
            }
            self.reference_with(&config, self.w)
                .filter(|(alt, _)| all_agree(alt, self.tf_out, self.agree))
                .map(|(_, out_masks)| out_masks)
        })
    }

    /// Whether a `channels_first` convolution's outputs, computed by the reference without the
    /// bias and the activation, then with the bias added along the last axis and the activation
    /// applied, all pass `agree` against the framework's: what `ops.add`'s bias shortcut computes
    /// when the channel count equals the last axis's length (the kept bug
    /// `mismatch-DepthwiseConv2D-channels-first-bias`). False for any other layer, or where the
    /// lengths differ.
    fn bias_on_last_axis(&self) -> bool {
        let Self {
            layer,
            dtype,
            w,
            tf_out,
            agree,
            ..
        } = *self;
        let config = &layer.config;
        let (Some((bias, kernels)), [out]) = (w.split_last(), tf_out) else {
            return false;
        };
        // A recurrent convolution's bias spans its gates: not one entry per channel.
        if !crate::predicates::channels_first_biased_conv(&layer.class_name, config)
            || bias.ndim() != 1
            || out.ndim() < 3
            || out.shape()[1] != bias.len()
            || out.shape()[out.ndim() - 1] != bias.len()
        {
            return false;
        }
        let Ok(activation) =
            oracle::activations::Activation::parse("activation", config.get("activation"))
        else {
            return false;
        };
        let mut bare = config.clone();
        bare.insert("use_bias".into(), serde_json::json!(false));
        bare.insert("activation".into(), serde_json::json!("linear"));
        let Some((alt, _)) = self.reference_with(&bare, kernels) else {
            return false;
        };
        let [pre] = alt.as_slice() else {
            return false;
        };
        pre.shape() == out.shape()
            && all_agree(&[activation.apply_in(&(pre + *bias), dtype)], tf_out, agree)
    }

    /// Whether a `LayerNormalization` with `rms_scaling` (or an `RMSNormalization`) computes,
    /// in the framework, the reference's normalized values (its output with a scale of ones)
    /// times its scale as it is laid out, broadcast by numpy's rule against the trailing axes:
    /// the output's shape is that broadcast's, and every element passes `agree`. False for any
    /// other layer, or where the shapes do not broadcast.
    fn scale_on_trailing_axes(&self) -> bool {
        let Self {
            layer, w, tf_out, ..
        } = *self;
        let rms = match layer.class_name.as_str() {
            "RMSNormalization" => true,
            "LayerNormalization" => {
                layer
                    .config
                    .get("rms_scaling")
                    .and_then(serde_json::Value::as_bool)
                    == Some(true)
            }
            _ => false,
        };
        let ([scale], [out], true) = (w, tf_out, rms) else {
            return false;
        };
        let ones = ArrayD::<f64>::ones(scale.raw_dim());
        let Some((alt, _)) = self.reference_with(&self.layer.config, &[&ones]) else {
            return false;
        };
        let [normalized] = alt.as_slice() else {
            return false;
        };
        let Some(shape) = broadcast_shape(normalized.shape(), scale.shape()) else {
            return false;
        };
        if shape != out.shape() {
            return false;
        }
        match (normalized.broadcast(shape.clone()), scale.broadcast(shape)) {
            (Some(n), Some(s)) => all_agree(&[&n * &s], tf_out, self.agree),
            _ => false,
        }
    }

    /// Whether an `Embedding`'s outputs are the reference's for its indices clipped into
    /// `[0, input_dim)`, each truncated to an integer first as Keras casts it (see
    /// `Evidence::indices_clipped`). False for any other layer, or where no index needed
    /// clipping.
    fn indices_clipped(&self) -> bool {
        let Self { layer, args, w, .. } = *self;
        let ([indices], [table]) = (args, w) else {
            return false;
        };
        if layer.class_name != "Embedding" || table.ndim() != 2 || table.shape()[0] == 0 {
            return false;
        }
        let last = (table.shape()[0] - 1) as f64;
        let clipped = indices.mapv(|x| x.trunc().clamp(0.0, last));
        if !clipped.iter().all(|x| x.is_finite()) || clipped == **indices {
            return false;
        }
        self.reference_with_args(&layer.config, &[&clipped], w)
            .is_some_and(|(alt, _)| all_agree(&alt, self.tf_out, self.agree))
    }
}

/// Whether every output has the framework's shape and each element passes `agree`
/// (framework value first).
fn all_agree(
    reference: &[ArrayD<f64>],
    tf_out: &[ArrayD<f64>],
    agree: &dyn Fn(f64, f64) -> bool,
) -> bool {
    reference.len() == tf_out.len()
        && reference.iter().zip(tf_out).all(|(a, t)| {
            a.shape() == t.shape() && a.iter().zip(t.iter()).all(|(&x, &g)| agree(g, x))
        })
}

/// The shape two shapes broadcast to by numpy's rule (aligned at the end; each pair of
/// lengths equal or one of them 1), if they do.
fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| (i + s.len()).checked_sub(n).map_or(1, |j| s[j]);
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

/// How a normalization layer that computes its variance with `ops.moments` groups its input:
/// the elements that share one mean and variance, and the entry of `beta` each one gets.
struct MomentGroups {
    /// Per axis of the input: whether the statistics reduce over it (else it tells groups
    /// apart), and the divisor that maps an index on it to its group (1 where it is kept).
    reduced: Vec<bool>,
    /// GroupNormalization's channels axis and channels per group.
    channel_groups: Option<(usize, usize)>,
    /// The axes `beta` spans, in order.
    beta_axes: Vec<usize>,
}

impl MomentGroups {
    /// The grouping of a GroupNormalization, or of a LayerNormalization over axes that are
    /// not one contiguous run (where Keras uses `ops.moments` on PyTorch, not
    /// `F.layer_norm`), without RMS scaling; `None` for any other layer.
    fn of(layer: &oracle::case::Layer, shape: &[usize]) -> Option<Self> {
        Self::statistics(&layer.class_name, &layer.config, shape, false)
    }

    /// The lanes a GroupNormalization or a LayerNormalization (on any axes, with RMS scaling
    /// or not) of this class and config computes its statistics over; `None` for any other
    /// layer.
    fn lanes(
        class: &str,
        config: &serde_json::Map<String, serde_json::Value>,
        shape: &[usize],
    ) -> Option<Self> {
        Self::statistics(class, config, shape, true)
    }

    fn statistics(
        class: &str,
        config: &serde_json::Map<String, serde_json::Value>,
        shape: &[usize],
        any_axes: bool,
    ) -> Option<Self> {
        let rank = shape.len();
        let norm = |a: i64| {
            let a = if a < 0 { a + rank as i64 } else { a };
            usize::try_from(a).ok().filter(|&a| a < rank)
        };
        match class {
            "GroupNormalization" => {
                let axis = norm(
                    config
                        .get("axis")
                        .and_then(serde_json::Value::as_i64)
                        .unwrap_or(-1),
                )?;
                let channels = shape[axis];
                let groups = match config
                    .get("groups")
                    .and_then(serde_json::Value::as_i64)
                    .unwrap_or(32)
                {
                    -1 => channels,
                    g => usize::try_from(g).ok()?,
                };
                if axis == 0 || groups == 0 || !channels.is_multiple_of(groups) {
                    return None;
                }
                let reduced = (0..rank).map(|a| a != 0 && a != axis).collect();
                Some(MomentGroups {
                    reduced,
                    channel_groups: Some((axis, channels / groups)),
                    beta_axes: vec![axis],
                })
            }
            "LayerNormalization" => {
                if !any_axes
                    && config
                        .get("rms_scaling")
                        .and_then(serde_json::Value::as_bool)
                        .unwrap_or(false)
                {
                    return None;
                }
                let mut axes: Vec<usize> = match config.get("axis") {
                    Some(serde_json::Value::Array(a)) => a
                        .iter()
                        .map(|v| v.as_i64().and_then(norm))
                        .collect::<Option<_>>()?,
                    Some(v) => vec![norm(v.as_i64()?)?],
                    None => vec![rank - 1],
                };
                axes.sort_unstable();
                axes.dedup();
                let contiguous = axes.windows(2).all(|w| w[1] == w[0] + 1);
                if contiguous && !any_axes {
                    return None;
                }
                let reduced = (0..rank).map(|a| axes.contains(&a)).collect();
                Some(MomentGroups {
                    reduced,
                    channel_groups: None,
                    beta_axes: axes,
                })
            }
            _ => None,
        }
    }

    /// The group of the element at `idx`: its index on every axis kept (the channel's group on
    /// GroupNormalization's channels axis), 0 on those reduced.
    fn group(&self, idx: &ndarray::IxDyn) -> Vec<usize> {
        (0..self.reduced.len())
            .map(|a| match self.channel_groups {
                Some((axis, per)) if a == axis => idx[a] / per,
                _ if self.reduced[a] => 0,
                _ => idx[a],
            })
            .collect()
    }

    /// The index into `beta` of the element at `idx`.
    fn beta_index(&self, idx: &ndarray::IxDyn) -> ndarray::IxDyn {
        ndarray::IxDyn(&self.beta_axes.iter().map(|&a| idx[a]).collect::<Vec<_>>())
    }
}

/// Whether every element where a normalization layer's output `got` and the reference's
/// `want` disagree lies in a lane of its statistics whose sum of squares is beyond float32's
/// range (and some element disagrees): computed in float32 (as on PyTorch, float64 layers
/// included), a variance formed from the mean of squares overflows there, and
/// `mean(x²) − mean(x)²` is `inf − inf` (NaN) where the mean's square overflows too. A
/// `TimeDistributed` layer's lanes are its inner layer's on the batch and time axes merged.
fn square_overflow_explains(
    layer: &oracle::case::Layer,
    args: &[&ArrayD<f64>],
    got: &ArrayD<f64>,
    want: &ArrayD<f64>,
    agree: &dyn Fn(f64, f64) -> bool,
) -> bool {
    let [x] = args else {
        return false;
    };
    if x.shape() != got.shape() || x.shape() != want.shape() {
        return false;
    }
    let inner = (layer.class_name == "TimeDistributed")
        .then(|| layer.config.get("layer")?.as_object())
        .flatten();
    let (class, config, shape) = match inner {
        Some(inner) if x.ndim() >= 2 => {
            let mut merged = vec![x.shape()[0] * x.shape()[1]];
            merged.extend_from_slice(&x.shape()[2..]);
            let (Some(class), Some(config)) = (
                inner.get("class_name").and_then(serde_json::Value::as_str),
                inner.get("config").and_then(serde_json::Value::as_object),
            ) else {
                return false;
            };
            (class, config, merged)
        }
        _ => (layer.class_name.as_str(), &layer.config, x.shape().to_vec()),
    };
    let Some(lanes) = MomentGroups::lanes(class, config, &shape) else {
        return false;
    };
    // Row-major order is the same on the merged shape.
    let lane_of: Vec<Vec<usize>> = ndarray::indices(shape.as_slice())
        .into_iter()
        .map(|idx| lanes.group(&idx))
        .collect();
    let mut squares: HashMap<&[usize], f64> = HashMap::new();
    for (lane, &v) in lane_of.iter().zip(x.iter()) {
        *squares.entry(lane.as_slice()).or_default() += v * v;
    }
    let mut needed = false;
    for ((lane, &g), &w) in lane_of.iter().zip(got.iter()).zip(want.iter()) {
        if agree(g, w) {
            continue;
        }
        if squares[lane.as_slice()] <= f64::from(f32::MAX) {
            return false;
        }
        needed = true;
    }
    needed
}

/// Whether output 0 of a layer given masks diverges only where some input is masked:
/// - a merge (masks over all but the last axis of inputs of the output's shape): every
///   diverging element lies where some input's mask is false;
/// - a recurrent layer given one time-step mask (`(batch, time)`): with `return_sequences`,
///   every diverging element lies at a masked step; without, every diverging batch row has
///   its last step masked (the last output is then that of a masked step).
///
/// Some element must diverge. What a masked position gives (zero, the previous output, the
/// other inputs' value) is what the layer's masking decides, so a divergence confined to
/// masked positions says that masking went wrong, and nothing else did.
fn masked_only_explains(
    output: usize,
    arg_masks: &[Option<&Mask>],
    got: &ArrayD<f64>,
    want: &ArrayD<f64>,
    agree: &dyn Fn(f64, f64) -> bool,
) -> bool {
    if output != 0 || got.shape() != want.shape() || got.ndim() < 2 {
        return false;
    }
    let positions = &got.shape()[..got.ndim() - 1];
    // A merge's masks, each broadcast to the output's positions as Keras broadcasts them
    // (aligned at the end, a length-1 axis read at every index).
    let merge: Option<Vec<_>> = (arg_masks.len() >= 2 && arg_masks.iter().any(Option::is_some))
        .then(|| {
            arg_masks
                .iter()
                .flatten()
                .map(|m| m.broadcast(positions))
                .collect::<Option<Vec<_>>>()
        })
        .flatten();
    // The recurrent layer's one mask, its steps, and whether it returns sequences.
    let recurrent = if merge.is_some() {
        None
    } else {
        let [Some(mask)] = arg_masks else {
            return false;
        };
        if mask.ndim() != 2 || got.shape()[0] != mask.shape()[0] || mask.shape()[1] == 0 {
            return false;
        }
        let steps = mask.shape()[1];
        Some((mask, steps, got.ndim() >= 3 && got.shape()[1] == steps))
    };
    let masked_at = |idx: &[usize]| match recurrent {
        None => {
            let at = &idx[..idx.len() - 1];
            merge.iter().flatten().any(|m| !m[at])
        }
        Some((mask, steps, sequences)) => {
            let step = if sequences { idx[1] } else { steps - 1 };
            !mask[[idx[0], step]]
        }
    };
    let mut needed = false;
    for ((idx, &g), &w) in got.indexed_iter().zip(want.iter()) {
        if agree(g, w) {
            continue;
        }
        if !masked_at(idx.slice()) {
            return false;
        }
        needed = true;
    }
    needed
}

/// Whether a normalization layer's output `got` is what the reference's `want` becomes when
/// each group's variance is computed as `mean(x²) − mean(x)²` in float32 (Keras's
/// `ops.moments` on PyTorch, used by GroupNormalization and by LayerNormalization
/// over axes that are not contiguous: the kept bug
/// `unexpected-nan-GroupNormalization-torch-variance-cancels`). That formula cancels: for a
/// group of `n` elements its rounding error is at most `B = (2n + 3)·u·mean(x²)` (`u`
/// float32's unit roundoff). With `ρ = B / (variance + epsilon)`, the group's normalized values
/// (the output less `beta`) are scaled by a factor within `[1/√(1+ρ), 1/√(1−ρ)]`, and where
/// `ρ ≥ 1` anything (NaN included) can come out. True when every element agrees, or is within
/// its group's factor (and the tolerance), or lies in a group where `ρ ≥ 1`; and some element
/// needs it.
fn naive_variance_explains(
    layer: &oracle::case::Layer,
    args: &[&ArrayD<f64>],
    w: &[&ArrayD<f64>],
    got: &ArrayD<f64>,
    want: &ArrayD<f64>,
    agree: &dyn Fn(f64, f64) -> bool,
) -> bool {
    let config = &layer.config;
    let [x] = args else {
        return false;
    };
    if x.ndim() < 2 || x.shape() != got.shape() || x.shape() != want.shape() {
        return false;
    }
    let Some(groups) = MomentGroups::of(layer, x.shape()) else {
        return false;
    };
    let epsilon = config
        .get("epsilon")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(1e-3);
    let center = config
        .get("center")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(true);
    // Keras builds gamma (with `scale`), then beta (with `center`).
    let beta = if center { w.last() } else { None };
    let beta_shape: Vec<usize> = groups.beta_axes.iter().map(|&a| x.shape()[a]).collect();
    if beta.is_some_and(|b| b.len() != beta_shape.iter().product::<usize>()) {
        return false;
    }
    // Per group: element count, sum, sum of squares about the mean, sum of squares.
    let mut stats: HashMap<Vec<usize>, (f64, f64, f64, f64)> = HashMap::new();
    for (idx, &v) in x.indexed_iter() {
        let s = stats.entry(groups.group(&idx)).or_default();
        s.0 += 1.0;
        s.1 += v;
        s.3 += v * v;
    }
    for (idx, &v) in x.indexed_iter() {
        let s = stats
            .get_mut(&groups.group(&idx))
            .expect("every element's group");
        let mean = s.1 / s.0;
        s.2 += (v - mean) * (v - mean);
    }
    // Keras computes these layers in float32 on PyTorch, float64 ones included (its
    // `result_type` of float64 and float32 is float32 there).
    let unit_roundoff = f64::from(f32::EPSILON) / 2.0;
    let rho = |(n, _, ss, sq): (f64, f64, f64, f64)| {
        let room = ss / n + epsilon;
        let bound = (2.0 * n + 3.0) * unit_roundoff * (sq / n);
        if room > 0.0 {
            bound / room
        } else {
            f64::INFINITY
        }
    };
    let mut needed = false;
    for ((idx, &g), &r) in got.indexed_iter().zip(want.iter()) {
        if agree(g, r) {
            continue;
        }
        needed = true;
        let rho = rho(stats[&groups.group(&idx)]);
        if rho >= 1.0 {
            continue;
        }
        let shift = beta.map_or(0.0, |b| {
            b.view()
                .into_shape_with_order(beta_shape.as_slice())
                .map_or(f64::NAN, |b| b[groups.beta_index(&idx)])
        });
        let room = (r - shift).abs() * (1.0 / (1.0 - rho).sqrt() - 1.0);
        if room.is_nan() || !g.is_finite() || !agree(g, r + (g - r).clamp(-room, room)) {
            return false;
        }
    }
    needed
}

/// A layer whose inputs are identical in `mode` and in eager mode but whose outputs differ
/// beyond its tolerance.
fn mode_divergence(
    case: &Case,
    dtype: DType,
    analysis: &ModelAnalysis,
    eager: (&LayerOutputs, Option<&CallMasks>),
    other: (&LayerOutputs, Option<&CallMasks>),
    mode: Mode,
    values: &AsFed,
) -> Option<Verdict> {
    let (layer, nonfinite, evidence) = identical_input_divergence(
        case,
        dtype,
        analysis,
        eager,
        other,
        values,
        1.0,
        &|_| false,
        None,
    )?;
    Some(
        Verdict::new(
            Kind::ModeMismatch,
            &layer.class_name,
            mode.name(),
            Some(&layer.name),
            format!(
                "'{}' differs between eager and {} on identical inputs{}",
                layer.name,
                mode.name(),
                if nonfinite { NONFINITE_INPUTS } else { "" }
            ),
        )
        .with(evidence),
    )
}

/// The first layer (in topological order, none of `skip`) whose inputs are identical in
/// runs `a` and `b` (two modes, or two backends) but whose outputs differ beyond its
/// tolerance times `slack`: the layer, whether its inputs hold NaN or an infinity, and the
/// evidence (`b`'s value against `a`'s).
#[allow(clippy::too_many_arguments)]
/// Whether a call on which two backends' outputs (`a`, `b`) differ is left to each backend's
/// own judgement: given the call's spec, inputs, masks and weights.
type JudgedApart = dyn Fn(
    &dyn oracle::layers::Spec,
    &[&ArrayD<f64>],
    &[Option<&Mask>],
    &[&ArrayD<f64>],
    &[ArrayD<f64>],
    &[ArrayD<f64>],
) -> bool;

#[allow(clippy::too_many_arguments)]
fn identical_input_divergence<'c>(
    case: &'c Case,
    dtype: DType,
    analysis: &ModelAnalysis,
    (eager, eager_masks): (&LayerOutputs, Option<&CallMasks>),
    (other, other_masks): (&LayerOutputs, Option<&CallMasks>),
    values: &AsFed,
    slack: f64,
    skip: &dyn Fn(&str) -> bool,
    judged_apart: Option<&JudgedApart>,
) -> Option<(&'c oracle::case::Layer, bool, Evidence)> {
    let AsFed { inputs, weights } = values;
    'calls: for call in &analysis.calls {
        let CallKind::Layer(spec) = &call.kind else {
            continue;
        };
        let layer = &case.model.layers[call.layer];
        if skip(&layer.name) {
            continue;
        }
        let key = (layer.name.clone(), call.node);
        let (Some(a), Some(b)) = (eager.get(&key), other.get(&key)) else {
            continue;
        };
        let (Some(ia), Some(ib)) = (
            call_inputs(case, analysis, call, eager, inputs),
            call_inputs(case, analysis, call, other, inputs),
        ) else {
            continue;
        };
        if ia.iter().zip(&ib).any(|(x, y)| {
            x.shape() != y.shape()
                || x.iter()
                    .zip(y.iter())
                    .any(|(p, q)| p.to_bits() != q.to_bits())
        }) {
            continue;
        }
        // The masks the call was given, as each mode's judgement worked them out (from that
        // mode's arrays): calls whose masks differ between the modes are not compared, as
        // calls on different inputs are not.
        let given = match (
            eager_masks.and_then(|m| m.get(&key)),
            other_masks.and_then(|m| m.get(&key)),
        ) {
            (Some(x), Some(y)) if x != y => continue,
            (x, y) => x.or(y),
        };
        let arg_masks: Vec<Option<&Mask>> = (0..ia.len())
            .map(|i| given.and_then(|g| g.get(i)).and_then(Option::as_ref))
            .collect();
        let w: Vec<&ArrayD<f64>> = weights
            .get(layer.name.as_str())
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        let tol = spec
            .tolerance_masked(dtype, &ia, &arg_masks, &w)
            .flushing(dtype);
        let tol = Tolerance {
            abs: tol.abs * slack,
            rel: tol.rel * slack,
            ..tol
        };
        // Modes may sum in different orders (eager and XLA do): where some order overflows
        // and another does not, either mode may be the non-finite one.
        // Worked out only where an element would otherwise differ (see `divergences`).
        let order_dependent = std::cell::OnceCell::new();
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let first_differing = |either: &[bool]| {
                x.iter().zip(y.iter()).enumerate().find(|(j, (p, q))| {
                    !(tol.accepts(**q, **p)
                        || either.get(*j).copied().unwrap_or(false)
                            && (!p.is_finite() || !q.is_finite()))
                })
            };
            let shape_differs = x.shape() != y.shape();
            let at = if shape_differs || first_differing(&[]).is_none() {
                None
            } else {
                first_differing(&element_flags(
                    order_dependent
                        .get_or_init(|| spec.order_dependent_overflow_masked(&ia, &arg_masks, &w))
                        .as_deref(),
                    i,
                    x.shape(),
                ))
                .map(|(_, (p, q))| (*p, *q))
            };
            if !shape_differs
                && at.is_some()
                && judged_apart.is_some_and(|apart| apart(spec.as_ref(), &ia, &arg_masks, &w, a, b))
            {
                continue 'calls;
            }
            if shape_differs || at.is_some() {
                // Whether the inputs hold NaN or an infinity says much of what a developer
                // looks at first, and tells known mishandlings of them apart.
                let nonfinite = ia.iter().any(|x| x.iter().any(|p| !p.is_finite()));
                let (max_abs_error, max_rel_error, normwise_rel_error) = if shape_differs {
                    (None, None, None)
                } else {
                    largest_errors(y.iter().zip(x.iter()))
                };
                let finite_error = !shape_differs
                    && x.iter()
                        .zip(y.iter())
                        .any(|(&p, &q)| p.is_finite() && q.is_finite() && !tol.accepts(q, p));
                // Each side computing the layer in float32 may be off by that dtype's
                // tolerance, so the two by twice it.
                let float32_tolerance = dtype == DType::Float64 && !shape_differs && {
                    let f = spec
                        .tolerance_masked(DType::Float32, &ia, &arg_masks, &w)
                        .flushing(DType::Float32);
                    let f = Tolerance {
                        abs: f.abs * 2.0,
                        rel: f.rel * 2.0,
                        ..f
                    };
                    x.iter()
                        .zip(y.iter())
                        .all(|(&p, &q)| tol.accepts(q, p) || f.accepts(q, p))
                };
                let evidence = Evidence {
                    max_abs_error,
                    max_rel_error,
                    normwise_rel_error,
                    finite_error,
                    float32_tolerance,
                    tf_value: at.map(|(_, q)| ValueClass::of(q)),
                    reference_value: at.map(|(p, _)| ValueClass::of(p)),
                    shape_differs,
                    nonfinite_inputs: nonfinite,
                    nonfinite_weights: w.iter().any(|a| a.iter().any(|x| !x.is_finite())),
                    nonfinite_kernel: w.first().is_some_and(|a| a.iter().any(|x| !x.is_finite())),
                    ..Evidence::default()
                };
                return Some((layer, nonfinite, evidence));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in entries' judge for `backend`, releases not known.
    fn judge_on(backend: Backend) -> Judge {
        Judge::new(
            Suppressions::builtin().unwrap(),
            Target {
                backend,
                ..Target::unknown_tensorflow()
            },
        )
    }

    #[test]
    fn a_tier_ranks_a_verdict_as_a_maintainer_would() {
        let divergence = |rel: f64| Evidence {
            max_abs_error: Some(rel),
            max_rel_error: Some(rel),
            normwise_rel_error: Some(rel),
            tf_value: Some(ValueClass::Finite),
            reference_value: Some(ValueClass::Finite),
            finite_error: true,
            ..Evidence::default()
        };
        // Float32 rounding of a constant in a float64 layer, and nothing more, is ieee.
        let rounding = divergence(5.3e-9);
        assert_eq!(
            Tier::of(Kind::Mismatch, &rounding, DType::Float64),
            Some(Tier::Ieee)
        );
        assert_eq!(
            Tier::of(Kind::Mismatch, &rounding, DType::Float32),
            Some(Tier::WrongResult)
        );
        assert_eq!(
            Tier::of(Kind::Mismatch, &divergence(0.5), DType::Float64),
            Some(Tier::WrongResult)
        );
        // NaN/Inf in the layer's inputs or weights: ieee, whatever the error.
        let nan_inputs = Evidence {
            nonfinite_inputs: true,
            ..divergence(0.5)
        };
        assert_eq!(
            Tier::of(Kind::UnexpectedNan, &nan_inputs, DType::Float32),
            Some(Tier::Ieee)
        );
        let nan_out_of_finite = Evidence {
            tf_value: Some(ValueClass::NaN),
            ..Evidence::default()
        };
        assert_eq!(
            Tier::of(Kind::UnexpectedNan, &nan_out_of_finite, DType::Float32),
            Some(Tier::WrongResult)
        );
        // The exact result overflows on finite data: NaN where it is infinite is ieee ...
        let overflow = Evidence {
            tf_value: Some(ValueClass::NaN),
            reference_value: Some(ValueClass::NegInf),
            ..Evidence::default()
        };
        assert_eq!(
            Tier::of(Kind::UnexpectedNan, &overflow, DType::Float32),
            Some(Tier::Ieee)
        );
        assert_eq!(
            Tier::of(Kind::ModeMismatch, &overflow, DType::Float32),
            Some(Tier::Ieee)
        );
        // ... unless some finite element differs too, or NaN stands for a finite value.
        let overflow_and_wrong = Evidence {
            finite_error: true,
            ..overflow.clone()
        };
        assert_eq!(
            Tier::of(Kind::UnexpectedNan, &overflow_and_wrong, DType::Float32),
            Some(Tier::WrongResult)
        );
        let nan_for_finite = Evidence {
            reference_value: Some(ValueClass::Finite),
            ..overflow
        };
        assert_eq!(
            Tier::of(Kind::UnexpectedNan, &nan_for_finite, DType::Float32),
            Some(Tier::WrongResult)
        );
        // NaN for a finite value where a float32 layer's intermediates overflow (its error
        // bound is beyond float32's range): ieee; not with a finite element wrong beside it,
        // nor in a float64 run.
        let intermediates_overflow = Evidence {
            beyond_float32: true,
            ..nan_for_finite.clone()
        };
        assert_eq!(
            Tier::of(Kind::UnexpectedNan, &intermediates_overflow, DType::Float32),
            Some(Tier::Ieee)
        );
        assert_eq!(
            Tier::of(Kind::UnexpectedNan, &intermediates_overflow, DType::Float64),
            Some(Tier::WrongResult)
        );
        let and_wrong = Evidence {
            finite_error: true,
            ..intermediates_overflow
        };
        assert_eq!(
            Tier::of(Kind::UnexpectedNan, &and_wrong, DType::Float32),
            Some(Tier::WrongResult)
        );
        let none = Evidence::default();
        assert_eq!(
            Tier::of(Kind::Timeout, &none, DType::Float32),
            Some(Tier::Crash)
        );
        assert_eq!(
            Tier::of(Kind::LateError, &none, DType::Float32),
            Some(Tier::Validation)
        );
        assert_eq!(
            Tier::of(Kind::UnclearError, &none, DType::Float32),
            Some(Tier::Message)
        );
        assert_eq!(Tier::of(Kind::Agree, &none, DType::Float32), None);
    }

    /// [`judge_valid`] with the built-in entries explaining verdicts.
    fn judged_valid(
        case: &Case,
        dtype: DType,
        analysis: &ModelAnalysis,
        tf: &TfOutcome,
    ) -> Vec<Verdict> {
        let j = Judge::builtin().unwrap();
        let explain = |v: &Verdict, a: Option<&ModelAnalysis>| j.explain(case, dtype, v, a);
        let mut verdicts = judge_valid(case, dtype, analysis, tf, &explain);
        for v in &mut verdicts {
            v.known = j.explain(case, dtype, v, Some(analysis));
        }
        verdicts
    }

    /// Two `UpSampling2D`, two `Cropping2D`, one `Conv2DTranspose`, one `Concatenate`, ...
    fn resample_case() -> Case {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../seeds/hand-resample.case.json"
        );
        Case::read(path).unwrap()
    }

    /// As Keras 3.15 words it (`keras/src/utils/traceback_utils.py`).
    fn wrapped(class: &str, inner: &str) -> String {
        format!(
            "Exception encountered when calling {class}.call().\n\n\x1b[1m{inner}\x1b[0m\n\n\
             Arguments received by {class}.call():\n  \u{2022} inputs=tf.Tensor(shape=(1, 6, 6, 3), dtype=float32)"
        )
    }

    #[test]
    fn an_error_names_the_problem_by_layer_argument_or_class_in_any_case() {
        let e = |m: &str| PyError {
            constructor: false,
            kind: "ValueError".into(),
            message: m.into(),
            phase: "build".into(),
            traceback: String::new(),
            layer: None,
        };
        let mut v = Violation::new(
            oracle::violation::Category::Axis,
            oracle::violation::Tag::KerasEnforced,
        );
        v.layer = "group_normalization".into();
        v.class = "GroupNormalization".into();
        v.parameter = "axis".into();
        assert!(names_the_problem(
            &e("Axis 0 of input tensor should have a defined dimension"),
            &v
        ));
        assert!(names_the_problem(
            &e("Layer group_normalization weight shape (8,) is not compatible"),
            &v
        ));
        assert!(!names_the_problem(
            &e("Shapes used to initialize variables must be fully-defined"),
            &v
        ));
        assert!(names_the_problem(
            &e("Received: shape=(None, 4) for variable path='group_normalization/gamma'"),
            &v
        ));
        v.parameter = "inputs".into();
        assert!(!names_the_problem(
            &e("Inputs have incompatible shapes. Received shapes (1, 7) and (6,)"),
            &v
        ));
    }

    /// A layer only TF's CPU kernels refuse (float64 `channels_first` transposed convolutions):
    /// XLA, with kernels of its own, runs it, which is no missing validation (campaign 19
    /// reported it as one, running XLA alone); eager's refusal is the known limitation.
    #[test]
    fn an_xla_run_of_what_only_cpu_kernels_refuse_is_no_missing_validation() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fuzzer/tests/data/conv2d_transpose_float64_channels_first.case.json"
        );
        let case = Case::read(path).unwrap();
        let v = match oracle::check::check(&case) {
            Err(CheckError::Invalid(v)) => v,
            other => panic!("the reference should refuse the case: {other:?}"),
        };
        assert!(v.cpu_kernels(), "{v:?}");
        let ran = || ModeOutcome::Outputs(LayerOutputs::new());
        let refused = || {
            ModeOutcome::Error(
                PyError {
                    constructor: false,
                    kind: "InvalidArgumentError".into(),
                    message: "Conv2DCustomBackpropInputOp only supports NHWC.".into(),
                    phase: "call".into(),
                    traceback: String::new(),
                    layer: Some(v.layer.clone()),
                },
                LayerOutputs::new(),
            )
        };
        let judged = |v: &Violation, modes: Vec<(Mode, ModeOutcome)>| {
            let tf = TfOutcome::Ran {
                modes,
                reused: false,
                tf_seconds: 0.0,
                worker_seconds: 0.0,
            };
            judge_invalid(&case, v, &tf, None)
                .into_iter()
                .map(|v| {
                    let known = Judge::builtin()
                        .unwrap()
                        .explain(&case, case.dtype, &v, None);
                    (v.kind, v.mode, known.map(|k| k.to_string()))
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            judged(&v, vec![(Mode::Xla, ran())]),
            [(Kind::Agree, Some(Mode::Xla), None)]
        );
        let limitation = Some("cpu-transposed-conv-channels-last-only".to_owned());
        for modes in [
            vec![(Mode::Eager, refused()), (Mode::Xla, ran())],
            vec![(Mode::Xla, ran()), (Mode::Eager, refused())],
        ] {
            assert_eq!(
                judged(&v, modes),
                [(Kind::LateError, Some(Mode::Eager), limitation.clone())]
            );
        }
        // Another mode that runs it is still a missing validation, and so is XLA's run of
        // what every kernel should refuse.
        assert_eq!(
            judged(&v, vec![(Mode::Graph, ran()), (Mode::Xla, ran())])[0].0,
            Kind::MissingValidation
        );
        let everywhere = Violation {
            refused: oracle::violation::Refused::AtBuild,
            ..v.clone()
        };
        assert_eq!(
            judged(&everywhere, vec![(Mode::Xla, ran())])[0].0,
            Kind::MissingValidation
        );
    }

    /// What only TF's CPU kernels refuse is no precondition of another backend: JAX running it
    /// is no missing validation, while TensorFlow's eager run of it is.
    #[test]
    fn another_backend_running_what_only_tf_cpu_kernels_refuse_is_no_missing_validation() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fuzzer/tests/data/conv2d_transpose_float64_channels_first.case.json"
        );
        let case = Case::read(path).unwrap();
        let on_tf = oracle::check::check(&case);
        assert!(matches!(&on_tf, Err(CheckError::Invalid(v)) if v.cpu_kernels()));
        let tf = TfOutcome::Ran {
            modes: vec![(Mode::Eager, ModeOutcome::Outputs(LayerOutputs::new()))],
            reused: false,
            tf_seconds: 0.0,
            worker_seconds: 0.0,
        };
        let on = |backend| {
            let judge = Judge::new(
                crate::Suppressions::none(),
                Target::on(backend, "3.15.1", "2.21.0"),
            );
            // The reference checked for the backend, as the binary's `--backend` makes it.
            oracle::backend::with(backend, || {
                let oracle = oracle::check::check(&case);
                judge
                    .judge(&case, case.dtype, &oracle, &tf)
                    .into_iter()
                    .map(|v| v.kind)
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(on(crate::Backend::Jax), [Kind::Agree]);
        assert_eq!(on(crate::Backend::Tensorflow), [Kind::MissingValidation]);
    }

    /// Values only a kernel checks, refused by one mode's kernel: a mode that ran the whole
    /// model on them is a missing validation in that mode (XLA's gather clamps an index out
    /// of range); where no mode ran it, the refusal is the whole answer.
    #[test]
    fn a_mode_that_runs_values_another_mode_refused_is_a_missing_validation() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../crashes/missing-validation-Embedding-xla-out-of-range-index-clamped/case.case.json"
        );
        let case = Case::read(path).unwrap();
        let mut v = Violation::new(
            oracle::violation::Category::InputValue,
            oracle::violation::Tag::KerasEnforced,
        )
        .parameter("inputs")
        .actual(2)
        .detail("at [0, 2] is not a row of the embedding");
        v.layer = "embedding".into();
        v.class = "Embedding".into();
        let refused = || {
            ModeOutcome::Error(
                PyError {
                    constructor: false,
                    kind: "InvalidArgumentError".into(),
                    message: "indices[0,2] = 2 is not in [0, 2)".into(),
                    phase: "call".into(),
                    traceback: String::new(),
                    layer: Some("embedding".into()),
                },
                LayerOutputs::new(),
            )
        };
        let judged = |modes: Vec<(Mode, ModeOutcome)>| {
            let tf = TfOutcome::Ran {
                modes,
                reused: false,
                tf_seconds: 0.0,
                worker_seconds: 0.0,
            };
            judge_invalid(&case, &v, &tf, None)
        };
        let verdicts = judged(vec![
            (Mode::Eager, refused()),
            (Mode::Xla, ModeOutcome::Outputs(LayerOutputs::new())),
        ]);
        let kinds: Vec<_> = verdicts.iter().map(|v| (v.kind, v.mode)).collect();
        assert_eq!(
            kinds,
            [
                (Kind::Agree, Some(Mode::Eager)),
                (Kind::MissingValidation, Some(Mode::Xla))
            ]
        );
        assert_eq!(
            verdicts[1].signature,
            "missing-validation/Embedding/input-value"
        );
        assert!(
            verdicts[1]
                .detail
                .contains("which eager refused (InvalidArgumentError: "),
            "{}",
            verdicts[1].detail
        );
        let verdicts = judged(vec![(Mode::Eager, refused()), (Mode::Graph, refused())]);
        assert_eq!(verdicts.len(), 1);
        assert_eq!(verdicts[0].kind, Kind::Agree);
    }

    /// An invalid layer (not a value that only kernels check) that one mode refuses and
    /// another runs: the refusal is judged, and the mode that ran it is a missing validation.
    /// Where every mode refused, a later mode's refusal is judged too when it is a problem of
    /// a kind the first mode's was not (a kernel's late error after Keras's clear one).
    #[test]
    fn every_mode_is_judged_on_an_invalid_layer() {
        let case = resample_case();
        let mut v = Violation::new(
            oracle::violation::Category::IncompatibleShapes,
            oracle::violation::Tag::KerasEnforced,
        )
        .parameter("kernel_size")
        .actual(3)
        .detail("exceeds the input");
        v.layer = "conv2d_transpose".into();
        v.class = "Conv2DTranspose".into();
        let refused = |kind: &str, message: &str| {
            ModeOutcome::Error(
                PyError {
                    constructor: false,
                    kind: kind.into(),
                    message: message.into(),
                    phase: "call".into(),
                    traceback: String::new(),
                    layer: Some("conv2d_transpose".into()),
                },
                LayerOutputs::new(),
            )
        };
        let clear = || {
            refused(
                "ValueError",
                "Layer 'conv2d_transpose' kernel_size too large",
            )
        };
        let late = || refused("InvalidArgumentError", "Conv2DBackpropInput: size mismatch");
        let judged = |modes: Vec<(Mode, ModeOutcome)>| {
            let tf = TfOutcome::Ran {
                modes,
                reused: false,
                tf_seconds: 0.0,
                worker_seconds: 0.0,
            };
            judge_invalid(&case, &v, &tf, None)
                .into_iter()
                .map(|v| (v.kind, v.mode))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            judged(vec![
                (Mode::Graph, clear()),
                (Mode::Eager, ModeOutcome::Outputs(LayerOutputs::new()))
            ]),
            [
                (Kind::Agree, Some(Mode::Graph)),
                (Kind::MissingValidation, Some(Mode::Eager))
            ]
        );
        let tf = TfOutcome::Ran {
            modes: vec![
                (Mode::Graph, clear()),
                (Mode::Eager, ModeOutcome::Outputs(LayerOutputs::new())),
            ],
            reused: false,
            tf_seconds: 0.0,
            worker_seconds: 0.0,
        };
        let missing = &judge_invalid(&case, &v, &tf, None)[1];
        assert_eq!(
            missing.signature,
            "missing-validation/Conv2DTranspose/incompatible-shapes"
        );
        assert!(
            missing.detail.contains("which graph refused (ValueError: "),
            "{}",
            missing.detail
        );
        assert_eq!(
            judged(vec![(Mode::Eager, clear()), (Mode::Xla, late())]),
            [
                (Kind::Agree, Some(Mode::Eager)),
                (Kind::LateError, Some(Mode::Xla))
            ]
        );
        // The same kind of answer twice is one verdict.
        assert_eq!(
            judged(vec![(Mode::Eager, clear()), (Mode::Graph, clear())]),
            [(Kind::Agree, Some(Mode::Eager))]
        );
        assert_eq!(
            judged(vec![(Mode::Eager, late()), (Mode::Graph, late())]),
            [(Kind::LateError, Some(Mode::Eager))]
        );
        assert_eq!(
            judged(vec![(Mode::Eager, late()), (Mode::Graph, clear())]),
            [(Kind::LateError, Some(Mode::Eager))]
        );
    }

    /// Where no mode ran the model, an error the worker located at a layer before the invalid
    /// one is an unexpected rejection there, and one on another branch says nothing about
    /// the violation; one at a layer fed by the invalid one is still its missing validation.
    #[test]
    fn a_located_error_before_or_beside_the_invalid_layer_is_no_answer_to_it() {
        let case = resample_case();
        let mut v = Violation::new(
            oracle::violation::Category::IncompatibleShapes,
            oracle::violation::Tag::KerasEnforced,
        );
        v.layer = "conv2d_transpose".into();
        v.class = "Conv2DTranspose".into();
        v.parameter = "kernel_size".into();
        let graph_fails_at = |v: &Violation, layer: &str| {
            let e = PyError {
                constructor: false,
                kind: "ValueError".into(),
                message: format!(
                    "Negative dimension size caused by subtracting 3 from 2 for \
                     '{{{{node functional_1/{layer}_1/op}}}}'"
                ),
                phase: "call".into(),
                traceback: String::new(),
                layer: Some(layer.into()),
            };
            let tf = TfOutcome::Ran {
                modes: vec![(Mode::Graph, ModeOutcome::Error(e, LayerOutputs::new()))],
                reused: false,
                tf_seconds: 0.0,
                worker_seconds: 0.0,
            };
            let mut verdicts = judge_invalid(&case, v, &tf, None);
            assert_eq!(verdicts.len(), 1);
            verdicts.remove(0)
        };
        // concatenate feeds conv2d_transpose: TF never reached the invalid layer.
        let verdict = graph_fails_at(&v, "concatenate");
        assert_eq!(verdict.kind, Kind::UnexpectedRejection, "{verdict:?}");
        assert_eq!(
            (verdict.layer.as_deref(), verdict.mode),
            (Some("concatenate"), Some(Mode::Graph))
        );
        assert_eq!(
            verdict.signature,
            "unexpected-rejection/Concatenate/graph:ValueError"
        );
        assert!(
            verdict.detail.contains(
                "graph raises where the reference (and other modes) do not: ValueError: "
            ) && verdict
                .detail
                .contains("the reference's first violation is later, at 'conv2d_transpose'"),
            "{}",
            verdict.detail
        );
        // Eager errors are located by Keras's call wrapper, where one layer has the class.
        let eager = PyError {
            constructor: false,
            kind: "InvalidArgumentError".into(),
            message: wrapped(
                "Concatenate",
                "ConcatOp : Dimension 1 in both shapes must be equal",
            ),
            phase: "call".into(),
            traceback: String::new(),
            layer: None,
        };
        let tf = TfOutcome::Ran {
            modes: vec![(Mode::Eager, ModeOutcome::Error(eager, LayerOutputs::new()))],
            reused: false,
            tf_seconds: 0.0,
            worker_seconds: 0.0,
        };
        let verdict = judge_invalid(&case, &v, &tf, None).remove(0);
        assert_eq!(
            (verdict.kind, verdict.layer.as_deref()),
            (Kind::UnexpectedRejection, Some("concatenate"))
        );
        // The invalid layer's own error is judged as its answer, and a layer it feeds that
        // refuses says it was built.
        assert_ne!(graph_fails_at(&v, "conv2d_transpose").kind, Kind::Agree);
        assert_eq!(
            graph_fails_at(&v, "cropping2d_1").kind,
            Kind::MissingValidation
        );
        // Another branch: with the invalid layer at up_sampling2d, cropping2d (fed by
        // up_sampling2d_1) is neither before it nor after it.
        v.layer = "up_sampling2d".into();
        v.class = "UpSampling2D".into();
        let verdict = graph_fails_at(&v, "cropping2d");
        assert_eq!(verdict.kind, Kind::Agree, "{verdict:?}");
        assert!(
            verdict.detail.starts_with("inconclusive: "),
            "{}",
            verdict.detail
        );
        // Unless the reference checked that layer and accepted it: then it is an unexpected
        // rejection there, as before the invalid layer.
        let checked = oracle::check::check(&case).unwrap();
        let e = PyError {
            constructor: false,
            kind: "ValueError".into(),
            message: "Negative dimension size".into(),
            phase: "call".into(),
            traceback: String::new(),
            layer: Some("cropping2d".into()),
        };
        let tf = TfOutcome::Ran {
            modes: vec![(Mode::Graph, ModeOutcome::Error(e, LayerOutputs::new()))],
            reused: false,
            tf_seconds: 0.0,
            worker_seconds: 0.0,
        };
        let verdicts = judge_invalid(&case, &v, &tf, Some(&checked));
        assert_eq!(verdicts.len(), 1);
        assert_eq!(
            (verdicts[0].kind, verdicts[0].layer.as_deref()),
            (Kind::UnexpectedRejection, Some("cropping2d")),
            "{:?}",
            verdicts[0]
        );
        assert!(
            verdicts[0].detail.contains(
                "the reference accepts it, and its violation is on another branch, at 'up_sampling2d'"
            ),
            "{}",
            verdicts[0].detail
        );
    }

    /// A refusal by a layer that consumes the invalid layer's output says Keras built the
    /// invalid one: missing validation there, not an unclear message about it. A refusal
    /// that only a message places on another branch is still judged as the answer to the
    /// violation.
    #[test]
    fn a_refusal_by_a_later_consumer_is_missing_validation_at_the_invalid_layer() {
        let case = resample_case();
        let mut v = Violation::new(
            oracle::violation::Category::IncompatibleShapes,
            oracle::violation::Tag::KerasEnforced,
        );
        v.layer = "up_sampling2d_1".into();
        v.class = "UpSampling2D".into();
        v.parameter = "size".into();
        let refused_by = |layer: &str| {
            let e = PyError {
                constructor: false,
                kind: "ValueError".into(),
                message: format!(
                    "Input 0 of layer '{layer}' is incompatible with the layer: expected ndim=4, found ndim=3"
                ),
                phase: "build".into(),
                traceback: String::new(),
                layer: None,
            };
            judge_invalid(&case, &v, &TfOutcome::Rejected(e), None).remove(0)
        };
        // conv2d_transpose consumes up_sampling2d_1 through cropping2d and concatenate.
        for later in ["cropping2d", "conv2d_transpose"] {
            let verdict = refused_by(later);
            assert_eq!(
                verdict.kind,
                Kind::MissingValidation,
                "{later}: {verdict:?}"
            );
            assert_eq!(verdict.layer.as_deref(), Some("up_sampling2d_1"));
            assert!(
                verdict
                    .detail
                    .contains(&format!("layer '{later}', which consumes its output")),
                "{}",
                verdict.detail
            );
        }
        // Named by a class only: both Cropping2D layers consume up_sampling2d_1, but only
        // one consumes up_sampling2d.
        let by_class = |layer: &str| {
            let e = PyError {
                constructor: false,
                kind: "ValueError".into(),
                message: wrapped("Cropping2D", "the cropping leaves nothing"),
                phase: "build".into(),
                traceback: String::new(),
                layer: None,
            };
            let mut at = v.clone();
            at.layer = layer.into();
            judge_invalid(&case, &at, &TfOutcome::Rejected(e), None).remove(0)
        };
        let verdict = by_class("up_sampling2d_1");
        assert_eq!(verdict.kind, Kind::MissingValidation, "{verdict:?}");
        assert!(
            verdict
                .detail
                .contains("a Cropping2D layer, which consumes its output"),
            "{}",
            verdict.detail
        );
        assert_eq!(by_class("up_sampling2d").kind, Kind::UnclearError);
        // up_sampling2d is on the other branch; input_layer comes before.
        for elsewhere in ["up_sampling2d", "input_layer"] {
            let verdict = refused_by(elsewhere);
            assert_eq!(verdict.kind, Kind::UnclearError, "{elsewhere}: {verdict:?}");
        }
        // A wrapper's own call may be named by the class it wraps: a later layer of that
        // class is not taken for the one that refused.
        let tensor = |name: &str| {
            serde_json::json!({"args": [{"class_name": "__keras_tensor__",
                "config": {"keras_history": [name, 0, 0]}}], "kwargs": {}})
        };
        let wrapped_case = Case::from_json_str(
            &serde_json::json!({
                "format": "semfuzz-case/1", "dtype": "float64",
                "model": {"name": "functional", "layers": [
                    {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                     "config": {"batch_shape": [null, 3, 5, 1], "name": "x"}, "inbound_nodes": []},
                    {"module": "keras.layers", "class_name": "TimeDistributed", "name": "td",
                     "config": {"name": "td", "layer": {"module": "keras.layers",
                        "class_name": "Conv1D", "config": {"name": "c", "filters": 1, "kernel_size": 9}}},
                     "inbound_nodes": [tensor("x")]},
                    {"module": "keras.layers", "class_name": "Conv1D", "name": "conv",
                     "config": {"name": "conv", "filters": 1, "kernel_size": 1},
                     "inbound_nodes": [tensor("td")]}],
                  "input_layers": [["x", 0, 0]], "output_layers": [["conv", 0, 0]]},
                "weights": {}, "inputs": []
            })
            .to_string(),
            "wrapped.case.json",
        )
        .unwrap();
        let mut td = v.clone();
        td.layer = "td".into();
        td.class = "TimeDistributed".into();
        td.parameter = "layer.kernel_size".into();
        let e = PyError {
            constructor: false,
            kind: "ValueError".into(),
            message: wrapped("Conv1D", "Computed output size would be zero or negative."),
            phase: "build".into(),
            traceback: String::new(),
            layer: None,
        };
        let verdict = judge_invalid(&wrapped_case, &td, &TfOutcome::Rejected(e), None).remove(0);
        assert_ne!(verdict.kind, Kind::MissingValidation, "{verdict:?}");
        // Nor is a class an attention layer builds inside itself (its EinsumDense
        // projections), where a later layer of that class follows it.
        let attention_case = Case::from_json_str(
            &serde_json::json!({
                "format": "semfuzz-case/1", "dtype": "float64",
                "model": {"name": "functional", "layers": [
                    {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                     "config": {"batch_shape": [null, 3, 4], "name": "x"}, "inbound_nodes": []},
                    {"module": "keras.layers", "class_name": "MultiHeadAttention", "name": "mha",
                     "config": {"name": "mha", "num_heads": 0, "key_dim": 2},
                     "inbound_nodes": [{"args": [
                        {"class_name": "__keras_tensor__", "config": {"keras_history": ["x", 0, 0]}},
                        {"class_name": "__keras_tensor__", "config": {"keras_history": ["x", 0, 0]}}],
                        "kwargs": {}}]},
                    {"module": "keras.layers", "class_name": "EinsumDense", "name": "ed",
                     "config": {"name": "ed", "equation": "abc,cd->abd", "output_shape": [null, 2]},
                     "inbound_nodes": [tensor("mha")]}],
                  "input_layers": [["x", 0, 0]], "output_layers": [["ed", 0, 0]]},
                "weights": {}, "inputs": []
            })
            .to_string(),
            "attention.case.json",
        )
        .unwrap();
        let mut mha = v.clone();
        mha.layer = "mha".into();
        mha.class = "MultiHeadAttention".into();
        mha.parameter = "num_heads".into();
        let e = PyError {
            constructor: false,
            kind: "InvalidArgumentError".into(),
            message: wrapped("EinsumDense", "Matrix size-incompatible"),
            phase: "call".into(),
            traceback: String::new(),
            layer: None,
        };
        let verdict =
            judge_invalid(&attention_case, &mha, &TfOutcome::Rejected(e.clone()), None).remove(0);
        assert_eq!(verdict.kind, Kind::LateError, "{verdict:?}");
        // Nor, for a violation only TF's kernels see, is that class another layer that
        // refused first (which would make the case inconclusive).
        mha.refused = oracle::violation::Refused::AtRun;
        let verdict = judge_invalid(&attention_case, &mha, &TfOutcome::Rejected(e), None).remove(0);
        assert_eq!(verdict.kind, Kind::LateError, "{verdict:?}");
        assert!(consumes(&case.model, "conv1d_transpose", "input_layer"));
        assert!(!consumes(&case.model, "up_sampling2d", "up_sampling2d_1"));
        assert!(!consumes(&case.model, "cropping2d", "cropping2d"));
    }

    /// A kernel's refusal is told by the backend's own error types: PyTorch's operators raise
    /// `RuntimeError`, which on TensorFlow is no kernel's. Where the violated sizes are unknown
    /// until the model runs (declared `None`), the kernel's refusal is the one to expect.
    #[test]
    fn a_kernel_error_is_the_backends_and_expected_where_sizes_were_unknown_at_build() {
        let case = resample_case();
        let mut v = Violation::new(
            oracle::violation::Category::EmptyOutput,
            oracle::violation::Tag::KerasEnforced,
        );
        v.layer = "up_sampling2d_1".into();
        v.class = "UpSampling2D".into();
        v.parameter = "size".into();
        let refused = |v: &Violation, backend: Backend| {
            let e = PyError {
                constructor: false,
                kind: "RuntimeError".into(),
                message: wrapped("UpSampling2D", "Invalid computed output size: 0"),
                phase: "call".into(),
                traceback: String::new(),
                layer: None,
            };
            oracle::backend::with(backend, || {
                judge_invalid(&case, v, &TfOutcome::Rejected(e), None).remove(0)
            })
        };
        let on_torch = refused(&v, Backend::Torch);
        assert_eq!(on_torch.kind, Kind::LateError, "{on_torch:?}");
        assert!(on_torch.signature.contains("RuntimeError"), "{on_torch:?}");
        let on_tf = refused(&v, Backend::Tensorflow);
        assert_eq!(on_tf.kind, Kind::Agree, "{on_tf:?}");
        v.refused = oracle::violation::Refused::UnknownAtBuild;
        let unknown = refused(&v, Backend::Torch);
        assert_eq!(unknown.kind, Kind::Agree, "{unknown:?}");
    }

    /// Where eager ran the invalid model and XLA raised at a layer on another branch, the
    /// XLA error is no answer to the violation: missing validation, the error noted. XLA
    /// raising at a layer fed by the invalid one is still a later refusal.
    #[test]
    fn another_modes_error_elsewhere_in_the_model_is_no_answer_to_the_violation() {
        let case = resample_case();
        let mut v = Violation::new(
            oracle::violation::Category::IncompatibleShapes,
            oracle::violation::Tag::Semantic,
        );
        v.layer = "up_sampling2d_1".into();
        v.class = "UpSampling2D".into();
        v.parameter = "size".into();
        let xla_raises_at = |layer: &str| {
            let e = PyError {
                constructor: false,
                kind: "ValueError".into(),
                message: "Negative dimension size caused by subtracting 2 from 1".into(),
                phase: "call".into(),
                traceback: String::new(),
                layer: Some(layer.into()),
            };
            let tf = TfOutcome::Ran {
                modes: vec![
                    (Mode::Eager, ModeOutcome::Outputs(LayerOutputs::new())),
                    (Mode::Xla, ModeOutcome::Error(e, LayerOutputs::new())),
                ],
                reused: false,
                tf_seconds: 0.0,
                worker_seconds: 0.0,
            };
            judge_invalid(&case, &v, &tf, None).remove(0)
        };
        let verdict = xla_raises_at("up_sampling2d");
        assert_eq!(verdict.kind, Kind::MissingValidation, "{verdict:?}");
        assert_eq!(verdict.mode, None);
        assert!(
            verdict
                .detail
                .contains("(xla raised elsewhere in the model, at layer 'up_sampling2d': "),
            "{}",
            verdict.detail
        );
        let verdict = xla_raises_at("cropping2d");
        assert_eq!(verdict.kind, Kind::MissingValidation, "{verdict:?}");
        assert!(
            verdict
                .detail
                .contains("which consumes its output, refused first"),
            "{}",
            verdict.detail
        );
        // The invalid layer's own error in XLA is still judged as its answer.
        assert_ne!(
            xla_raises_at("up_sampling2d_1").kind,
            Kind::MissingValidation
        );
    }

    /// A later layer that refuses the model at build shows that the invalid layer was built
    /// without complaint (a missing validation); a later layer whose constructor refuses it
    /// does not: Keras constructs every layer before it builds any (inconclusive).
    #[test]
    fn a_constructor_refusal_downstream_is_no_missing_validation() {
        let case = resample_case();
        let mut v = Violation::new(
            oracle::violation::Category::IncompatibleShapes,
            oracle::violation::Tag::Semantic,
        );
        v.layer = "up_sampling2d_1".into();
        v.class = "UpSampling2D".into();
        v.parameter = "size".into();
        let refused_by_cropping = |constructor: bool| {
            let e = PyError {
                constructor,
                kind: "TypeError".into(),
                message: "could not be deserialized properly".into(),
                phase: "build".into(),
                traceback: String::new(),
                layer: Some("cropping2d".into()),
            };
            judge_invalid(&case, &v, &TfOutcome::Rejected(e), None).remove(0)
        };
        let built = refused_by_cropping(false);
        assert_eq!(built.kind, Kind::MissingValidation, "{built:?}");
        let constructed = refused_by_cropping(true);
        assert_eq!(constructed.kind, Kind::Agree, "{constructed:?}");
        assert!(
            constructed.detail.starts_with("inconclusive"),
            "{constructed:?}"
        );
    }

    /// An internal Python error (`ZeroDivisionError`, `IndexError`) is no answer to a check,
    /// even where Keras's wrapper names the layer's class: a late error. A `ValueError` so
    /// wrapped is a clear refusal.
    #[test]
    fn an_internal_python_error_is_a_late_error_however_it_is_wrapped() {
        let case = resample_case();
        let mut v = Violation::new(
            oracle::violation::Category::IllegalArgument,
            oracle::violation::Tag::KerasEnforced,
        );
        v.layer = "conv2d_transpose".into();
        v.class = "Conv2DTranspose".into();
        v.parameter = "strides[0]".into();
        let refused_with = |kind: &str| {
            let e = PyError {
                constructor: false,
                kind: kind.into(),
                message: wrapped("Conv2DTranspose", "division by zero"),
                phase: "call".into(),
                traceback: String::new(),
                layer: None,
            };
            judge_invalid(&case, &v, &TfOutcome::Rejected(e), None).remove(0)
        };
        let late = refused_with("ZeroDivisionError");
        assert_eq!(late.kind, Kind::LateError, "{late:?}");
        assert_eq!(
            late.signature,
            "late-error/Conv2DTranspose/ZeroDivisionError"
        );
        assert!(
            late.detail
                .starts_with("rejected only by an internal error")
        );
        assert_eq!(refused_with("IndexError").kind, Kind::LateError);
        assert_eq!(refused_with("ValueError").kind, Kind::Agree);
        // A constructor's accident, as `from_config` wraps it (a `TypeError` that keeps only
        // the message, after the config): `GroupQueryAttention(head_dim=-1)` takes the square
        // root of -1. A constructor's own check so wrapped is a clear refusal.
        let deserialized = |inner: &str| {
            let e = PyError {
                constructor: false,
                kind: "TypeError".into(),
                message: format!(
                    "<class 'keras.src.layers.convolutional.conv2d_transpose.Conv2DTranspose'> could not be deserialized properly. Please ensure ...\n\nconfig={{'name': 'conv2d_transpose', 'strides': 0}}.\n\nException encountered: Error when deserializing class 'Conv2DTranspose' using config={{'strides': 0}}.\n\nException encountered: {inner}"
                ),
                phase: "build".into(),
                traceback: String::new(),
                layer: None,
            };
            judge_invalid(&case, &v, &TfOutcome::Rejected(e), None).remove(0)
        };
        let late = deserialized("math domain error");
        assert_eq!(late.kind, Kind::LateError, "{late:?}");
        assert_eq!(late.signature, "late-error/Conv2DTranspose/TypeError");
        assert_eq!(
            deserialized(
                "Invalid value for argument `strides`. Expected a strictly positive value."
            )
            .kind,
            Kind::Agree
        );
    }

    /// Keras exports `GroupedQueryAttention` as `GroupQueryAttention` (the class configs
    /// carry) and names the former in its call wrapper.
    #[test]
    fn a_message_naming_the_python_class_of_an_exported_alias_names_the_layer() {
        let mut v = Violation::new(
            oracle::violation::Category::IncompatibleShapes,
            oracle::violation::Tag::KerasEnforced,
        );
        v.layer = "group_query_attention".into();
        v.class = "GroupQueryAttention".into();
        v.parameter = "inputs".into();
        let e = PyError {
            constructor: false,
            kind: "ValueError".into(),
            message: wrapped(
                "GroupedQueryAttention",
                "The last dimension of `query_shape` and `value_shape` must be equal",
            ),
            phase: "build".into(),
            traceback: String::new(),
            layer: None,
        };
        assert!(names_the_problem(&e, &v));
        // The wrapper locates the layer by that class too.
        let case = Case::from_json_str(
            &serde_json::json!({
                "format": "semfuzz-case/1", "dtype": "float32",
                "model": {"name": "functional", "layers": [
                    {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                     "config": {"batch_shape": [null, 2, 4], "name": "x"}, "inbound_nodes": []},
                    {"module": "keras.layers", "class_name": "GroupQueryAttention", "name": "gqa",
                     "config": {"name": "gqa", "head_dim": 2, "num_query_heads": 2,
                        "num_key_value_heads": 1},
                     "inbound_nodes": [{"args": [
                        {"class_name": "__keras_tensor__", "config": {"keras_history": ["x", 0, 0]}},
                        {"class_name": "__keras_tensor__", "config": {"keras_history": ["x", 0, 0]}}],
                        "kwargs": {}}]}],
                  "input_layers": [["x", 0, 0]], "output_layers": [["gqa", 0, 0]]},
                "weights": {}, "inputs": []
            })
            .to_string(),
            "gqa.case.json",
        )
        .unwrap();
        assert_eq!(
            blamed_by_message(&case, &e.message),
            ("GroupQueryAttention", Some("gqa"))
        );
        v.class = "MultiHeadAttention".into();
        assert!(!names_the_problem(&e, &v));
    }

    #[test]
    fn the_class_in_keras_call_wrapper_locates_a_layer_of_a_unique_class() {
        let case = resample_case();
        let m = wrapped("Conv2DTranspose", "Conv2DCustomBackpropInput: unsupported");
        assert_eq!(
            blamed_by_message(&case, &m),
            ("Conv2DTranspose", Some("conv2d_transpose"))
        );
        assert_eq!(what_it_says(&m), "Conv2DCustomBackpropInput: unsupported");
    }

    #[test]
    fn a_graph_node_path_names_its_layer() {
        let case = resample_case();
        let m = "Negative dimension size caused by subtracting 2 from 1 for '{{node functional_1/up_sampling2d_1/resize}} = ResizeBilinear[T=DT_FLOAT]'";
        assert_eq!(
            blamed_by_message(&case, m),
            ("UpSampling2D", Some("up_sampling2d_1"))
        );
    }

    #[test]
    fn a_class_used_twice_names_the_class_but_no_layer() {
        let case = resample_case();
        let m = wrapped("UpSampling2D", "boom");
        assert_eq!(blamed_by_message(&case, &m), ("UpSampling2D", None));
    }

    #[test]
    fn a_layer_name_in_the_message_wins_over_the_class() {
        let case = resample_case();
        let m = wrapped(
            "UpSampling2D",
            "Input 0 of layer 'up_sampling2d_1' is incompatible with the layer",
        );
        assert_eq!(
            blamed_by_message(&case, &m),
            ("UpSampling2D", Some("up_sampling2d_1"))
        );
        let m = "Layer \"cropping2d_1\" expected 0 variables, but received 1";
        assert_eq!(
            blamed_by_message(&case, m),
            ("Cropping2D", Some("cropping2d_1"))
        );
        // A prefix of another layer's name is not that layer.
        let m = "Input 0 of layer 'cropping2d_1' is incompatible";
        assert_ne!(blamed_by_message(&case, m).1, Some("cropping2d"));
    }

    #[test]
    fn unknown_classes_and_plain_messages_stay_with_the_model() {
        let case = resample_case();
        assert_eq!(
            blamed_by_message(&case, &wrapped("Functional", "x")),
            ("", None)
        );
        assert_eq!(blamed_by_message(&case, &wrapped("Dense", "x")), ("", None));
        assert_eq!(
            blamed_by_message(&case, "Graph execution error: oops"),
            ("", None)
        );
        assert_eq!(
            blamed_by_message(&case, "Input 0 of layer 'functional_1' is incompatible"),
            ("", None)
        );
        assert_eq!(what_it_says("plain\nsecond"), "plain");
    }

    #[test]
    fn a_mode_that_raises_is_signed_with_the_layer_it_names() {
        let case = resample_case();
        let error = PyError {
            constructor: false,
            kind: "ValueError".to_owned(),
            message: wrapped("Conv2DTranspose", "no XLA kernel"),
            phase: "call".to_owned(),
            traceback: String::new(),
            layer: None,
        };
        let modes = vec![
            (Mode::Eager, ModeOutcome::Outputs(LayerOutputs::new())),
            (Mode::Graph, ModeOutcome::Error(error, LayerOutputs::new())),
        ];
        let analysis = oracle::check::check_in(&case, DType::Float32).unwrap();
        let v = judged_valid(
            &case,
            DType::Float32,
            &analysis,
            &TfOutcome::Ran {
                modes,
                reused: false,
                tf_seconds: 0.0,
                worker_seconds: 0.0,
            },
        );
        let v = v.iter().find(|v| v.kind == Kind::ModeMismatch).unwrap();
        assert_eq!(
            v.signature,
            "mode-mismatch/Conv2DTranspose/graph:ValueError"
        );
        assert_eq!(v.layer.as_deref(), Some("conv2d_transpose"));
        assert!(
            v.detail.ends_with("ValueError: no XLA kernel"),
            "{}",
            v.detail
        );
    }

    /// A float64 `Conv2D(6, 2, groups=2)` (a generated case, minimised) whose input holds
    /// -MAX: a window sums -MAX·(-4) once and -MAX·4 three times. The reference rounds each
    /// product (NaN); TF 2.21 (XLA, as Keras runs grouped convs) gives +inf. Both are IEEE
    /// arithmetic on finite terms; with a genuine infinity among the inputs the same
    /// outputs are still reported.
    /// TF refusing an Embedding index the reference computed just below `input_dim` (its
    /// own rounding reached `input_dim`) is agreement; one the reference computed well inside
    /// the range is still an unexpected rejection. A campaign reported the first as
    /// `unexpected-rejection/Embedding` (a float32 UnitNormalization gave exactly 1.0).
    #[test]
    fn an_embedding_index_rounded_onto_input_dim_may_be_refused() {
        let case = |index: f64| {
            let text = serde_json::json!({
                "format": "semfuzz-case/1", "dtype": "float32",
                "model": {"name": "m", "trainable": true, "layers": [
                    {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                     "config": {"batch_shape": [null, 2], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
                    {"module": "keras.layers", "class_name": "Embedding", "name": "e",
                     "config": {"name": "e", "input_dim": 1, "output_dim": 2},
                     "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}
                ], "input_layers": [["x", 0, 0]], "output_layers": [["e", 0, 0]]},
                "weights": {"e": [{"shape": [1, 2], "data": [0.5, 0.25]}]},
                "inputs": [{"shape": [1, 2], "data": [index, 0.0]}]
            });
            Case::from_json_str(&text.to_string(), "embedding.case.json").unwrap()
        };
        let refused = TfOutcome::Rejected(PyError { constructor: false,
            kind: "InvalidArgumentError".into(),
            message: "{{function_node __wrapped__GatherV2_device_/job:localhost/replica:0/task:0/device:CPU:0}} indices[0,0] = 1 is not in [0, 1) [Op:GatherV2]".into(),
            phase: "call".into(),
            traceback: String::new(),
            layer: Some("e".into()),
        });
        // PyTorch's refusal of the same index (the torch campaign's
        // unexpected-rejection/Embedding, after a float32 sigmoid that gave 1.0).
        let torch_refused = TfOutcome::Rejected(PyError {
            constructor: false,
            kind: "IndexError".into(),
            message:
                "Exception encountered when calling Embedding.call().\n\nindex out of range in self"
                    .into(),
            phase: "call".into(),
            traceback: String::new(),
            layer: Some("e".into()),
        });
        for refused in [&refused, &torch_refused] {
            let kinds = |index: f64| {
                let c = case(index);
                let analysis = oracle::check::check_in(&c, DType::Float32).unwrap();
                judged_valid(&c, DType::Float32, &analysis, refused)
                    .iter()
                    .map(|v| v.kind)
                    .collect::<Vec<_>>()
            };
            assert_eq!(kinds(1.0 - 6e-8), [Kind::Agree]);
            assert_eq!(kinds(0.5), [Kind::UnexpectedRejection]);
        }
    }

    #[test]
    fn an_overflowing_sum_of_finite_terms_may_be_nan_or_infinite() {
        const CASE: &str = r#"{"format":"semfuzz-case/1","dtype":"float64","model":{"name":"functional","trainable":true,"layers":[{"module":"keras.layers","class_name":"InputLayer","config":{"batch_shape":[null,2,3,2],"dtype":"float64","sparse":false,"ragged":false,"name":"input_1","optional":false},"registered_name":null,"name":"input_1","inbound_nodes":[]},{"module":"keras.layers","class_name":"Conv2D","config":{"name":"conv2d","trainable":true,"dtype":{"module":"keras","class_name":"DTypePolicy","config":{"name":"float64"},"registered_name":null},"filters":6,"kernel_size":[2,2],"use_bias":false,"groups":2},"registered_name":null,"build_config":{"input_shape":[null,2,3,2]},"name":"conv2d","inbound_nodes":[{"args":[{"class_name":"__keras_tensor__","config":{"shape":[null,2,3,2],"keras_history":["input_1",0,0]}}],"kwargs":{}}]}],"input_layers":[["input_1",0,0]],"output_layers":[["conv2d",0,0]]},"weights":{"conv2d":[{"shape":[2,2,1,6],"data":[-4.0,-4.0,4.0,-4.0,4.0,-4.0,-4.0,4.0,4.0,4.0,4.0,-4.0,4.0,4.0,-4.0,4.0,4.0,4.0,-4.0,-4.0,-4.0,4.0,4.0,-4.0]}]},"inputs":[{"shape":[1,2,3,2],"data":[0.5074086047412556,-1.7976931348623157e+308,0.5074086047412556,-1.7976931348623157e+308,0.5074086047412556,-1.7976931348623157e+308,0.5074086047412556,-1.7976931348623157e+308,0.5074086047412556,-1.7976931348623157e+308,0.5074086047412556,-1.7976931348623157e+308]}]}"#;
        // What TF 2.21 returned for it (eager; the reference has NaN at [.., 3] and [.., 5]).
        let row = [
            -4.059268837930045,
            0.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
        ];
        let tf_out = ArrayD::from_shape_vec(vec![1, 1, 2, 6], [row, row].concat()).unwrap();
        let judge_with = |case: &Case| {
            let mut outs = LayerOutputs::new();
            outs.insert(("conv2d".to_owned(), 0), vec![tf_out.clone()]);
            let analysis = oracle::check::check_in(case, DType::Float64).unwrap();
            judged_valid(
                case,
                DType::Float64,
                &analysis,
                &TfOutcome::Ran {
                    modes: vec![(Mode::Eager, ModeOutcome::Outputs(outs))],
                    reused: false,
                    tf_seconds: 0.0,
                    worker_seconds: 0.0,
                },
            )
        };
        let case = Case::from_json_str(CASE, "overflow.case.json").unwrap();
        let v = judge_with(&case);
        assert!(v.iter().all(|v| v.kind != Kind::UnexpectedNan), "{v:?}");
        // With one input -inf, filter 3's window holds a +inf term (-inf · -4) and finite
        // products past the range (-MAX · 4): the exact sum is +inf, as TF gives, and the
        // reference's NaN comes from its own product overflow. Either is accepted.
        let mut with_inf = Case::from_json_str(CASE, "overflow.case.json").unwrap();
        with_inf.inputs[0].data[[0, 0, 0, 1]] = f64::NEG_INFINITY;
        let v = judge_with(&with_inf);
        assert!(v.iter().all(|v| v.kind != Kind::UnexpectedNan), "{v:?}");
        // With a second -inf that meets weight 4 in the same window, the window holds +inf
        // and -inf terms: NaN in every order, and TF's inf there is reported.
        with_inf.inputs[0].data[[0, 0, 1, 1]] = f64::NEG_INFINITY;
        let v = judge_with(&with_inf);
        assert!(v.iter().any(|v| v.kind == Kind::UnexpectedNan), "{v:?}");
    }

    /// Float32 `GroupNormalization(groups=2)` on 16 channels, γ = 1, β = 0: the first group of 8
    /// has positive elements summing to 7.45e38 and an exact sum of 3.22e38 (finite, the
    /// reference's output there is 0), the second group's elements sum to at most 1.23e38 on
    /// either side. What TF 2.21 returned for it: eager NaN over the first group (its packet
    /// order overflows), XLA 0 everywhere (its order does not).
    const GN_PACKET_OVERFLOW: &str = r#"{"format":"semfuzz-case/1","dtype":"float32","model":{"name":"functional","trainable":true,"layers":[{"module":"keras.layers","class_name":"InputLayer","config":{"batch_shape":[null,16],"dtype":"float32","sparse":false,"ragged":false,"name":"input_layer","optional":false},"registered_name":null,"name":"input_layer","inbound_nodes":[]},{"module":"keras.layers","class_name":"GroupNormalization","config":{"name":"group_normalization","trainable":true,"dtype":{"module":"keras","class_name":"DTypePolicy","config":{"name":"float32"},"registered_name":null},"groups":2,"axis":-1,"epsilon":0.001,"center":true,"scale":true},"registered_name":null,"build_config":{"input_shape":[null,16]},"name":"group_normalization","inbound_nodes":[{"args":[{"class_name":"__keras_tensor__","config":{"shape":[null,16],"dtype":"float32","keras_history":["input_layer",0,0]}}],"kwargs":{}}]}],"input_layers":["input_layer",0,0],"output_layers":["group_normalization",0,0]},"weights":{"group_normalization":[{"shape":[16],"data":[1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0]},{"shape":[16],"data":[0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0]}]},"inputs":[{"shape":[1,16],"data":[1.6959842617947551e+38,-1.3189878128242242e+38,8.587336950234715e+37,1.5732079404445863e+38,-1.36706472948848e+38,1.6211528186223224e+38,-1.5444366325374703e+38,1.7052898313209105e+38,-3.628302506888844e+37,-1.3577851214466173e+37,-2.6601538827837774e+37,-1.234700177881317e+37,-1.6418561135782618e+37,1.3321977208460705e+37,-1.7307790143529516e+37,1.9195234419377934e+37]}]}"#;

    fn judge_gn_packet_overflow(eager: &[f64], xla: &[f64]) -> Vec<Verdict> {
        let case = Case::from_json_str(GN_PACKET_OVERFLOW, "gn.case.json").unwrap();
        let analysis = oracle::check::check_in(&case, DType::Float32).unwrap();
        let outputs = |row: &[f64]| {
            let mut outs = LayerOutputs::new();
            outs.insert(
                ("group_normalization".to_owned(), 0),
                vec![ArrayD::from_shape_vec(vec![1, 16], row.to_vec()).unwrap()],
            );
            ModeOutcome::Outputs(outs)
        };
        judged_valid(
            &case,
            DType::Float32,
            &analysis,
            &TfOutcome::Ran {
                modes: vec![(Mode::Eager, outputs(eager)), (Mode::Xla, outputs(xla))],
                reused: false,
                tf_seconds: 0.0,
                worker_seconds: 0.0,
            },
        )
    }

    #[test]
    fn a_group_sum_that_overflows_in_some_order_may_be_nan() {
        let tf_eager = [[f64::NAN; 8], [0.0; 8]].concat();
        let tf_xla = [0.0; 16];
        let v = judge_gn_packet_overflow(&tf_eager, &tf_xla);
        assert!(
            v.iter()
                .all(|v| v.kind != Kind::UnexpectedNan && v.kind != Kind::ModeMismatch),
            "{v:?}"
        );
        assert_eq!(v.iter().map(|v| v.kind).collect::<Vec<_>>(), [Kind::Agree]);
        // A finite value in that group is still judged: 1 is not the reference's 0.
        let mut off = tf_xla;
        off[3] = 1.0;
        let v = judge_gn_packet_overflow(&tf_eager, &off);
        assert!(v.iter().any(|v| v.kind == Kind::Mismatch), "{v:?}");
    }

    #[test]
    fn a_nan_in_a_group_that_overflows_in_no_order_is_still_reported() {
        // The second group cannot overflow whatever the order: a NaN there is reported, in
        // eager against the reference and in XLA against eager.
        let mut tf_eager = [[f64::NAN; 8], [0.0; 8]].concat();
        tf_eager[12] = f64::NAN;
        let v = judge_gn_packet_overflow(&tf_eager, &[0.0; 16]);
        assert!(
            v.iter()
                .any(|v| v.signature == "unexpected-nan/GroupNormalization"
                    && v.mode == Some(Mode::Eager)),
            "{v:?}"
        );
        let mut tf_xla = [0.0; 16];
        tf_xla[9] = f64::NAN;
        let v = judge_gn_packet_overflow(&[[f64::NAN; 8], [0.0; 8]].concat(), &tf_xla);
        assert!(v.iter().any(|v| v.kind == Kind::ModeMismatch), "{v:?}");
        assert!(v.iter().any(|v| v.kind == Kind::UnexpectedNan), "{v:?}");
    }

    /// Judges a one-layer case whose layer is `layer`, with TF's output in each mode given
    /// row-major in the shape of the case's input.
    fn judge_modes(case: &str, layer: &str, modes: &[(Mode, &[f64])]) -> Vec<Verdict> {
        let case = Case::from_json_str(case, "case.json").unwrap();
        let shape = case.inputs[0].shape().to_vec();
        let analysis = oracle::check::check_in(&case, case.dtype).unwrap();
        let outputs = |row: &[f64]| {
            let mut outs = LayerOutputs::new();
            outs.insert(
                (layer.to_owned(), 0),
                vec![ArrayD::from_shape_vec(shape.clone(), row.to_vec()).unwrap()],
            );
            ModeOutcome::Outputs(outs)
        };
        judged_valid(
            &case,
            case.dtype,
            &analysis,
            &TfOutcome::Ran {
                modes: modes.iter().map(|(m, row)| (*m, outputs(row))).collect(),
                reused: false,
                tf_seconds: 0.0,
                worker_seconds: 0.0,
            },
        )
    }

    fn kinds(v: &[Verdict]) -> Vec<Kind> {
        v.iter().map(|v| v.kind).collect()
    }

    /// A run in eager mode whose only recorded output is `layer`'s, one value `y`.
    fn one_value(layer: &str, y: f64) -> TfOutcome {
        let mut outs = LayerOutputs::new();
        outs.insert(
            (layer.to_owned(), 0),
            vec![ArrayD::from_shape_vec(vec![1, 1], vec![y]).unwrap()],
        );
        TfOutcome::Ran {
            modes: vec![(Mode::Eager, ModeOutcome::Outputs(outs))],
            reused: false,
            tf_seconds: 0.0,
            worker_seconds: 0.0,
        }
    }

    /// Two backends compared: a layer whose inputs are the same on both (the model's input)
    /// but whose outputs differ beyond twice its tolerance is a `backend-mismatch` naming
    /// both; a difference within twice the tolerance (each backend may be off the exact value
    /// by one tolerance) is not; and a layer a backend's own judgement already has a verdict
    /// at is not compared again.
    #[test]
    fn backends_are_compared_on_identical_inputs() {
        let text = serde_json::json!({
            "format": "semfuzz-case/1", "dtype": "float32",
            "model": {"name": "m", "trainable": true, "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                 "config": {"batch_shape": [null, 2], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
                {"module": "keras.layers", "class_name": "Dense", "name": "d",
                 "config": {"name": "d", "units": 1},
                 "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                    "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}
            ], "input_layers": [["x", 0, 0]], "output_layers": [["d", 0, 0]]},
            "weights": {"d": [{"shape": [2, 1], "data": [1.0, 2.0]}, {"shape": [1], "data": [0.5]}]},
            "inputs": [{"shape": [1, 2], "data": [1.0, 1.0]}]
        });
        let case = Case::from_json_str(&text.to_string(), "dense.case.json").unwrap();
        let oracle = oracle::check::check_in(&case, DType::Float32);
        let analysis = oracle.as_ref().unwrap();
        let ran = |y: f64| one_value("d", y);
        let spec_tol = {
            let x = ArrayD::from_shape_vec(vec![1, 2], vec![1.0, 1.0]).unwrap();
            let w = ArrayD::from_shape_vec(vec![2, 1], vec![1.0, 2.0]).unwrap();
            let b = ArrayD::from_shape_vec(vec![1], vec![0.5]).unwrap();
            let CallKind::Layer(spec) = &analysis.calls[1].kind else {
                panic!("the Dense call has a spec")
            };
            spec.tolerance_masked(DType::Float32, &[&x], &[None], &[&w, &b])
        };
        let off = |k: f64| 3.5 + k * (spec_tol.abs + spec_tol.rel * 3.5);
        let compare = |a: f64, b: f64, verdicts_b: &[Verdict]| {
            Judge::compare_backends(
                &case,
                DType::Float32,
                &oracle,
                (&judge_on(Backend::Jax), &ran(a), &[]),
                (&judge_on(Backend::Torch), &ran(b), verdicts_b),
            )
        };
        let v = compare(off(-0.9), off(3.0), &[]).expect("a backend-mismatch");
        assert_eq!(v.kind, Kind::BackendMismatch);
        assert_eq!(v.signature, "backend-mismatch/Dense/jax-torch");
        assert_eq!(v.layer.as_deref(), Some("d"));
        assert_eq!(v.tier, Some(Tier::WrongResult));
        assert!(
            v.detail.contains("JAX") && v.detail.contains("PyTorch"),
            "{}",
            v.detail
        );
        // Both within the tolerance of the exact 3.5, on either side of it.
        assert!(compare(off(-0.9), off(0.9), &[]).is_none());
        // Torch's own judgement has a verdict at 'd' already.
        let judged = Verdict::new(Kind::Mismatch, "Dense", "", Some("d"), String::new());
        assert!(compare(off(-0.9), off(3.0), &[judged]).is_none());
    }

    /// TF computes a float64 LeakyReLU with its slope rounded to float32 (the reference
    /// models it for TF alone); JAX uses the exact slope. Each agrees with the reference for
    /// its own backend, so the two differing is no backend-mismatch; JAX off its own
    /// reference by as much still is one.
    #[test]
    fn backends_each_right_by_their_own_reference_are_no_backend_mismatch() {
        let slope = 0.9204234_f64;
        let text = serde_json::json!({
            "format": "semfuzz-case/1", "dtype": "float64",
            "model": {"name": "m", "trainable": true, "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                 "config": {"batch_shape": [null, 1], "dtype": "float64", "name": "x"}, "inbound_nodes": []},
                {"module": "keras.layers", "class_name": "LeakyReLU", "name": "l",
                 "config": {"name": "l", "negative_slope": slope, "dtype": "float64"},
                 "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                    "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}
            ], "input_layers": [["x", 0, 0]], "output_layers": [["l", 0, 0]]},
            "weights": {},
            "inputs": [{"shape": [1, 1], "data": [-1000.0]}]
        });
        let case = Case::from_json_str(&text.to_string(), "leaky.case.json").unwrap();
        let oracle = oracle::check::check_in(&case, DType::Float64);
        let ran = |y: f64| one_value("l", y);
        let tf = -1000.0 * f64::from(slope as f32);
        let exact = -1000.0 * slope;
        assert!((tf - exact).abs() > 1e-9, "the slopes differ: {tf} {exact}");
        let compare = |jax: f64| {
            Judge::compare_backends(
                &case,
                DType::Float64,
                &oracle,
                (&judge_on(Backend::Tensorflow), &ran(tf), &[]),
                (&judge_on(Backend::Jax), &ran(jax), &[]),
            )
        };
        assert!(compare(exact).is_none());
        // JAX taking TF's float32 slope is off the reference for JAX.
        let v = compare(exact - (tf - exact)).expect("a backend-mismatch");
        assert_eq!(v.signature, "backend-mismatch/LeakyReLU/tensorflow-jax");
    }

    /// A backend-mismatch at a layer where one side is off its own backend's reference by what
    /// one of that backend's entries explains (a float64 `Dense` with `tanh` on JAX, computed
    /// in float32) is that entry's; the same side off grossly, or the other side (TensorFlow,
    /// which no entry explains) off by as much, is a finding.
    #[test]
    fn a_backend_mismatch_a_sides_own_entry_explains_is_known() {
        let text = serde_json::json!({
            "format": "semfuzz-case/1", "dtype": "float64",
            "model": {"name": "m", "trainable": true, "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                 "config": {"batch_shape": [null, 2], "dtype": "float64", "name": "x"}, "inbound_nodes": []},
                {"module": "keras.layers", "class_name": "Dense", "name": "d",
                 "config": {"name": "d", "units": 1, "activation": "tanh", "dtype": "float64"},
                 "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                    "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}
            ], "input_layers": [["x", 0, 0]], "output_layers": [["d", 0, 0]]},
            "weights": {"d": [{"shape": [2, 1], "data": [0.125, 0.25]}, {"shape": [1], "data": [0.0625]}]},
            "inputs": [{"shape": [1, 2], "data": [1.0, 1.0]}]
        });
        let case = Case::from_json_str(&text.to_string(), "dense-tanh.case.json").unwrap();
        let oracle = oracle::check::check_in(&case, DType::Float64);
        let exact = 0.4375_f64.tanh();
        let ran = |y: f64| one_value("d", y);
        let compare = |tf: f64, jax: f64| {
            Judge::compare_backends(
                &case,
                DType::Float64,
                &oracle,
                (&judge_on(Backend::Tensorflow), &ran(tf), &[]),
                (&judge_on(Backend::Jax), &ran(jax), &[]),
            )
            .expect("a backend-mismatch")
        };
        let float32_off = exact * (1.0 + 1e-7);
        assert_eq!(
            compare(exact, float32_off).known.as_deref(),
            Some("mismatch-Activation-jax-float64-computed-in-float32")
        );
        let v = compare(exact, exact * (1.0 + 1e-3));
        assert!(v.is_finding(), "{v:?}");
        let v = compare(float32_off, exact);
        assert!(v.is_finding(), "{v:?}");
    }

    /// Two sides compared on identical inputs in a float64 run: a difference within twice the
    /// layer's float32 tolerance carries the evidence `float32_tolerance` (each side may have
    /// computed it in float32), a gross one does not.
    #[test]
    fn a_float32_sized_difference_between_two_sides_is_evidenced_as_such() {
        let text = serde_json::json!({
            "format": "semfuzz-case/1", "dtype": "float64",
            "model": {"name": "m", "trainable": true, "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                 "config": {"batch_shape": [null, 2], "dtype": "float64", "name": "x"}, "inbound_nodes": []},
                {"module": "keras.layers", "class_name": "Dense", "name": "d",
                 "config": {"name": "d", "units": 1, "dtype": "float64"},
                 "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                    "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}
            ], "input_layers": [["x", 0, 0]], "output_layers": [["d", 0, 0]]},
            "weights": {"d": [{"shape": [2, 1], "data": [1.0, 2.0]}, {"shape": [1], "data": [0.5]}]},
            "inputs": [{"shape": [1, 2], "data": [1.0, 1.0]}]
        });
        let case = Case::from_json_str(&text.to_string(), "dense64.case.json").unwrap();
        let oracle = oracle::check::check_in(&case, DType::Float64);
        let ran = |y: f64| one_value("d", y);
        let compare = |b: f64| {
            Judge::compare_backends(
                &case,
                DType::Float64,
                &oracle,
                (&judge_on(Backend::Tensorflow), &ran(3.5), &[]),
                (&judge_on(Backend::Jax), &ran(b), &[]),
            )
            .expect("a backend-mismatch")
        };
        assert!(compare(3.5 * (1.0 + 2e-7)).evidence.float32_tolerance);
        assert!(!compare(4.0).evidence.float32_tolerance);
    }

    /// Eager and XLA compared on a masked recurrent layer take its masks: an `Embedding`
    /// (`mask_zero`) whose masked row is 1e30 feeds a `SimpleRNN`. With the mask, the RNN's
    /// bound is that of its two unmasked steps, and a difference of 1e-6 between the modes is
    /// a mode mismatch; without it, the masked step's 1e30 made the bound too wide to see it.
    #[test]
    fn modes_are_compared_with_the_masks_the_layer_was_given() {
        let case = |mask_zero: bool| {
            let tensor = |name: &str| {
                serde_json::json!({"args": [{"class_name": "__keras_tensor__",
                    "config": {"keras_history": [name, 0, 0]}}], "kwargs": {}})
            };
            let text = serde_json::json!({
                "format": "semfuzz-case/1", "dtype": "float64",
                "model": {"name": "m", "trainable": true, "layers": [
                    {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                     "config": {"batch_shape": [null, 3], "dtype": "float64", "name": "x"}, "inbound_nodes": []},
                    {"module": "keras.layers", "class_name": "Embedding", "name": "e",
                     "config": {"name": "e", "input_dim": 2, "output_dim": 1, "mask_zero": mask_zero},
                     "inbound_nodes": [tensor("x")]},
                    {"module": "keras.layers", "class_name": "SimpleRNN", "name": "r",
                     "config": {"name": "r", "units": 1}, "inbound_nodes": [tensor("e")]}
                ], "input_layers": [["x", 0, 0]], "output_layers": [["r", 0, 0]]},
                "weights": {"e": [{"shape": [2, 1], "data": [1e30, 0.5]}],
                            "r": [{"shape": [1, 1], "data": [1.0]}, {"shape": [1, 1], "data": [0.5]},
                                  {"shape": [1], "data": [0.0]}]},
                "inputs": [{"shape": [1, 3], "data": [1.0, 0.0, 1.0]}]
            });
            Case::from_json_str(&text.to_string(), "masked.case.json").unwrap()
        };
        let judged = |mask_zero: bool| {
            let c = case(mask_zero);
            let analysis = oracle::check::check_in(&c, DType::Float64).unwrap();
            let h1 = 0.5f64.tanh();
            let last = if mask_zero {
                (0.5 + 0.5 * h1).tanh()
            } else {
                (0.5 + 0.5 * (1e30 + 0.5 * h1).tanh()).tanh()
            };
            let outputs = |r: f64| {
                let mut outs = LayerOutputs::new();
                outs.insert(
                    ("e".to_owned(), 0),
                    vec![ArrayD::from_shape_vec(vec![1, 3, 1], vec![0.5, 1e30, 0.5]).unwrap()],
                );
                outs.insert(
                    ("r".to_owned(), 0),
                    vec![ArrayD::from_shape_vec(vec![1, 1], vec![r]).unwrap()],
                );
                ModeOutcome::Outputs(outs)
            };
            let v = judged_valid(
                &c,
                DType::Float64,
                &analysis,
                &TfOutcome::Ran {
                    modes: vec![
                        (Mode::Eager, outputs(last)),
                        (Mode::Xla, outputs(last + 1e-6)),
                    ],
                    reused: false,
                    tf_seconds: 0.0,
                    worker_seconds: 0.0,
                },
            );
            v.iter()
                .filter(|v| v.mode == Some(Mode::Xla))
                .map(|v| v.kind)
                .collect::<Vec<_>>()
        };
        assert!(
            judged(true).contains(&Kind::ModeMismatch),
            "{:?}",
            judged(true)
        );
        // Unmasked, the 1e30 step is part of the sum: 1e-6 is within the bound.
        assert!(
            !judged(false).contains(&Kind::ModeMismatch),
            "{:?}",
            judged(false)
        );
    }

    /// Float32 `LayerNormalization` over 16 features, γ = 1, β = 0. The first sample has
    /// positive elements summing to 8.5e38 and an exact sum of -2.1e37 (finite: the
    /// reference's output is 0), the second is the first divided by 10 (no order overflows).
    /// What TF 2.21 returned: eager and graph NaN over the first sample (their packet order
    /// overflows), XLA 0 there (its order does not), 0 over the second everywhere.
    const LN_PACKET_OVERFLOW: &str = r#"{"format":"semfuzz-case/1","dtype":"float32","model":{"name":"functional","trainable":true,"layers":[{"module":"keras.layers","class_name":"InputLayer","config":{"batch_shape":[null,16],"dtype":"float32","sparse":false,"ragged":false,"name":"input_layer","optional":false},"registered_name":null,"name":"input_layer","inbound_nodes":[]},{"module":"keras.layers","class_name":"LayerNormalization","config":{"name":"layer_normalization","trainable":true,"dtype":{"module":"keras","class_name":"DTypePolicy","config":{"name":"float32"},"registered_name":null},"axis":[-1],"epsilon":0.001,"center":true,"scale":true,"rms_scaling":false,"beta_initializer":{"module":"keras.initializers","class_name":"Zeros","config":{},"registered_name":null},"gamma_initializer":{"module":"keras.initializers","class_name":"Ones","config":{},"registered_name":null},"beta_regularizer":null,"gamma_regularizer":null,"beta_constraint":null,"gamma_constraint":null},"registered_name":null,"build_config":{"input_shape":[null,16]},"name":"layer_normalization","inbound_nodes":[{"args":[{"class_name":"__keras_tensor__","config":{"shape":[null,16],"dtype":"float32","keras_history":["input_layer",0,0]}}],"kwargs":{}}]}],"input_layers":["input_layer",0,0],"output_layers":["layer_normalization",0,0]},"weights":{"layer_normalization":[{"shape":[16],"data":[1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0]},{"shape":[16],"data":[0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0]}]},"inputs":[{"shape":[2,16],"data":[-1.8513714526020592e+38,7.312650889175219e+37,-9.665575197776842e+37,-1.051242157535571e+38,1.5780344440459193e+38,9.124529752153672e+37,-1.272564013954714e+38,1.3024345270503e+38,-1.826647195295208e+38,6.3827287759802745e+37,-1.2947816696706981e+38,1.3061692285426683e+38,1.1455605342070002e+38,7.2229641021488315e+37,1.162094855927945e+38,-1.6077191702695358e+38,-1.8513715033080832e+37,7.312651015940279e+36,-9.665575324541902e+36,-1.051242170212077e+37,1.5780344693989313e+37,9.124530005683792e+36,-1.272564013954714e+37,1.302434552403312e+37,-1.8266472460012319e+37,6.382728522450154e+36,-1.294781618964674e+37,1.3061691778366443e+37,1.1455605088539881e+37,7.222964102148832e+36,1.162094855927945e+37,-1.6077191702695358e+37]}]}"#;

    #[test]
    fn a_layer_normalization_sum_that_overflows_in_some_order_may_be_nan() {
        let nan_first = [[f64::NAN; 16], [0.0; 16]].concat();
        let zeros = [0.0; 32];
        let v = judge_modes(
            LN_PACKET_OVERFLOW,
            "layer_normalization",
            &[
                (Mode::Eager, &nan_first),
                (Mode::Graph, &nan_first),
                (Mode::Xla, &zeros),
            ],
        );
        assert_eq!(kinds(&v), [Kind::Agree], "{v:?}");
        // A finite value in that lane is still judged: 1 is not the reference's 0.
        let mut off = zeros;
        off[3] = 1.0;
        let v = judge_modes(
            LN_PACKET_OVERFLOW,
            "layer_normalization",
            &[(Mode::Eager, &nan_first), (Mode::Xla, &off)],
        );
        assert!(v.iter().any(|v| v.kind == Kind::Mismatch), "{v:?}");
    }

    #[test]
    fn a_nan_in_a_layer_normalization_lane_that_overflows_in_no_order_is_still_reported() {
        // The second sample cannot overflow whatever the order: a NaN there is reported, in
        // eager against the reference and in XLA against eager.
        let mut eager = [[f64::NAN; 16], [0.0; 16]].concat();
        eager[20] = f64::NAN;
        let v = judge_modes(
            LN_PACKET_OVERFLOW,
            "layer_normalization",
            &[(Mode::Eager, &eager), (Mode::Xla, &[0.0; 32])],
        );
        assert!(
            v.iter()
                .any(|v| v.signature == "unexpected-nan/LayerNormalization"
                    && v.mode == Some(Mode::Eager)),
            "{v:?}"
        );
        assert!(v.iter().any(|v| v.kind == Kind::ModeMismatch), "{v:?}");
    }

    /// Float64 `GroupNormalization(groups=1)` over 4 channels near the top of the range:
    /// 6.59e307, 7.10e307, 1.01e308, -6.85e307, whose exact sum 1.70e308 is finite but whose
    /// running sum in element order is not. What TF 2.21 returned: eager and graph 0 (a packet
    /// of 4 doubles summed pairwise), XLA NaN (element order).
    const GN64_PACKET_ORDER: &str = r#"{"format":"semfuzz-case/1","dtype":"float64","model":{"name":"functional_1","trainable":true,"layers":[{"module":"keras.layers","class_name":"InputLayer","config":{"batch_shape":[null,4],"dtype":"float64","sparse":false,"ragged":false,"name":"input_layer_1","optional":false},"registered_name":null,"name":"input_layer_1","inbound_nodes":[]},{"module":"keras.layers","class_name":"GroupNormalization","config":{"name":"group_normalization","trainable":true,"dtype":{"module":"keras","class_name":"DTypePolicy","config":{"name":"float64"},"registered_name":null},"groups":1,"axis":-1,"epsilon":0.001,"center":true,"scale":true,"beta_initializer":{"module":"keras.initializers","class_name":"Zeros","config":{},"registered_name":null},"gamma_initializer":{"module":"keras.initializers","class_name":"Ones","config":{},"registered_name":null},"beta_regularizer":null,"gamma_regularizer":null,"beta_constraint":null,"gamma_constraint":null},"registered_name":null,"build_config":{"input_shape":[null,4]},"name":"group_normalization","inbound_nodes":[{"args":[{"class_name":"__keras_tensor__","config":{"shape":[null,4],"dtype":"float64","keras_history":["input_layer_1",0,0]}}],"kwargs":{}}]}],"input_layers":["input_layer_1",0,0],"output_layers":["group_normalization",0,0]},"weights":{"group_normalization":[{"shape":[4],"data":[1.0,1.0,1.0,1.0]},{"shape":[4],"data":[0.0,0.0,0.0,0.0]}]},"inputs":[{"shape":[1,4],"data":[6.589984570512758e+307,7.103428328585124e+307,1.0104340294154106e+308,-6.848766658950954e+307]}]}"#;

    #[test]
    fn a_float64_group_sum_that_overflows_in_some_order_may_be_nan_or_not() {
        let zeros = [0.0; 4];
        let nan = [f64::NAN; 4];
        let v = judge_modes(
            GN64_PACKET_ORDER,
            "group_normalization",
            &[
                (Mode::Eager, &zeros),
                (Mode::Graph, &zeros),
                (Mode::Xla, &nan),
            ],
        );
        assert_eq!(kinds(&v), [Kind::Agree], "{v:?}");
        let v = judge_modes(
            GN64_PACKET_ORDER,
            "group_normalization",
            &[(Mode::Eager, &[0.0, 0.0, 0.5, 0.0]), (Mode::Xla, &nan)],
        );
        assert!(v.iter().any(|v| v.kind == Kind::Mismatch), "{v:?}");
    }

    /// Float32 `GroupNormalization(groups=1)` over a (2, 2) input: 1.38e38, 1.17e38, 1.87e38,
    /// -1.67e38, exact sum 2.75e38 (finite); a group of 4, shorter than a packet, which eager
    /// and graph mode sum in element order, overflowing, as the reference does (NaN), and
    /// XLA, over two axes, in another order. What TF 2.21 returned: eager and graph NaN, XLA 0.
    const GN_SHORT_GROUP_XLA: &str = r#"{"format":"semfuzz-case/1","dtype":"float32","model":{"name":"functional_2","trainable":true,"layers":[{"module":"keras.layers","class_name":"InputLayer","config":{"batch_shape":[null,2,2],"dtype":"float32","sparse":false,"ragged":false,"name":"input_layer_2","optional":false},"registered_name":null,"name":"input_layer_2","inbound_nodes":[]},{"module":"keras.layers","class_name":"GroupNormalization","config":{"name":"group_normalization_1","trainable":true,"dtype":{"module":"keras","class_name":"DTypePolicy","config":{"name":"float32"},"registered_name":null},"groups":1,"axis":-1,"epsilon":0.001,"center":true,"scale":true,"beta_initializer":{"module":"keras.initializers","class_name":"Zeros","config":{},"registered_name":null},"gamma_initializer":{"module":"keras.initializers","class_name":"Ones","config":{},"registered_name":null},"beta_regularizer":null,"gamma_regularizer":null,"beta_constraint":null,"gamma_constraint":null},"registered_name":null,"build_config":{"input_shape":[null,2,2]},"name":"group_normalization_1","inbound_nodes":[{"args":[{"class_name":"__keras_tensor__","config":{"shape":[null,2,2],"dtype":"float32","keras_history":["input_layer_2",0,0]}}],"kwargs":{}}]}],"input_layers":["input_layer_2",0,0],"output_layers":["group_normalization_1",0,0]},"weights":{"group_normalization_1":[{"shape":[2],"data":[1.0,1.0]},{"shape":[2],"data":[0.0,0.0]}]},"inputs":[{"shape":[1,2,2],"data":[1.382022398098885e+38,1.1665464391877545e+38,1.8729734357745245e+38,-1.6687360614368253e+38]}]}"#;

    #[test]
    fn a_short_group_that_xla_sums_in_another_order_may_be_finite() {
        let nan = [f64::NAN; 4];
        let zeros = [0.0; 4];
        let v = judge_modes(
            GN_SHORT_GROUP_XLA,
            "group_normalization_1",
            &[
                (Mode::Eager, &nan),
                (Mode::Graph, &nan),
                (Mode::Xla, &zeros),
            ],
        );
        assert_eq!(kinds(&v), [Kind::Agree], "{v:?}");
    }
}
