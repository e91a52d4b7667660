//! `keras.layers.EinsumDense`: `activation(einsum(equation, x, kernel) + bias)`.
//!
//! Keras reads the equation with three regular expressions, after replacing `...` by `0`, each
//! matched at the start of the string only: `X,Y->Z`, `...X,Y->...Z` (left ellipsis) and
//! `X...,Y->Z...` (right ellipsis, `X` of two letters or more), with `X`, `Y`, `Z` runs of ASCII
//! letters. Anything else is refused when the layer builds. From the input's shape and
//! `output_shape` (the output's sizes without the batch and ellipsis axes) it derives the
//! kernel's and bias's shapes ([`Analysis`], which mirrors Keras's checks and their order,
//! Python's negative indexing and `IndexError`s included), and declares the output's shape.
//! TF's `einsum` then runs the equation as written; the reference evaluates it directly
//! (labels repeated within an operand take diagonals, labels missing from the output are
//! summed).
//!
//! What Keras accepts but gets wrong ([`Tag::Semantic`]): a declared output shape other than
//! the one the einsum produces. That happens when `output_shape` has more entries than the
//! output has axes, and with a left ellipsis over two or more axes after the batch: Keras
//! inserts those axes in reverse order (`...b,bc->...c` on `(None, 2, 3, 5)` is declared
//! `(None, 3, 2, c)` and is `(None, 2, 3, c)`).
//!
//! The bias is added with `keras.ops.add`, which on TF becomes `tf.nn.bias_add` along the last
//! axis whenever the bias has one axis longer than 1 of the output's last size (the known
//! channels_first bias bug of `crashes/`): a bias of shape `(5, 1)` on an output `(b, 5, 5)`
//! lands on the wrong axis. The reference broadcasts, as the layer means.
//!
//! Where a declared size is unknown (`None` in `output_shape`) while the einsum's is known, the
//! reference keeps it unknown on symbolic inputs, as Keras does for the layers after it, and
//! gives the einsum's sizes on concrete inputs.

use ndarray::{ArrayD, IxDyn};
use serde_json::Value;

use crate::DType;
use crate::activations::Activation;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::preprocessing::{plain_call, refuse_seed};
use crate::layers::util::{arity, input_shape_config, show};
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct EinsumDense;

/// Where the equation's ellipsis is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ellipsis {
    None,
    Left,
    Right,
}

/// An equation Keras accepts: the input's, kernel's and output's labels.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Equation {
    input: Vec<char>,
    weight: Vec<char>,
    output: Vec<char>,
    ellipsis: Ellipsis,
}

fn refused(
    parameter: &str,
    actual: impl std::fmt::Display,
    detail: impl Into<String>,
) -> Violation {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(parameter)
        .actual(actual)
        .detail(detail)
        .badness(badness::argument(1.0))
}

/// A run of at least `min` ASCII letters at `pos`, and where it ends.
fn letters(s: &[char], pos: usize, min: usize) -> Option<(Vec<char>, usize)> {
    let end = pos
        + s.get(pos..)?
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
    (end - pos >= min).then(|| (s[pos..end].to_vec(), end))
}

/// `lit` at `pos`, and where it ends.
fn literal(s: &[char], pos: usize, lit: &str) -> Option<usize> {
    let l: Vec<char> = lit.chars().collect();
    (s.get(pos..pos + l.len())? == l.as_slice()).then_some(pos + l.len())
}

impl Equation {
    /// Keras's three patterns on `...`-replaced text, matched at the start; the equation and
    /// where the match ends.
    fn keras_match(s: &[char]) -> Option<(Equation, usize)> {
        // `X,Y->Z`.
        let plain = || -> Option<(Equation, usize)> {
            let (input, p) = letters(s, 0, 1)?;
            let p = literal(s, p, ",")?;
            let (weight, p) = letters(s, p, 1)?;
            let p = literal(s, p, "->")?;
            let (output, end) = letters(s, p, 1)?;
            let ellipsis = Ellipsis::None;
            Some((
                Equation {
                    input,
                    weight,
                    output,
                    ellipsis,
                },
                end,
            ))
        };
        if let Some(m) = plain() {
            return Some(m);
        }
        // `0X,Y->0Z`.
        if s.first() == Some(&'0') {
            let (input, p) = letters(s, 1, 1)?;
            let p = literal(s, p, ",")?;
            let (weight, p) = letters(s, p, 1)?;
            let p = literal(s, p, "->0")?;
            let (output, end) = letters(s, p, 1)?;
            let e = Ellipsis::Left;
            return Some((
                Equation {
                    input,
                    weight,
                    output,
                    ellipsis: e,
                },
                end,
            ));
        }
        // `X0,Y->Z0`, X of two letters or more.
        let (input, p) = letters(s, 0, 2)?;
        let p = literal(s, p, "0,")?;
        let (weight, p) = letters(s, p, 1)?;
        let p = literal(s, p, "->")?;
        let (output, p) = letters(s, p, 1)?;
        let end = literal(s, p, "0")?;
        let e = Ellipsis::Right;
        Some((
            Equation {
                input,
                weight,
                output,
                ellipsis: e,
            },
            end,
        ))
    }

