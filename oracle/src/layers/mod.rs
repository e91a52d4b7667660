//! The layer contract, and the registry of supported classes.
//!
//! Each class lives in one file under a family folder and implements [`LayerKind`]: it
//! parses its Keras config into typed parameters and returns a [`Spec`], which knows the
//! call's preconditions and output shapes (one formula for checking, evaluation and
//! generation), its weights, its f64 evaluation, its interval transfer and its tolerance.
//! Adding a layer is one file plus one line in its family's `KINDS`.

pub mod activation;
pub mod attention;
pub mod convolutional;
pub mod core;
pub mod merging;
pub mod normalization;
pub mod ops;
pub mod pooling;
pub mod preprocessing;
pub mod regularization;
pub mod reshaping;
pub mod rnn;

use std::collections::HashMap;
use std::sync::OnceLock;

use ndarray::ArrayD;
use serde_json::{Map, Value};

use crate::DType;
use crate::case::{Dims, Node};
use crate::interval::Interval;
use crate::params::ParamResult;
use crate::tolerance::Tolerance;
use crate::violation::Violation;

/// Where a class comes from: Keras layers, or the operation nodes Keras records for
/// arithmetic on tensors (`keras.src.ops.*`). `Add` exists in both, with different meanings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Layer,
    Op,
}

impl Family {
    pub fn of_module(module: Option<&str>) -> Family {
        match module {
            Some(m) if m.starts_with("keras.src.ops") => Family::Op,
            _ => Family::Layer,
        }
    }
}

/// What a layer call sees when it is parsed: its config, the call's recorded arguments
/// (constants, keyword arguments) and the case's compute dtype.
pub struct CallSite<'a> {
    pub config: &'a Map<String, Value>,
    pub node: &'a Node,
    pub dtype: DType,
}

/// A supported class.
pub trait LayerKind: Sync {
    /// The Keras class name.
    fn class_name(&self) -> &'static str;

    fn family(&self) -> Family {
        Family::Layer
    }

    /// How a call passes its tensors.
    fn arity(&self) -> Arity {
        Arity::One
    }

    /// Parses one call of the layer into its typed spec.
    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>>;

    /// The arguments generators sample, with their ranges and edge values.
    fn params(&self) -> &'static [ParamDef];

    /// Whether generators use the class (operations Keras records only for masks do not
    /// occur in generated models).
    fn generated(&self) -> bool {
        true
    }

    /// Keyword arguments of `call` that take tensors (`initial_state` of recurrent
    /// layers), in the order their tensors follow the positional ones in a call's inputs.
    fn tensor_kwargs(&self) -> &'static [&'static str] {
        &[]
    }
}

/// A Keras mask (`_keras_mask`): `true` where a position holds data. Its shape is the
/// leading axes of the tensor it belongs to (batch and time, for sequences).
pub type Mask = ArrayD<bool>;

/// How a layer call passes its tensor inputs (for generators, which build the calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// One tensor, `layer(x)`.
    One,
    /// A list of `min..=max` tensors, `layer([x, y])` (the merge layers).
    List { min: usize, max: usize },
    /// `min..=max` positional tensors, `layer(query, value)` (multi-head attention).
    Args { min: usize, max: usize },
    /// Two positional operands, each a tensor or a constant (`x + y`, `x * 3.0`).
    Operands,
}

/// Value domains of weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightDomain {
    Any,
    /// `>= 0`, e.g. a moving variance.
    NonNegative,
}

/// One weight array, in `get_weights()` order.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightSpec {
    pub name: &'static str,
    pub shape: Vec<usize>,
    pub domain: WeightDomain,
}

/// A parsed layer call.
pub trait Spec: std::fmt::Debug + Send + Sync {
    /// The output shapes for these input shapes (dimensions may be unknown), or the first
    /// violated precondition.
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation>;

    /// The weights this call needs for these (fully known) input shapes.
    fn weights(&self, _inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        Vec::new()
    }

    /// The outputs for these inputs and weights. Called only with shapes that `infer`
    /// accepted and weights shaped as `weights` says.
    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>>;

