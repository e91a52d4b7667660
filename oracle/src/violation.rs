//! Why a model is invalid: one [`Violation`] type for every layer, with a category, a tag,
//! the parameter involved, expected vs actual, and a badness that a repair can descend.

use std::fmt;

/// What kind of precondition failed. One enum for all layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// The graph itself: a wrong number of inputs to a layer, an unusable call.
    Structure,
    /// An input of the wrong rank.
    Rank,
    /// Inputs whose shapes do not fit together (merge layers, attention).
    IncompatibleShapes,
    /// An argument value the layer refuses outright (negative units, an unknown padding).
    IllegalArgument,
    /// A legal argument that does not fit this input (a kernel larger than the input).
    ImproperArgument,
    /// An output dimension that becomes zero or negative.
    EmptyOutput,
    /// A weight array of the wrong shape.
    WeightShape,
    /// A weight value outside its domain (a negative variance).
    WeightValue,
    /// An axis out of range or repeated.
    Axis,
    /// A reshape whose sizes do not match.
    ReshapeSize,
    /// An input of a dtype the layer cannot take.
    DType,
    /// An input value outside the layer's domain, found when it runs (an `Embedding` index
    /// out of range): only the kernel can refuse it.
    InputValue,
}

impl Category {
    pub const ALL: [Category; 12] = [
        Category::Structure,
        Category::Rank,
        Category::IncompatibleShapes,
        Category::IllegalArgument,
        Category::ImproperArgument,
        Category::EmptyOutput,
        Category::WeightShape,
        Category::WeightValue,
        Category::Axis,
        Category::ReshapeSize,
        Category::DType,
        Category::InputValue,
    ];

    /// The name used in findings, signatures and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Category::Structure => "structure",
            Category::Rank => "rank",
            Category::IncompatibleShapes => "incompatible-shapes",
            Category::IllegalArgument => "illegal-argument",
            Category::ImproperArgument => "improper-argument",
            Category::EmptyOutput => "empty-output",
            Category::WeightShape => "weight-shape",
            Category::WeightValue => "weight-value",
            Category::Axis => "axis",
            Category::ReshapeSize => "reshape-size",
            Category::DType => "dtype",
            Category::InputValue => "input-value",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether Keras/TF is expected to refuse the model (a missing check is a finding), or the
/// precondition is semantic only (Keras builds it, but e.g. an output becomes empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tag {
    KerasEnforced,
    Semantic,
}

impl Tag {
    pub fn name(self) -> &'static str {
        match self {
            Tag::KerasEnforced => "keras-enforced",
            Tag::Semantic => "semantic",
        }
    }
}

/// Badness: how far a model is from valid. Severity bands never overlap, so fixing a
/// structural problem always beats shrinking a shape difference, which beats nudging an
/// argument:
/// structure `[1e9, ∞)` > rank `[1e6, 1e9)` > shape `[1e3, 1e6)` > argument `(0, 1e3)`.
pub mod badness {
    pub const STRUCTURE: f64 = 1e9;

    /// `diff` ranks away from an accepted rank.
    pub fn rank(diff: usize) -> f64 {
        1e6 + (diff.max(1) as f64 - 1.0).min(998.0) * 1e6 / 999.0 * 0.999
    }

    /// Shapes that differ by `diff` (a sum of absolute dimension differences, or a size ratio).
    pub fn shape(diff: f64) -> f64 {
        1e3 + diff.abs().min(998_000.0)
    }

    /// An argument `dist` away from its nearest accepted value.
    pub fn argument(dist: f64) -> f64 {
        dist.abs().clamp(1e-6, 999.0)
    }
}

/// One failed precondition of one layer call.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The layer's name (filled in by the graph checker; empty inside a layer's own code).
    pub layer: String,
    /// The layer's class (filled in by the graph checker).
    pub class: String,
    pub category: Category,
    pub tag: Tag,
    /// The argument or input involved, e.g. `kernel_size[1]`, `input[0]`.
    pub parameter: String,
    pub expected: String,
    pub actual: String,
    pub badness: f64,
    /// The rest of the sentence after `parameter=actual`, e.g. `exceeds padded input width 4`.
    pub detail: String,
    /// When TF refuses it.
    pub refused: Refused,
    /// A stable name of the precondition (`dot.batch-axis`), for the precondition that a kept
    /// bug is about; `None` where the category says enough.
    pub code: Option<&'static str>,
}

/// When TF refuses a violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Refused {
    /// When Keras builds the layer (or earlier).
    #[default]
    AtBuild,
    /// Only when the layer runs, by TF's kernels or by Keras's own code in `call` (an
    /// attention mask, which Keras meets only then).
    AtRun,
    /// Only when the layer runs, because the sizes it depends on are unknown until then (the
    /// model declares them `None`): no check at build could see it, so a kernel's refusal is
    /// the one to expect.
    UnknownAtBuild,
    /// Only when TF's CPU kernels run the layer, for a dtype or data format they lack. Keras
    /// builds it as it would for a device that has the kernel (so its output shape is what
    /// that device computes), and XLA compiles kernels of its own, which may run it: a run
    /// under XLA says nothing about TF's validation of it.
    ByCpuKernels,
}