    fn parse(equation: &str) -> ParamResult<Equation> {
        let replaced: Vec<char> = equation.replace("...", "0").chars().collect();
        let Some((eq, end)) = Equation::keras_match(&replaced) else {
            return Err(refused(
                "equation",
                format!("{equation:?}"),
                "is not of the form X,Y->Z, ...X,Y->...Z or X...,Y->Z...",
            )
            .into());
        };
        if equation.contains('0') {
            // Keras reads a literal `0` as an ellipsis; TF's einsum refuses it.
            return Err(refused(
                "equation",
                format!("{equation:?}"),
                "holds a character einsum does not take",
            )
            .into());
        }
        if end != replaced.len() {
            return Err(Unsupported::new(
                "equation",
                "text after the part Keras reads (TF's einsum reads all of it)",
            )
            .into());
        }
        Ok(eq)
    }
}

#[derive(Debug)]
struct EinsumDenseSpec {
    equation: Equation,
    /// `output_shape` as written (without the batch and ellipsis axes).
    partial: Vec<Option<usize>>,
    bias_axes: Option<Vec<char>>,
    activation: Activation,
    dtype: DType,
}

/// Python's `seq[index]`, negative indices counting from the end; `None` is an `IndexError`.
fn py_get<T: Copy>(seq: &[T], index: i64) -> Option<T> {
    let i = if index < 0 {
        index + seq.len() as i64
    } else {
        index
    };
    usize::try_from(i).ok().and_then(|i| seq.get(i).copied())
}

fn index_error(what: &str) -> Violation {
    Violation::new(Category::Rank, Tag::KerasEnforced)
        .parameter("equation")
        .expected("labels that match the input's axes and `output_shape`")
        .detail(format!(
            "indexes past the end of the {what} (an IndexError)"
        ))
        .badness(badness::rank(1))
}

/// What Keras derives when it builds the layer on an input shape (`_analyze_split_string`).
#[derive(Debug)]
struct Analysis {
    kernel: Vec<usize>,
    bias: Option<Vec<usize>>,
    /// The output shape Keras declares.
    declared: Dims,
    /// How many axes the ellipsis covers (negative when the input has too few).
    elided: i64,
}

impl EinsumDenseSpec {
    /// The einsum plus the bias, before the activation.
    fn pre_activation(
        &self,
        x: &ArrayD<f64>,
        k: &ArrayD<f64>,
        bias: Option<&ArrayD<f64>>,
    ) -> ArrayD<f64> {
        let dims: Dims = x.shape().iter().map(|&d| Some(d)).collect();
        let (_, actual) = self.check(&dims).expect("checked by infer");
        let out_shape: Vec<usize> = actual.iter().map(|d| d.expect("known")).collect();
        let eq = &self.equation;
        let labels = self.input_labels(x.ndim());
        let contracted = self.contracted(x.shape(), k.shape());
        let sum_shape: Vec<usize> = contracted.iter().map(|&(_, d)| d).collect();
        // Output axis `i` is an ellipsis axis or a label.
        let n_ell = labels.iter().filter(|l| l.is_none()).count();
        let out_labels: Vec<Option<char>> = match eq.ellipsis {
            Ellipsis::Right => eq
                .output
                .iter()
                .map(|&c| Some(c))
                .chain(std::iter::repeat_n(None, n_ell))
                .collect(),
            _ => std::iter::repeat_n(None, n_ell)
                .chain(eq.output.iter().map(|&c| Some(c)))
                .collect(),
        };
        let mut value = [0usize; 128];
        let mut xi = vec![0usize; x.ndim()];
        let mut ki = vec![0usize; k.ndim()];
        let mut y = ArrayD::<f64>::zeros(IxDyn(&out_shape));
        for_each_index(&out_shape, |oi| {
            let mut ell = Vec::with_capacity(n_ell);
            for (l, &i) in out_labels.iter().zip(oi) {
                match l {
                    Some(c) => value[*c as usize] = i,
                    None => ell.push(i),
                }
            }
            let mut total = 0.0;
            for_each_index(&sum_shape, |si| {
                for (&(c, _), &i) in contracted.iter().zip(si) {
                    value[c as usize] = i;
                }
                let mut e = ell.iter();
                for (slot, l) in xi.iter_mut().zip(&labels) {
                    *slot = match l {
                        Some(c) => value[*c as usize],
                        None => *e.next().expect("an ellipsis axis"),
                    };
                }
                for (slot, &c) in ki.iter_mut().zip(&eq.weight) {
                    *slot = value[c as usize];
                }
                total += x[xi.as_slice()] * k[ki.as_slice()];
            });
            y[oi] = total;
        });
        if let Some(b) = bias {
            let b = b.broadcast(y.raw_dim()).expect("checked by infer");
            y += &b;
        }
        y
    }