    /// Bounds of each output when the inputs (of these shapes) and the weights lie within
    /// these bounds.
    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval>;

    /// How closely TF must match the reference on this call, with these inputs and weights.
    fn tolerance(
        &self,
        dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::elementwise(dtype)
    }

    /// The output elements whose value depends on the order in which TF's kernel sums (one
    /// array per output, of its shape; `None` where there are none): they depend on a sum of
    /// finite terms that overflows in some order, and TF's order is not modelled, so a
    /// non-finite TF value there is as defensible as the reference's finite one. The judge
    /// accepts either at these elements and checks every other element as usual.
    fn order_dependent_overflow(
        &self,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        None
    }

    /// [`Spec::order_dependent_overflow`] for inputs that carry masks (the judge calls this
    /// one): layers whose sums depend on which steps are masked override it.
    fn order_dependent_overflow_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        _masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        self.order_dependent_overflow(inputs, weights)
    }

    /// Masks. Keras hands a call the masks of its tensor inputs (`mask`, or
    /// `query_mask`/`value_mask`/... for several tensor arguments) and, for a layer that
    /// supports masking, sets `compute_mask(inputs, previous_mask)` on its outputs; a layer
    /// that does not support masking drops them.
    ///
    /// The output masks for these inputs and their masks (`masks[i]` belongs to
    /// `inputs[i]`; `None` is unmasked), one per output, or `None` when the layer does not
    /// support masking (Keras's `supports_masking` is false). Most layers that support
    /// masking keep the first input's mask: [`util::keep_mask`].
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        _masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        None
    }

    /// Preconditions on the input values that TF checks when it runs (an `Embedding`
    /// index out of range): checked on the arrays a call receives, before `eval`.
    fn check_values(&self, _inputs: &[&ArrayD<f64>]) -> Result<(), Violation> {
        Ok(())
    }

    /// Whether [`Spec::check_values`] has preconditions to check: a call whose values were
    /// never computed (a shape-level check of an invalid model) is then not known to be
    /// accepted.
    fn checks_values(&self) -> bool {
        false
    }

    /// The number of rows the input indexes (`Embedding`'s `input_dim`): generators give a
    /// model input this call reads integers in `0..n`.
    fn index_rows(&self) -> Option<usize> {
        None
    }

    /// A value that masks a position when its whole last-axis lane equals it (`Masking`'s
    /// `mask_value`): generators give a model input this call reads such lanes now and then.
    fn masked_value(&self) -> Option<f64> {
        None
    }

    /// Whether the call makes a mask from unmasked inputs (`Embedding(mask_zero=True)`,
    /// `Masking`).
    fn produces_mask(&self) -> bool {
        false
    }

    /// Preconditions on the masks the inputs carry (`mask_shapes[i]` belongs to input `i`;
    /// unknown dimensions are 1): `Softmax` requires a mask that broadcasts to its input.
    fn check_masks(
        &self,
        _inputs: &[Dims],
        _mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        Ok(())
    }

    /// Whether the call reads the masks its inputs carry ([`Spec::eval_masked`] differs from
    /// [`Spec::eval`]): generators put such a layer behind a mask source now and then.
    fn reads_mask(&self) -> bool {
        false
    }

    /// [`Spec::eval`] for inputs that carry masks: layers whose `call` reads its mask
    /// (recurrent layers, attention, `Softmax`, `GlobalAveragePooling1D`) override it.
    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        _masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        self.eval(inputs, weights)
    }

    /// [`Spec::tolerance`] for inputs that carry masks (the judge calls this one): layers
    /// whose error depends on which steps are masked override it.
    fn tolerance_masked(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        self.tolerance(dtype, inputs, weights)
    }

    /// The `build_config` Keras writes after building the layer on these input shapes:
    /// none for layers that mark themselves built in their constructor (`Activation`,
    /// `ReLU`, pooling, dropout, ...), [`util::input_shape_config`] for the others.
    fn build_config(&self, _inputs: &[Dims]) -> Option<Value> {
        None
    }
}

