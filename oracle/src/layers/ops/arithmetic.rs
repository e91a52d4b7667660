//! `keras.src.ops.numpy` `Add`, `Subtract`, `Multiply`, `TrueDivide`: a binary operation on
//! two tensors, or a tensor and a constant on either side, NumPy-broadcast. Also
//! `NotEqual`, `LogicalOr` and `LogicalAnd`, which Keras records where a model computes
//! masks (`Embedding(mask_zero=True)`, `Masking`, merges of masked tensors): their results
//! are booleans, as 0 and 1.

use ndarray::ArrayD;

use crate::DType;
use crate::case::{Arg, Dims};
use crate::interval::Interval;
use crate::layers::merging::{broadcast, max_abs, zip_broadcast};
use crate::layers::{Arity, CallSite, Family, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

#[derive(Debug, Clone, Copy, PartialEq)]
enum BinOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    NotEqual,
    Or,
    And,
}

impl BinOp {
    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            BinOp::Add => a + b,
            BinOp::Subtract => a - b,
            BinOp::Multiply => a * b,
            BinOp::Divide => a / b,
            BinOp::NotEqual => f64::from(u8::from(a != b)),
            BinOp::Or => f64::from(u8::from(a != 0.0 || b != 0.0)),
            BinOp::And => f64::from(u8::from(a != 0.0 && b != 0.0)),
        }
    }

    fn interval(self, a: Interval, b: Interval) -> Interval {
        match self {
            BinOp::NotEqual | BinOp::Or | BinOp::And => Interval::new(0.0, 1.0),
            BinOp::Add => a + b,
            BinOp::Subtract => a + -b,
            BinOp::Multiply => a * b,
            BinOp::Divide => {
                if b.lo > 0.0 || b.hi < 0.0 {
                    let recip = Interval::of([1.0 / b.lo, 1.0 / b.hi]);
                    let recip = Interval {
                        nan: b.nan,
                        ..recip
                    };
                    recip * a
                } else {
                    Interval::TOP
                }
            }
        }
    }
}

/// One side of the operation.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Operand {
    /// The n-th tensor input of the call.
    Tensor(usize),
    Const(f64),
}

macro_rules! binary_op {
    ($kind:ident, $class:literal, $op:expr) => {
        pub struct $kind;

        impl LayerKind for $kind {
            fn class_name(&self) -> &'static str {
                $class
            }

            fn family(&self) -> Family {
                Family::Op
            }

            fn arity(&self) -> Arity {
                Arity::Operands
            }

            fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
                parse_binary(call, $op)
            }

            fn params(&self) -> &'static [ParamDef] {
                &[]
            }

            fn generated(&self) -> bool {
                !$op.is_logical()
            }
        }
    };
}

impl BinOp {
    /// A comparison or logical operation (boolean result).
    const fn is_logical(self) -> bool {
        matches!(self, BinOp::NotEqual | BinOp::Or | BinOp::And)
    }
}

binary_op!(OpAdd, "Add", BinOp::Add);
binary_op!(OpSubtract, "Subtract", BinOp::Subtract);
binary_op!(OpMultiply, "Multiply", BinOp::Multiply);
binary_op!(OpTrueDivide, "TrueDivide", BinOp::Divide);
binary_op!(OpNotEqual, "NotEqual", BinOp::NotEqual);
binary_op!(OpLogicalOr, "LogicalOr", BinOp::Or);
binary_op!(OpLogicalAnd, "LogicalAnd", BinOp::And);

fn parse_binary(call: &CallSite<'_>, op: BinOp) -> ParamResult<Box<dyn Spec>> {
    Config::new(call.config).finish()?;
    if !call.node.kwargs.is_empty() {
        return Err(
            Unsupported::new("kwargs", "keyword arguments to an arithmetic operation").into(),
        );
    }
    let mut tensors = 0;
    let operands = call
        .node
        .args
        .iter()
        .map(|a| match a {
            Arg::Tensor { .. } => {
                tensors += 1;
                Ok(Operand::Tensor(tensors - 1))
            }
            // A constant is compared in the compute dtype (`x != 0.1` in float32 compares
            // with float32(0.1)).
            Arg::Literal(v) => v
                .as_f64()
                .map(|c| {
                    if op.is_logical() && call.dtype == DType::Float32 {
                        c as f32 as f64
                    } else {
                        c
                    }
                })
                .map(Operand::Const)
                .ok_or_else(|| Unsupported::new("args", format!("operand {v}")).into()),
            other => Err(Unsupported::new("args", format!("operand {other:?}")).into()),
        })
        .collect::<ParamResult<Vec<_>>>()?;
    let [a, b] = operands[..] else {
        return Err(Unsupported::new("args", format!("{} operands", operands.len())).into());
    };
    Ok(Box::new(BinarySpec { op, a, b }))
}

#[derive(Debug)]
struct BinarySpec {
    op: BinOp,
    a: Operand,
    b: Operand,
}

impl BinarySpec {
    fn tensor_count(&self) -> usize {
        [self.a, self.b]
            .iter()
            .filter(|o| matches!(o, Operand::Tensor(_)))
            .count()
    }
}

impl Spec for BinarySpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        crate::layers::util::arity(inputs, self.tensor_count())?;
        let shapes: Vec<&[Option<usize>]> = inputs.iter().map(|s| s.as_slice()).collect();
        let out = broadcast(&shapes).map_err(|(axis, x, y)| {
            Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                .parameter("operands")
                .actual(format!("{x:?} and {y:?}"))
                .expected("shapes that broadcast")
                .detail(format!("do not broadcast at axis {axis}"))
                .badness(badness::shape(match (x, y) {
                    (Some(x), Some(y)) => x.abs_diff(y) as f64,
                    _ => 1.0,
                }))
        })?;
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let side = |o: Operand| match o {
            Operand::Tensor(i) => inputs[i].clone(),
            Operand::Const(c) => ArrayD::from_elem(vec![], c),
        };
        vec![zip_broadcast(&side(self.a), &side(self.b), |x, y| {
            self.op.apply(x, y)
        })]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        let side = |o: Operand| match o {
            Operand::Tensor(i) => inputs[i],
            Operand::Const(c) => Interval::point(c),
        };
        vec![self.op.interval(side(self.a), side(self.b))]
    }

    /// A product or quotient: one rounding, plus the rounding of a constant to the dtype,
    /// both relative to the result. A sum or difference may cancel: its error is bounded
    /// relative to `|a| + |b|` (see [`Tolerance::sum`]; a constant's rounding to the dtype is
    /// one more rounding of a term).
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        match self.op {
            BinOp::Add | BinOp::Subtract => {
                let side = |o: Operand| match o {
                    Operand::Tensor(i) => {
                        inputs[i].mapv(|x| if x.is_finite() { x.abs() } else { 0.0 })
                    }
                    Operand::Const(c) => ArrayD::from_elem(vec![], c.abs()),
                };
                let terms = zip_broadcast(&side(self.a), &side(self.b), |x, y| x + y);
                Tolerance::sum(dtype, 2, max_abs(&terms))
            }
            BinOp::Multiply | BinOp::Divide => Tolerance::elementwise(dtype),
            BinOp::NotEqual | BinOp::Or | BinOp::And => Tolerance::EXACT,
        }
    }
}