impl Violation {
    /// Whether TF refuses it only when the layer runs ([`Refused::AtRun`],
    /// [`Refused::UnknownAtBuild`] or [`Refused::ByCpuKernels`]), not when Keras builds it.
    pub fn at_run(&self) -> bool {
        self.refused != Refused::AtBuild
    }

    /// Whether only TF's CPU kernels refuse it ([`Refused::ByCpuKernels`]).
    pub fn cpu_kernels(&self) -> bool {
        self.refused == Refused::ByCpuKernels
    }
}

impl Violation {
    /// A violation of `category`; the layer code fills in the rest with the builder methods.
    pub fn new(category: Category, tag: Tag) -> Self {
        Violation {
            layer: String::new(),
            class: String::new(),
            category,
            tag,
            parameter: String::new(),
            expected: String::new(),
            actual: String::new(),
            badness: match category {
                Category::Structure => badness::STRUCTURE,
                Category::Rank => badness::rank(1),
                Category::IncompatibleShapes | Category::ReshapeSize | Category::WeightShape => {
                    badness::shape(1.0)
                }
                _ => badness::argument(1.0),
            },
            detail: String::new(),
            refused: Refused::AtBuild,
            code: None,
        }
    }

    /// Names the precondition with a stable code, `<layer family or class>.<what>` in
    /// kebab case, which kept-bug entries match on instead of the violation's words.
    pub fn code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// The violation's stable code: the one its layer gave, else its category's name.
    pub fn code_name(&self) -> &'static str {
        self.code.unwrap_or(self.category.name())
    }

    /// Marks the violation as one TF refuses only when the layer runs ([`Refused::AtRun`]).
    pub fn refused_at_run(mut self) -> Self {
        self.refused = Refused::AtRun;
        self
    }

    /// Marks the violation as a limitation of TF's CPU kernels, which refuse it when they
    /// run ([`Refused::ByCpuKernels`]).
    pub fn refused_by_cpu_kernels(mut self) -> Self {
        self.refused = Refused::ByCpuKernels;
        self
    }

    pub fn parameter(mut self, p: impl Into<String>) -> Self {
        self.parameter = p.into();
        self
    }

    pub fn expected(mut self, e: impl fmt::Display) -> Self {
        self.expected = e.to_string();
        self
    }

    pub fn actual(mut self, a: impl fmt::Display) -> Self {
        self.actual = a.to_string();
        self
    }

    pub fn badness(mut self, b: f64) -> Self {
        self.badness = b;
        self
    }

    pub fn detail(mut self, d: impl Into<String>) -> Self {
        self.detail = d.into();
        self
    }

    /// Places the violation at a layer (done once, by the graph checker).
    pub fn at(mut self, layer: &str, class: &str) -> Self {
        self.layer = layer.to_owned();
        self.class = class.to_owned();
        self
    }
}

/// The one message format: `Conv2D 'conv_3': kernel_size[1]=5 exceeds padded input width 4`.
impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} '{}': ", self.class, self.layer)?;
        match (self.parameter.is_empty(), self.actual.is_empty()) {
            (false, false) => write!(f, "{}={} ", self.parameter, self.actual)?,
            (false, true) => write!(f, "{} ", self.parameter)?,
            _ => {}
        }
        f.write_str(&self.detail)?;
        if !self.expected.is_empty() {
            write!(f, " (expected {})", self.expected)?;
        }
        Ok(())
    }
}

/// An argument or form the oracle cannot model exactly: the case is neither valid nor
/// invalid for it, and is never judged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{class} '{layer}': {parameter} is not supported by the reference: {reason}")]
pub struct Unsupported {
    pub layer: String,
    pub class: String,
    pub parameter: String,
    pub reason: String,
}

impl Unsupported {
    pub fn new(parameter: impl Into<String>, reason: impl Into<String>) -> Self {
        Unsupported {
            layer: String::new(),
            class: String::new(),
            parameter: parameter.into(),
            reason: reason.into(),
        }
    }

    pub fn at(mut self, layer: &str, class: &str) -> Self {
        self.layer = layer.to_owned();
        self.class = class.to_owned();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_format() {
        let v = Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
            .parameter("kernel_size[1]")
            .actual(5)
            .detail("exceeds padded input width 4")
            .at("conv_3", "Conv2D");
        assert_eq!(
            v.to_string(),
            "Conv2D 'conv_3': kernel_size[1]=5 exceeds padded input width 4"
        );
        let v = Violation::new(Category::Rank, Tag::KerasEnforced)
            .parameter("input[0]")
            .expected("rank 4")
            .actual("rank 3")
            .detail("has the wrong rank")
            .at("c", "Conv2D");
        assert_eq!(
            v.to_string(),
            "Conv2D 'c': input[0]=rank 3 has the wrong rank (expected rank 4)"
        );
    }

    #[test]
    fn badness_bands_are_ordered() {
        use badness::*;
        assert!(STRUCTURE > rank(1000));
        assert!(rank(1) > shape(1e12));
        assert!(rank(2) > rank(1));
        assert!(shape(1.0) > argument(1e9));
        assert!(shape(2.0) > shape(1.0) && argument(2.0) > argument(1.0));
        assert!(argument(0.0) > 0.0);
    }
}