/// One end of a numeric parameter's [`Domain`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound<T> {
    /// No limit on this side.
    Unbounded,
    /// The value itself is allowed.
    Incl(T),
    /// Values up to this one, not the value itself.
    Excl(T),
}

/// The values a numeric parameter may take whatever the layer's inputs: what the layer's
/// constructor accepts. The parameter's typical range (`min..=max`) lies within it and is
/// drawn most; the rest of the domain is drawn too, out to its edges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Domain<T> {
    pub lo: Bound<T>,
    pub hi: Bound<T>,
}

impl<T> Domain<T> {
    /// Any value.
    pub const ALL: Domain<T> = Domain {
        lo: Bound::Unbounded,
        hi: Bound::Unbounded,
    };

    /// `v` and above.
    pub const fn at_least(v: T) -> Self {
        Domain {
            lo: Bound::Incl(v),
            hi: Bound::Unbounded,
        }
    }

    /// From `lo` to `hi`, both included.
    pub const fn closed(lo: T, hi: T) -> Self {
        Domain {
            lo: Bound::Incl(lo),
            hi: Bound::Incl(hi),
        }
    }
}

impl<T: PartialOrd + Copy> Domain<T> {
    pub fn contains(&self, v: T) -> bool {
        let above = match self.lo {
            Bound::Unbounded => true,
            Bound::Incl(lo) => v >= lo,
            Bound::Excl(lo) => v > lo,
        };
        let below = match self.hi {
            Bound::Unbounded => true,
            Bound::Incl(hi) => v <= hi,
            Bound::Excl(hi) => v < hi,
        };
        above && below
    }
}

impl Domain<i64> {
    /// Its smallest member (`None`: unbounded below).
    pub fn least(&self) -> Option<i64> {
        match self.lo {
            Bound::Unbounded => None,
            Bound::Incl(v) => Some(v),
            Bound::Excl(v) => Some(v.saturating_add(1)),
        }
    }

    /// Its largest member (`None`: unbounded above).
    pub fn greatest(&self) -> Option<i64> {
        match self.hi {
            Bound::Unbounded => None,
            Bound::Incl(v) => Some(v),
            Bound::Excl(v) => Some(v.saturating_sub(1)),
        }
    }
}

impl<T: std::fmt::Display> std::fmt::Display for Domain<T> {
    /// Interval notation: `[1, ∞)`, `[0, 1]`, `(-∞, ∞)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.lo {
            Bound::Unbounded => write!(f, "(-∞, ")?,
            Bound::Incl(v) => write!(f, "[{v}, ")?,
            Bound::Excl(v) => write!(f, "({v}, ")?,
        }
        match &self.hi {
            Bound::Unbounded => write!(f, "∞)"),
            Bound::Incl(v) => write!(f, "{v}]"),
            Bound::Excl(v) => write!(f, "{v})"),
        }
    }
}

/// Sizes: counts of units, filters, heads, a kernel's or a window's extent, strides.
pub const SIZE: Domain<i64> = Domain::at_least(1);
/// Amounts that may be none: paddings, croppings.
pub const AMOUNT: Domain<i64> = Domain::at_least(0);
/// A probability or a rate: `[0, 1]`.
pub const UNIT_INTERVAL: Domain<f64> = Domain::closed(0.0, 1.0);
/// An axis of a tensor of rank 6 at most, counted from either end. The constructors take any
/// integer; building the layer checks it against its input's rank.
pub const AXIS: Domain<i64> = Domain::closed(-6, 6);
/// A float the constructor requires to be 0 or more.
pub const NON_NEGATIVE: Domain<f64> = Domain::at_least(0.0);