    fn analyze(&self, x: &Dims) -> Result<Analysis, Violation> {
        let eq = &self.equation;
        let left = eq.ellipsis == Ellipsis::Left;
        let rank = x.len() as i64;
        let elided = rank - eq.input.len() as i64;
        let batch = *x.first().ok_or_else(|| index_error("input shape"))?;
        let mut out: Dims = std::iter::once(batch)
            .chain(self.partial.iter().copied())
            .collect();
        if elided > 0 && left {
            // Keras inserts each at position 1: the ellipsis axes end up reversed.
            for &d in &x[1..elided as usize] {
                out.insert(1, d);
            }
        } else if elided > 0 {
            out.extend_from_slice(&x[(rank - elided) as usize..]);
        }
        let position = |labels: &[char], c: char| -> i64 {
            // The last occurrence, as a dict comprehension keeps it.
            labels
                .iter()
                .rposition(|&l| l == c)
                .expect("a label of the spec") as i64
        };
        let in_index = |c: char| {
            let i = position(&eq.input, c);
            if left { i + elided - rank } else { i }
        };
        let out_index = |c: char| {
            let i = position(&eq.output, c);
            if left { i + elided } else { i }
        };
        for &c in &eq.input {
            let in_dim = py_get(x, in_index(c)).ok_or_else(|| index_error("input shape"))?;
            if eq.output.contains(&c) {
                let out_dim =
                    py_get(&out, out_index(c)).ok_or_else(|| index_error("output shape"))?;
                if out_dim.is_some() && out_dim != in_dim {
                    return Err(
                        Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                            .parameter("output_shape")
                            .actual(show(&out))
                            .expected(format!(
                                "size {} at label {c:?}, the input's",
                                in_dim.map_or("None".into(), |d| d.to_string())
                            ))
                            .detail(format!(
                                "does not match the input {} at shared label {c:?}",
                                show(x)
                            ))
                            .badness(badness::shape(
                                out_dim.unwrap_or(0).abs_diff(in_dim.unwrap_or(0)) as f64,
                            )),
                    );
                }
            }
        }
        if let Some(&c) = eq
            .output
            .iter()
            .find(|c| !eq.input.contains(c) && !eq.weight.contains(c))
        {
            return Err(refused(
                "equation",
                c,
                "is an output label found in neither operand",
            ));
        }
        let mut kernel = Vec::with_capacity(eq.weight.len());
        for &c in &eq.weight {
            let d = if eq.output.contains(&c) {
                py_get(&out, out_index(c)).ok_or_else(|| index_error("output shape"))?
            } else if eq.input.contains(&c) {
                py_get(x, in_index(c)).ok_or_else(|| index_error("input shape"))?
            } else {
                return Err(refused(
                    "equation",
                    c,
                    "is a kernel label found in neither the input nor the output",
                ));
            };
            kernel.push(d);
        }
        let bias = match &self.bias_axes {
            None => None,
            Some(axes) => {
                let skip = if left { elided } else { 0 };
                let mut sizes = Vec::with_capacity(eq.output.len());
                for (i, &c) in eq.output.iter().enumerate() {
                    let d =
                        py_get(&out, i as i64 + skip).ok_or_else(|| index_error("output shape"))?;
                    sizes.push((c, d));
                }
                if let Some(&c) = axes.iter().find(|c| !eq.output.contains(c)) {
                    return Err(refused("bias_axes", c, "is not an output label"));
                }
                let Some(first) = axes
                    .iter()
                    .filter_map(|c| eq.output.iter().position(|o| o == c))
                    .min()
                else {
                    return Err(refused("bias_axes", "\"\"", "is empty"));
                };
                let size = |c: char| {
                    sizes
                        .iter()
                        .rev()
                        .find(|(l, _)| *l == c)
                        .expect("an output label")
                        .1
                };
                let mut shape: Dims = eq.output[first..]
                    .iter()
                    .map(|&c| if axes.contains(&c) { size(c) } else { Some(1) })
                    .collect();
                if !left {
                    shape.extend(std::iter::repeat_n(Some(1), elided.max(0) as usize));
                }
                Some(shape)
            }
        };
        let known = |name: &str, dims: &Dims| -> Result<Vec<usize>, Violation> {
            dims.iter().copied().collect::<Option<Vec<_>>>().ok_or_else(|| {
                Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter(name)
                    .actual(show(dims))
                    .expected("a fully known shape")
                    .detail("would have a size Keras cannot know (an unknown input size, a None in output_shape, or the batch axis)")
                    .badness(badness::argument(1.0))
            })
        };
        let kernel = known("kernel", &kernel)?;
        let bias = bias.map(|b| known("bias", &b)).transpose()?;
        Ok(Analysis {
            kernel,
            bias,
            declared: out,
            elided,
        })
    }