/// A parameter's sampling space, for generators and `semfuzz layers`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamDef {
    Int {
        name: &'static str,
        min: i64,
        max: i64,
        edges: &'static [i64],
        domain: Domain<i64>,
    },
    /// An integer or a tuple of `len` integers.
    Ints {
        name: &'static str,
        len: usize,
        min: i64,
        max: i64,
        domain: Domain<i64>,
    },
    Float {
        name: &'static str,
        min: f64,
        max: f64,
        edges: &'static [f64],
        domain: Domain<f64>,
    },
    Bool {
        name: &'static str,
    },
    Choice {
        name: &'static str,
        options: &'static [&'static str],
    },
    Activation {
        name: &'static str,
    },
    /// A permutation of the input's non-batch axes, 1-based (`Permute`'s `dims`).
    Permutation {
        name: &'static str,
    },
    /// A shape holding as many elements as the input's non-batch axes; one entry may be -1
    /// (`Reshape`'s `target_shape`).
    TargetShape {
        name: &'static str,
    },
    /// A nested config (the layer a `Bidirectional` wraps, the cell of an `RNN`): one of
    /// these JSON texts, each a serialized Keras object.
    Config {
        name: &'static str,
        options: &'static [&'static str],
    },
}

impl ParamDef {
    /// The config key this parameter sets.
    pub fn name(&self) -> &'static str {
        match *self {
            ParamDef::Int { name, .. }
            | ParamDef::Ints { name, .. }
            | ParamDef::Float { name, .. }
            | ParamDef::Bool { name }
            | ParamDef::Choice { name, .. }
            | ParamDef::Activation { name }
            | ParamDef::Permutation { name }
            | ParamDef::TargetShape { name }
            | ParamDef::Config { name, .. } => name,
        }
    }
}

/// Every supported class, family by family (each family lists its classes, one line each).
pub static FAMILIES: &[&[&dyn LayerKind]] = &[
    core::KINDS,
    activation::KINDS,
    convolutional::KINDS,
    pooling::KINDS,
    normalization::KINDS,
    reshaping::KINDS,
    merging::KINDS,
    ops::KINDS,
    regularization::KINDS,
    preprocessing::KINDS,
    rnn::KINDS,
    attention::KINDS,
];

/// Every supported class.
pub fn registry() -> impl Iterator<Item = &'static dyn LayerKind> {
    FAMILIES.iter().flat_map(|f| f.iter().copied())
}

/// The registered class for a layer entry.
pub fn lookup(class_name: &str, module: Option<&str>) -> Option<&'static dyn LayerKind> {
    /// By class name: the first registered class of each family.
    type Index = HashMap<&'static str, [Option<&'static dyn LayerKind>; 2]>;
    static INDEX: OnceLock<Index> = OnceLock::new();
    let slot = |f: Family| match f {
        Family::Layer => 0,
        Family::Op => 1,
    };
    let index = INDEX.get_or_init(|| {
        let mut index = Index::new();
        for k in registry() {
            index.entry(k.class_name()).or_default()[slot(k.family())].get_or_insert(k);
        }
        index
    });
    index.get(class_name)?[slot(Family::of_module(module))]
}

/// Helpers shared by layer files.
pub mod util {
    use ndarray::ArrayD;

    use super::Mask;
    use crate::DType;
    use crate::case::Dims;

    /// Per output element of a sum of products plus a bias, before the activation (a
    /// convolution's window, a `Dense` or `EinsumDense` contraction): whether TF's order of
    /// summation, which is not modelled, decides whether and how it overflows. As
    /// [`crate::layers::Spec::order_dependent_overflow`] returns them: `None` where no element
    /// is.
    ///
    /// A sum's partial sums lie between `-N` and `P`, the sums of its negative and its positive
    /// terms, and an order that adds the positive terms first reaches `P` (the negative first,
    /// `-N`). An element is flagged when one of them passes the range of TF's accumulator,
    /// allowing for the `terms` roundings, and either the exact sum does not (some orders
    /// overflow, others do not) or the other does too (some orders reach `+inf`, others
    /// `-inf`, and a product that overflows on its own meets the other infinity: NaN).
    /// `sum(x, kernel, bias)` is the layer's sum in its output's layout; `P` and `N` come from
    /// it on the inputs' positive and negative parts, which cannot cancel. An infinite input
    /// or weight makes its part infinite: the element is flagged where the other part may
    /// overflow too (a float32 Dense fed `+inf` and finite products past float32's range gave
    /// NaN).
    pub fn order_decides_sum_overflow(
        dtype: DType,
        terms: usize,
        x: &ArrayD<f64>,
        kernel: &ArrayD<f64>,
        bias: Option<&ArrayD<f64>>,
        sum: impl Fn(&ArrayD<f64>, &ArrayD<f64>, Option<&ArrayD<f64>>) -> ArrayD<f64>,
    ) -> Option<Vec<ArrayD<bool>>> {
        // A NaN decides on its own. An infinite input or weight is one of the terms whose
        // sums `P` and `N` are: an infinity of one sign meets the other only where the other
        // sign's terms may overflow.
        let nan = |a: &ArrayD<f64>| a.iter().any(|v| v.is_nan());
        if nan(x) || nan(kernel) || bias.is_some_and(nan) {
            return None;
        }
        let stats = crate::layers::normalization::stats_dtype(dtype);
        let max = crate::layers::normalization::max_finite(stats);
        let rounding = (1.0 + crate::tolerance::Tolerance::eps(stats)).powf(terms as f64 + 1.0);
        // No sum can come near the range: the usual case, at the cost of three scans.
        let bound = terms as f64
            * crate::layers::convolutional::max_abs(x)
            * crate::layers::convolutional::max_abs(kernel)
            + bias.map_or(0.0, crate::layers::convolutional::max_abs);
        if bound * rounding <= max {
            return None;
        }
        // The finite parts of the inputs and of the bias are scaled by 1/4 (exactly), so that
        // `P` and `N` stay finite unless a product alone is past the range; compared with
        // `max / 4`. Infinite terms are counted apart, on indicators (an infinity times a zero
        // the sum pads with would be NaN).
        let part = |a: &ArrayD<f64>, sign: f64, scale: f64| {
            a.mapv(|v| {
                if v.is_finite() {
                    (sign * v).max(0.0) * scale
                } else {
                    0.0
                }
            })
        };
        let indicator = |a: &ArrayD<f64>, keep: &dyn Fn(f64) -> bool| {
            a.mapv(|v| if keep(v) { 1.0 } else { 0.0 })
        };
        let (xp, xn) = (part(x, 1.0, 0.25), part(x, -1.0, 0.25));
        let (kp, kn) = (part(kernel, 1.0, 1.0), part(kernel, -1.0, 1.0));
        let (bp, bn) = (
            bias.map(|b| part(b, 1.0, 0.25)),
            bias.map(|b| part(b, -1.0, 0.25)),
        );
        let (x_pinf, x_ninf) = (
            indicator(x, &|v| v == f64::INFINITY),
            indicator(x, &|v| v == f64::NEG_INFINITY),
        );
        let (k_pinf, k_ninf) = (
            indicator(kernel, &|v| v == f64::INFINITY),
            indicator(kernel, &|v| v == f64::NEG_INFINITY),
        );
        let (x_pos, x_neg) = (indicator(x, &|v| v > 0.0), indicator(x, &|v| v < 0.0));
        let (k_pos, k_neg) = (
            indicator(kernel, &|v| v > 0.0),
            indicator(kernel, &|v| v < 0.0),
        );
        // An infinite bias is one more infinite term, where it is added.
        let (b_pinf, b_ninf) = (
            bias.map(|b| indicator(b, &|v| v == f64::INFINITY)),
            bias.map(|b| indicator(b, &|v| v == f64::NEG_INFINITY)),
        );
        let has_inf = x_pinf
            .iter()
            .chain(&x_ninf)
            .chain(&k_pinf)
            .chain(&k_ninf)
            .chain(b_pinf.iter().flatten())
            .chain(b_ninf.iter().flatten())
            .any(|&v| v > 0.0);
        // Per element, how many infinite terms of each sign its sum has (`None`: no input,
        // weight or bias is infinite).
        let infinite = |same: [&ArrayD<f64>; 4], bias: Option<&ArrayD<f64>>| {
            has_inf.then(|| {
                sum(&x_pinf, same[0], bias)
                    + sum(&x_ninf, same[1], None)
                    + sum(&x_pos, same[2], None)
                    + sum(&x_neg, same[3], None)
            })
        };
        let p_inf = infinite([&k_pos, &k_neg, &k_pinf, &k_ninf], b_pinf.as_ref());
        let n_inf = infinite([&k_neg, &k_pos, &k_ninf, &k_pinf], b_ninf.as_ref());
        let p = sum(&xp, &kp, bp.as_ref()) + sum(&xn, &kn, None);
        let n = sum(&xp, &kn, bn.as_ref()) + sum(&xn, &kp, None);
        let none = || ArrayD::zeros(p.raw_dim());
        let (p_inf, n_inf) = (p_inf.unwrap_or_else(none), n_inf.unwrap_or_else(none));
        let limit = max * 0.25;
        let flags = ndarray::Zip::from(&p)
            .and(&n)
            .and(&p_inf)
            .and(&n_inf)
            .map_collect(|&p, &n, &pi, &ni| {
                if pi > 0.0 && ni > 0.0 {
                    return false; // infinities of both signs: NaN in every order
                }
                let p = if pi > 0.0 { f64::INFINITY } else { p };
                let n = if ni > 0.0 { f64::INFINITY } else { n };
                let reaches = |part: f64| part * rounding > limit;
                // Unknown (NaN, false) where `P` or `N` is itself infinite.
                let exact_in_range = (p - n).abs() / rounding <= limit;
                (reaches(p) || reaches(n)) && (exact_in_range || reaches(p) && reaches(n))
            });
        flags.iter().any(|&f| f).then(|| vec![flags])
    }