    /// Where each input axis comes from: a label, or an ellipsis axis (`None`).
    fn input_labels(&self, rank: usize) -> Vec<Option<char>> {
        let eq = &self.equation;
        let ell = rank.saturating_sub(eq.input.len());
        let labels = eq.input.iter().map(|&c| Some(c));
        match eq.ellipsis {
            Ellipsis::Left => std::iter::repeat_n(None, ell).chain(labels).collect(),
            Ellipsis::Right => labels.chain(std::iter::repeat_n(None, ell)).collect(),
            Ellipsis::None => labels.collect(),
        }
    }

    /// TF's checks when the einsum runs, and the shape it produces: each label one size, no
    /// label repeated in the output; the output is the ellipsis axes (before or after) and
    /// the output labels' sizes.
    fn einsum_shape(&self, x: &Dims, a: &Analysis) -> Result<Dims, Violation> {
        let eq = &self.equation;
        if a.elided < 0 || (eq.ellipsis == Ellipsis::None && a.elided != 0) {
            return Err(Violation::new(Category::Rank, Tag::KerasEnforced)
                .parameter("input[0]")
                .actual(format!("rank {}", x.len()))
                .expected(format!(
                    "rank {} (the equation's input labels)",
                    eq.input.len()
                ))
                .code("einsum-dense.input-rank")
                .detail("has another rank than the equation's input")
                .badness(badness::rank(a.elided.unsigned_abs() as usize)));
        }
        if let Some((i, &c)) = eq
            .output
            .iter()
            .enumerate()
            .find(|(i, c)| eq.output[..*i].contains(c))
        {
            return Err(refused(
                "equation",
                c,
                format!("repeats output label {c:?} (position {i})"),
            ));
        }
        let mut sizes: Vec<(char, Option<usize>)> = Vec::new();
        let mut bind = |c: char, d: Option<usize>| -> Result<(), Violation> {
            match sizes.iter_mut().find(|(l, _)| *l == c) {
                Some((_, known @ None)) => *known = d,
                Some((_, Some(k))) if d.is_some_and(|d| d != *k) => {
                    return Err(
                        Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                            .parameter("input[0]")
                            .actual(show(x))
                            .expected(format!("one size for label {c:?}"))
                            .detail(format!(
                                "gives label {c:?} sizes {k} and {}",
                                d.unwrap_or(0)
                            ))
                            .badness(badness::shape(k.abs_diff(d.unwrap_or(0)) as f64)),
                    );
                }
                Some(_) => {}
                None => sizes.push((c, d)),
            }
            Ok(())
        };
        let labels = self.input_labels(x.len());
        for (l, &d) in labels.iter().zip(x) {
            if let Some(c) = l {
                bind(*c, d)?;
            }
        }
        for (&c, &d) in eq.weight.iter().zip(&a.kernel) {
            bind(c, Some(d))?;
        }
        let size = |c: char| sizes.iter().find(|(l, _)| *l == c).expect("bound").1;
        let ellipsis: Dims = labels
            .iter()
            .zip(x)
            .filter(|(l, _)| l.is_none())
            .map(|(_, &d)| d)
            .collect();
        let letters = eq.output.iter().map(|&c| size(c));
        Ok(match eq.ellipsis {
            Ellipsis::Right => letters.chain(ellipsis).collect(),
            _ => ellipsis.into_iter().chain(letters).collect(),
        })
    }