    /// `compute_mask` of a layer that supports masking and keeps its first input's mask
    /// (Keras's default `compute_mask`).
    pub fn keep_mask(masks: &[Option<&Mask>]) -> Option<Vec<Option<Mask>>> {
        Some(vec![masks.first().copied().flatten().cloned()])
    }

    /// Requires a mask that broadcasts to its input the NumPy way (dimensions aligned from
    /// the right, each 1 or equal; unknown input dimensions accepted), as `ops.where` needs.
    pub fn mask_broadcasts(input: &Dims, mask: &[usize]) -> Result<(), Violation> {
        let fits = mask.len() <= input.len()
            && mask
                .iter()
                .rev()
                .zip(input.iter().rev())
                .all(|(&m, d)| m == 1 || d.is_none_or(|d| d == m));
        if fits {
            return Ok(());
        }
        let diff: usize = mask
            .iter()
            .rev()
            .zip(input.iter().rev())
            .map(|(&m, d)| d.map_or(0, |d| if m == 1 { 0 } else { m.abs_diff(d) }))
            .sum::<usize>()
            + mask.len().saturating_sub(input.len());
        Err(
            Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                .parameter("mask")
                .actual(format!("{mask:?}"))
                .expected(format!(
                    "a mask that broadcasts to the input {}",
                    show(input)
                ))
                .code("mask.not-broadcastable")
                .detail("does not broadcast to the input")
                .badness(badness::shape(diff.max(1) as f64)),
        )
    }

    use crate::violation::{Category, Tag, Violation, badness};

    /// Requires exactly `n` tensor inputs.
    pub fn arity(inputs: &[Dims], n: usize) -> Result<(), Violation> {
        if inputs.len() == n {
            return Ok(());
        }
        Err(Violation::new(Category::Structure, Tag::KerasEnforced)
            .parameter("inputs")
            .expected(format!("{n} input tensor(s)"))
            .actual(inputs.len())
            .detail("is the wrong number of input tensors")
            .badness(badness::STRUCTURE + inputs.len().abs_diff(n) as f64))
    }

    /// Requires an input rank within `min..=max`.
    pub fn rank_between(
        input: &Dims,
        index: usize,
        min: usize,
        max: usize,
    ) -> Result<(), Violation> {
        let r = input.len();
        if (min..=max).contains(&r) {
            return Ok(());
        }
        let expected = if min == max {
            format!("rank {min}")
        } else if max == usize::MAX {
            format!("rank >= {min}")
        } else {
            format!("rank {min}..={max}")
        };
        let diff = if r < min { min - r } else { r - max };
        Err(Violation::new(Category::Rank, Tag::KerasEnforced)
            .parameter(format!("input[{index}]"))
            .expected(expected)
            .actual(format!("rank {r}"))
            .detail("has the wrong rank")
            .badness(badness::rank(diff)))
    }

    /// `{"input_shape": ...}`: one shape, or a list of shapes for a layer called on a list.
    pub fn input_shape_config(inputs: &[Dims]) -> Option<serde_json::Value> {
        match inputs {
            [one] => Some(serde_json::json!({"input_shape": one})),
            many => Some(serde_json::json!({"input_shape": many})),
        }
    }

    /// Formats a shape the way Keras prints it: `(None, 4, 3)`.
    pub fn show(d: &Dims) -> String {
        let parts: Vec<String> = d
            .iter()
            .map(|x| x.map_or("None".to_owned(), |n| n.to_string()))
            .collect();
        if parts.len() == 1 {
            format!("({},)", parts[0])
        } else {
            format!("({})", parts.join(", "))
        }
    }

    /// The fully known form of a shape.
    pub fn known(d: &Dims) -> Option<Vec<usize>> {
        d.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_every_class_in_its_family() {
        for k in registry() {
            let module = match k.family() {
                Family::Layer => "keras.layers",
                Family::Op => "keras.src.ops.numpy",
            };
            let found = lookup(k.class_name(), Some(module)).expect("registered");
            assert_eq!(
                (found.class_name(), found.family()),
                (k.class_name(), k.family())
            );
        }
        // `Add` is both a merge layer and an operation node.
        assert_eq!(lookup("Add", None).map(|k| k.family()), Some(Family::Layer));
        assert_eq!(
            lookup("Add", Some("keras.src.ops.numpy")).map(|k| k.family()),
            Some(Family::Op)
        );
        assert!(lookup("Lambda", Some("keras.layers")).is_none());
        assert!(lookup("Dense", Some("keras.src.ops.numpy")).is_none());
    }

    /// The violation `class` with `config` refuses when parsed.
    fn refused(class: &str, config: Value) -> Violation {
        let node = Node::default();
        let parsed = lookup(class, None).expect("registered").parse(&CallSite {
            config: config.as_object().expect("an object"),
            node: &node,
            dtype: DType::Float64,
        });
        match parsed {
            Err(crate::params::ParamError::Invalid(v)) => v,
            Err(e) => panic!("{class}: expected a violation, got {e:?}"),
            Ok(_) => panic!("{class}: expected a violation, got a spec"),
        }
    }

    /// Kept-bug entries match on these codes, not on the words: every size that is not
    /// positive carries one code, whichever layer reports it.
    #[test]
    fn a_size_that_is_not_positive_has_a_stable_code() {
        use serde_json::json;
        for (class, config) in [
            ("Dense", json!({"units": 0})),
            ("Embedding", json!({"input_dim": 0, "output_dim": 2})),
            ("Embedding", json!({"input_dim": 3, "output_dim": -1})),
            ("Conv2D", json!({"filters": 0, "kernel_size": 3})),
            ("Conv2D", json!({"filters": 2, "kernel_size": [3, 0]})),
            ("MaxPooling2D", json!({"pool_size": [2, 0]})),
            ("AdaptiveAveragePooling1D", json!({"output_size": 0})),
            ("UpSampling1D", json!({"size": 0})),
            ("RepeatVector", json!({"n": -2})),
            ("SimpleRNN", json!({"units": 0})),
            (
                "GroupQueryAttention",
                json!({"head_dim": 2, "num_query_heads": 0, "num_key_value_heads": 1}),
            ),
        ] {
            let v = refused(class, config.clone());
            assert!(
                v.detail.starts_with("is not positive"),
                "{class} {config}: {v:?}"
            );
            assert_eq!(
                v.code_name(),
                "argument.not-positive",
                "{class} {config}: {v:?}"
            );
        }
    }
}