    fn check(&self, x: &Dims) -> Result<(Analysis, Dims), Violation> {
        let a = self.analyze(x)?;
        let actual = self.einsum_shape(x, &a)?;
        let differs = a.declared.len() != actual.len()
            || a.declared
                .iter()
                .zip(&actual)
                .any(|(d, r)| d.is_some() && d != r);
        if differs {
            return Err(Violation::new(Category::IncompatibleShapes, Tag::Semantic)
                .parameter("output_shape")
                .actual(show(&a.declared))
                .expected(format!("the einsum's output shape {}", show(&actual)))
                .code("einsum-dense.declared-shape")
                .detail("makes Keras declare another output shape than the einsum's")
                .badness(badness::shape(
                    a.declared.len().abs_diff(actual.len()) as f64 + 1.0,
                )));
        }
        Ok((a, actual))
    }

    /// The sizes of the labels summed over (in the operands, not in the output).
    fn contracted(&self, x: &[usize], kernel: &[usize]) -> Vec<(char, usize)> {
        let eq = &self.equation;
        let mut out: Vec<(char, usize)> = Vec::new();
        let labels = self.input_labels(x.len());
        let pairs = labels
            .iter()
            .zip(x)
            .filter_map(|(l, &d)| l.map(|c| (c, d)))
            .chain(eq.weight.iter().copied().zip(kernel.iter().copied()));
        for (c, d) in pairs {
            if !eq.output.contains(&c) && !out.iter().any(|(l, _)| *l == c) {
                out.push((c, d));
            }
        }
        out
    }
}

/// Visits every multi-index of `shape` in row-major order.
fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize])) {
    if shape.contains(&0) {
        return;
    }
    let mut idx = vec![0usize; shape.len()];
    loop {
        f(&idx);
        let mut axis = shape.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            idx[axis] += 1;
            if idx[axis] < shape[axis] {
                break;
            }
            idx[axis] = 0;
        }
    }
}

fn output_shape_arg(c: &Config<'_>) -> ParamResult<Vec<Option<usize>>> {
    let entry = |v: &Value| -> Option<Option<usize>> {
        match v {
            Value::Null => Some(None),
            Value::Bool(b) => Some(Some(usize::from(*b))),
            Value::Number(n) => n.as_u64().map(|d| Some(d as usize)),
            _ => None,
        }
    };
    let bad = |v: &Value| -> crate::params::ParamError {
        refused(
            "output_shape",
            v,
            "is not a non-negative integer or a list of them and nulls",
        )
        .into()
    };
    match c.raw("output_shape") {
        None => Err(refused("output_shape", "missing", "is required").into()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| entry(v).ok_or_else(|| bad(v)))
            .collect(),
        Some(Value::Object(o)) if o.is_empty() => Ok(Vec::new()),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => match entry(v) {
            Some(Some(d)) => Ok(vec![Some(d)]),
            _ => Err(bad(v)),
        },
        Some(v) => Err(bad(v)),
    }
}

impl LayerKind for EinsumDense {
    fn class_name(&self) -> &'static str {
        "EinsumDense"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let equation = match c.raw("equation") {
            Some(Value::String(s)) => Equation::parse(s)?,
            Some(v) => return Err(refused("equation", v, "is not a string").into()),
            None => return Err(refused("equation", "missing", "is required").into()),
        };
        let partial = output_shape_arg(&c)?;
        let bias_axes = match c.raw("bias_axes") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.chars().collect()),
            Some(Value::Array(_)) => {
                return Err(Unsupported::new("bias_axes", "a list of labels").into());
            }
            Some(v) => return Err(refused("bias_axes", v, "is not a string").into()),
        };
        let activation = Activation::parse("activation", c.raw("activation"))?;
        for key in ["lora_rank", "gptq_unpacked_column_size"] {
            if c.raw(key).is_some_and(|v| !v.is_null()) {
                return Err(Unsupported::new(key, "LoRA adapters or GPTQ packing").into());
            }
        }
        c.ignore(&["lora_alpha"]);
        refuse_seed(call.config)?;
        c.finish()?;
        plain_call(call)?;
        Ok(Box::new(EinsumDenseSpec {
            equation,
            partial,
            bias_axes,
            activation,
            dtype: call.dtype,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Choice {
                name: "equation",
                options: &[
                    "ab,bc->ac",
                    "...b,bc->...c",
                    "...ab,bc->...c",
                    "ab...,bc->ac...",
                ],
            },
            ParamDef::Int {
                name: "output_shape",
                min: 1,
                max: 8,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Choice {
                name: "bias_axes",
                options: &["c"],
            },
            ParamDef::Activation { name: "activation" },
        ]
    }
}

impl Spec for EinsumDenseSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        let (a, actual) = self.check(x)?;
        if x.iter().all(Option::is_some) {
            return Ok(vec![actual]);
        }
        Ok(vec![
            a.declared
                .iter()
                .zip(&actual)
                .map(|(d, r)| d.and(*r))
                .collect(),
        ])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let x: Dims = inputs[0].iter().map(|&d| Some(d)).collect();
        let a = self.analyze(&x).expect("checked by infer");
        let mut w = vec![WeightSpec {
            name: "kernel",
            shape: a.kernel,
            domain: WeightDomain::Any,
        }];
        if let Some(b) = a.bias {
            w.push(WeightSpec {
                name: "bias",
                shape: b,
                domain: WeightDomain::Any,
            });
        }
        w
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let y = self.pre_activation(inputs[0], weights[0], weights.get(1).copied());
        vec![self.activation.apply_in(&y, self.dtype)]
    }

    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let n: usize = self
            .contracted(inputs[0].shape(), weights[0].shape())
            .iter()
            .map(|&(_, d)| d)
            .product();
        crate::layers::util::order_decides_sum_overflow(
            self.dtype,
            n,
            inputs[0],
            weights[0],
            weights.get(1).copied(),
            |x, k, b| self.pre_activation(x, k, b),
        )
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let x = &shapes[0];
        let n = self.analyze(x).ok().and_then(|a| {
            let known: Option<Vec<usize>> = x.iter().copied().collect();
            known.map(|x| {
                self.contracted(&x, &a.kernel)
                    .iter()
                    .map(|&(_, d)| d)
                    .product::<usize>()
            })
        });
        let mut pre = match (n, inputs.first(), weights.first()) {
            (Some(n), Some(x), Some(k)) => (*x * *k).sum_of(n),
            _ => Interval::TOP,
        };
        if self.bias_axes.is_some() {
            pre = pre + weights.get(1).copied().unwrap_or(Interval::TOP);
        }
        vec![self.activation.interval(pre)]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let n: usize = self
            .contracted(inputs[0].shape(), weights[0].shape())
            .iter()
            .map(|&(_, d)| d)
            .product();
        let max_abs = |a: &ArrayD<f64>| a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let mut magnitude = n as f64 * max_abs(inputs[0]) * max_abs(weights[0]);
        if let Some(b) = weights.get(1) {
            magnitude += max_abs(b);
        }
        Tolerance::reduction(dtype, n + 1, magnitude).after(self.activation, dtype)
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        input_shape_config(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;
    use crate::params::ParamError;
    use serde_json::json;

    fn spec(v: Value) -> ParamResult<Box<dyn Spec>> {
        let m = v.as_object().unwrap().clone();
        let node = Node::default();
        EinsumDense.parse(&CallSite {
            config: &m,
            node: &node,
            dtype: DType::Float64,
        })
    }

    #[test]
    fn an_einsum_sum_that_overflows_in_some_order_only_is_flagged() {
        // y[a, d] = Σ_c x[a, c] k[c, d], no bias.
        let s = spec(json!({"equation": "ac,cd->ad", "output_shape": [1]})).unwrap();
        let k = ArrayD::from_elem(vec![3, 1], 1.0);
        let flags = |x: [f64; 3]| {
            let x = ArrayD::from_shape_vec(vec![1, 3], x.to_vec()).unwrap();
            s.order_dependent_overflow(&[&x], &[&k])
                .map(|f| f[0].iter().copied().collect::<Vec<_>>())
        };
        assert_eq!(flags([1e308, 1e308, -1.5e308]), Some(vec![true]));
        assert_eq!(flags([1e308, -1e308, 0.5e308]), None);
        assert_eq!(flags([1.0, 2.0, 3.0]), None);
    }

    fn dims(d: &[Option<usize>]) -> Dims {
        d.to_vec()
    }

    fn shapes(s: &dyn Spec, x: &[usize]) -> Vec<Vec<usize>> {
        s.weights(&[x.to_vec()])
            .into_iter()
            .map(|w| w.shape)
            .collect()
    }

    #[test]
    fn keras_reads_three_forms_of_equation() {
        let eq = |s: &str| Equation::parse(s);
        assert_eq!(eq("ab,bc->ac").unwrap().ellipsis, Ellipsis::None);
        assert_eq!(eq("...ab,bc->...ac").unwrap().ellipsis, Ellipsis::Left);
        assert_eq!(eq("ab...,bc->ac...").unwrap().ellipsis, Ellipsis::Right);
        for bad in [
            "ab->ac",
            "ab, bc->ac",
            "ab,bc,cd->ad",
            "a...,ac->c...",
            "...,c->...c",
            "...ab,bc->ac",
        ] {
            assert!(matches!(eq(bad), Err(ParamError::Invalid(_))), "{bad}");
        }
        assert!(matches!(eq("0ab,bc->0ac"), Err(ParamError::Invalid(_))));
        assert!(matches!(
            eq("ab,bc->ac..."),
            Err(ParamError::Unsupported(_))
        ));
        assert!(matches!(eq("ab,bc->ac,d"), Err(ParamError::Unsupported(_))));
    }

    #[test]
    fn dense_as_an_einsum() {
        let s =
            spec(json!({"equation": "ab,bc->ac", "output_shape": 2, "bias_axes": "c"})).unwrap();
        assert_eq!(
            s.infer(&[dims(&[None, Some(3)])]).unwrap(),
            vec![dims(&[None, Some(2)])]
        );
        assert_eq!(shapes(&*s, &[1, 3]), vec![vec![3, 2], vec![2]]);
        let x = ArrayD::from_shape_vec(vec![1, 3], vec![1.0, 2.0, 3.0]).unwrap();
        let k = ArrayD::from_shape_vec(vec![3, 2], vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0]).unwrap();
        let b = ArrayD::from_shape_vec(vec![2], vec![0.5, -0.5]).unwrap();
        assert_eq!(s.eval(&[&x], &[&k, &b])[0].as_slice().unwrap(), &[4.5, 4.5]);
    }

    #[test]
    fn ellipses_and_bias_shapes() {
        // Right ellipsis: the bias gets a 1 per elided axis.
        let s = spec(json!({"equation": "ab...,bc->ac...", "output_shape": 4, "bias_axes": "c"}))
            .unwrap();
        assert_eq!(
            s.infer(&[dims(&[None, Some(3), Some(5)])]).unwrap(),
            vec![dims(&[None, Some(4), Some(5)])]
        );
        assert_eq!(shapes(&*s, &[2, 3, 5]), vec![vec![3, 4], vec![4, 1]]);
        // Left ellipsis, bias on an input label.
        let s =
            spec(json!({"equation": "...ab,bc->...ac", "output_shape": [5, 4], "bias_axes": "a"}))
                .unwrap();
        assert_eq!(shapes(&*s, &[2, 5, 3]), vec![vec![3, 4], vec![5, 1]]);
        // A summed input label and a transposed output.
        let s = spec(json!({"equation": "abc,cd->adb", "output_shape": [4, 5]})).unwrap();
        assert_eq!(
            s.infer(&[dims(&[Some(2), Some(5), Some(3)])]).unwrap(),
            vec![dims(&[Some(2), Some(4), Some(5)])]
        );
    }

    #[test]
    fn evaluates_diagonals_sums_and_transposes() {
        // y[a, d, b] = Σ_c x[a, b, c] k[c, d]
        let s = spec(json!({"equation": "abc,cd->adb", "output_shape": [2, 2]})).unwrap();
        let x = ArrayD::from_shape_vec(vec![1, 2, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        let k = ArrayD::from_shape_vec(vec![2, 2], vec![1.0, 10.0, 100.0, 1000.0]).unwrap();
        let y = s.eval(&[&x], &[&k]);
        assert_eq!(y[0].as_slice().unwrap(), &[201.0, 403.0, 2010.0, 4030.0]);
        // y[a, c] = Σ_b x[a, b, b] k[b, c]
        let s = spec(json!({"equation": "abb,bc->ac", "output_shape": 1})).unwrap();
        let k = ArrayD::from_shape_vec(vec![2, 1], vec![1.0, 10.0]).unwrap();
        assert_eq!(s.eval(&[&x], &[&k])[0].as_slice().unwrap(), &[41.0]);
        // Left ellipsis over two axes (of one size: Keras reverses them when it declares
        // the output shape).
        let s = spec(json!({"equation": "...b,bc->...c", "output_shape": 1})).unwrap();
        let x = ArrayD::from_shape_vec(vec![1, 2, 2, 2], (1..=8).map(f64::from).collect()).unwrap();
        let y = s.eval(&[&x], &[&k]);
        assert_eq!(y[0].shape(), &[1, 2, 2, 1]);
        assert_eq!(y[0].as_slice().unwrap(), &[21.0, 43.0, 65.0, 87.0]);
    }

    #[test]
    fn keras_refusals() {
        let enforced = |v: Value, x: &[Option<usize>]| match spec(v) {
            Err(ParamError::Invalid(v)) => v.tag == Tag::KerasEnforced,
            Ok(s) => s
                .infer(&[x.to_vec()])
                .is_err_and(|v| v.tag == Tag::KerasEnforced),
            Err(ParamError::Unsupported(_)) => false,
        };
        let x2 = [None, Some(3)];
        let x3 = [None, Some(5), Some(3)];
        assert!(enforced(
            json!({"equation": "abc,cd->abd", "output_shape": [6, 4]}),
            &x3
        ));
        assert!(enforced(
            json!({"equation": "abc,cd->abd", "output_shape": 4}),
            &x3
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->ad", "output_shape": 4}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "ab,bd->ab", "output_shape": 3}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->ac", "output_shape": 4, "bias_axes": "x"}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->ac", "output_shape": 4, "bias_axes": ""}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->ac", "output_shape": 4, "bias_axes": "a"}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "abc,cd->abd", "output_shape": [null, 4]}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->ac", "output_shape": 4}),
            &x3
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->ac", "output_shape": 4}),
            &[None, None]
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->ac", "output_shape": [null]}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "abb,bc->ac", "output_shape": 4}),
            &[None, Some(3), Some(2)]
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->acc", "output_shape": [4, 4]}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "ab,ab->ab", "output_shape": [3]}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->ac", "output_shape": -1}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->ac", "output_shape": 2.0}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "ab,bc->ac", "output_shape": null}),
            &x2
        ));
        assert!(enforced(json!({"equation": 5, "output_shape": 4}), &x2));
        assert!(enforced(
            json!({"equation": "...abc,cd->...abd", "output_shape": [null, 4]}),
            &x2
        ));
        assert!(enforced(
            json!({"equation": "...ab,bc->...ac", "output_shape": [null, 4]}),
            &x2
        ));
        assert!(!enforced(
            json!({"equation": "ab,bc->ac", "output_shape": [true]}),
            &x2
        ));
        assert!(!enforced(
            json!({"equation": "ab,b->a", "output_shape": []}),
            &x2
        ));
    }

    #[test]
    fn declared_shapes_keras_gets_wrong_are_semantic() {
        let semantic = |v: Value, x: &[Option<usize>]| {
            spec(v).unwrap().infer(&[x.to_vec()]).unwrap_err().tag == Tag::Semantic
        };
        assert!(semantic(
            json!({"equation": "abc,cd->abd", "output_shape": [5, 4, 7]}),
            &[None, Some(5), Some(3)]
        ));
        assert!(semantic(
            json!({"equation": "...b,bc->...c", "output_shape": 4}),
            &[None, Some(2), Some(3), Some(5)]
        ));
        // Reversing equal sizes changes nothing.
        let s = spec(json!({"equation": "...b,bc->...c", "output_shape": 4})).unwrap();
        assert!(s.infer(&[dims(&[None, Some(2), Some(2), Some(5)])]).is_ok());
    }

    #[test]
    fn unknown_declared_sizes_stay_unknown_on_symbolic_inputs() {
        let s =
            spec(json!({"equation": "abc,cd->abd", "output_shape": [null, 4], "bias_axes": "d"}))
                .unwrap();
        assert_eq!(
            s.infer(&[dims(&[None, Some(5), Some(3)])]).unwrap(),
            vec![dims(&[None, None, Some(4)])]
        );
        assert_eq!(
            s.infer(&[dims(&[Some(2), Some(5), Some(3)])]).unwrap(),
            vec![dims(&[Some(2), Some(5), Some(4)])]
        );
    }
}
