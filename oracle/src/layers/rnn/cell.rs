//! The three recurrent cells — `SimpleRNNCell`, `LSTMCell`, `GRUCell` — as every recurrent
//! layer runs them: their arguments, their weights, and one time step of evaluation, of the
//! interval transfer and of the rounding-error analysis.
//!
//! At inference Keras 3.15 runs each cell's fused form (`implementation=2`, which
//! `recurrent_dropout` would only change for training):
//! - SimpleRNN: `h' = act((x·K + b) + h·R)`;
//! - LSTM: `z = (x·K + h·R) + b`, split in four `(i, f, c̃, o)`; `i, f, o = rec_act(·)`,
//!   `c' = f·c + i·act(c̃)`, `h' = o·act(c')`; states `[h, c]`;
//! - GRU: `x·K + b_in` split in `(z, r, h̃)`; with `reset_after` (bias `(2, 3u)`: input and
//!   recurrent rows) `h·R + b_rec` is split too and `h̃ = act(x_h + r·(h·R_h + b_h))`;
//!   without it (bias `(3u,)`) `h̃ = act(x_h + (r·h)·R_h)`; then `h' = z·h + (1 − z)·h̃`.
//!
//! Activations apply to each `(batch, units)` gate separately (softmax runs over the units).

use ndarray::{Array1, Array2, ArrayD, ArrayView2, Ix1, Ix2, s};
use serde_json::Value;

use super::bounds::{Step, Tracked};
use crate::DType;
use crate::activations::Activation;
use crate::interval::Interval;
use crate::layers::normalization::{max_finite, saturate};
use crate::layers::{WeightDomain, WeightSpec};
use crate::params::{Config, ParamError, ParamResult};
use crate::violation::{Category, Tag, Violation, badness};

/// Which cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    Simple,
    Lstm,
    Gru,
}

/// A parsed cell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cell {
    pub flavor: Flavor,
    pub units: usize,
    pub activation: Activation,
    /// The gates' activation (LSTM, GRU).
    pub recurrent_activation: Activation,
    pub use_bias: bool,
    /// GRU only: the reset gate applies after the recurrent matrix product.
    pub reset_after: bool,
    /// The dtype the cell computes in, when it is not its layer's: a cell (or a layer inside
    /// a `Bidirectional`) given as a nested config has its own dtype policy.
    pub dtype: Option<DType>,
    /// The input features the cell was built for, from the `build_config` of its nested
    /// config: Keras builds it there when it deserializes it, whatever the input.
    pub built_for: Option<usize>,
}

/// Python's truth value of a config entry: Keras reads these flags with `if flag:`, so any
/// value is accepted and `None`, `0` and `""` are false.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A flag read the way Keras reads it (see [`truthy`]), `default` when absent.
pub(crate) fn flag(c: &Config, key: &str, default: bool) -> bool {
    c.raw(key).map_or(default, truthy)
}

fn illegal(key: &str, v: &Value, expected: &str) -> ParamError {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(key)
        .actual(v)
        .expected(expected)
        .detail("is not a legal value")
        .badness(badness::argument(1.0))
        .into()
}

/// `units`: a positive integer. Keras builds its weight shapes from it, so `2.0` fails there
/// ("Cannot convert '(3, 8.0)' to a shape") and zero or less in the constructor.
pub(crate) fn units(c: &Config) -> ParamResult<usize> {
    let Some(v) = c.raw("units") else {
        return Err(crate::violation::Unsupported::new("units", "missing from the config").into());
    };
    let Some(n) = v.as_i64() else {
        return Err(illegal("units", v, "a positive integer"));
    };
    if n <= 0 {
        return Err(
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter("units")
                .actual(n)
                .expected("a positive integer")
                .code("argument.not-positive")
                .detail("is not positive")
                .badness(badness::argument(1.0 - n as f64))
                .into(),
        );
    }
    usize::try_from(n).map_err(|_| illegal("units", v, "a positive integer"))
}

/// An activation argument with its default when absent (`None` is linear).
fn activation(c: &Config, key: &str, default: Activation) -> ParamResult<Activation> {
    match c.raw(key) {
        None => Ok(default),
        v => Activation::parse(key, v),
    }
}

/// `dropout`-like rates: Keras clips them into `[0, 1]` with `min`/`max`, which accepts any
/// number (and booleans) and raises a `TypeError` on anything else. They only act in training.
fn rate(c: &Config, key: &str) -> ParamResult<()> {
    match c.raw(key) {
        None | Some(Value::Number(_)) | Some(Value::Bool(_)) => Ok(()),
        Some(v) => Err(illegal(key, v, "a number")),
    }
}

impl Cell {
    /// Reads the cell arguments from a config: a cell's own (`LSTMCell`), or the config of the
    /// layer that builds its cell from them (`LSTM`). Marks the keys it reads.
    pub(crate) fn parse(flavor: Flavor, c: &Config) -> ParamResult<Cell> {
        let units = units(c)?;
        let activation = activation(c, "activation", Activation::Tanh)?;
        let recurrent_activation = match flavor {
            Flavor::Simple => Activation::Sigmoid, // unused
            _ => activation_of(c)?,
        };
        let use_bias = flag(c, "use_bias", true);
        rate(c, "dropout")?;
        rate(c, "recurrent_dropout")?;
        let reset_after = flavor == Flavor::Gru && flag(c, "reset_after", true);
        match flavor {
            // Training-time choices: the forget-gate bias initialiser, and the split or fused
            // kernels (popped from the keyword arguments, any value accepted).
            Flavor::Lstm => c.ignore(&["unit_forget_bias", "implementation"]),
            Flavor::Gru => c.ignore(&["implementation"]),
            Flavor::Simple => {}
        }
        Ok(Cell {
            flavor,
            units,
            activation,
            recurrent_activation,
            use_bias,
            reset_after,
            dtype: None,
            built_for: None,
        })
    }

    /// The sizes of the states, in the order of `initial_state` and of the returned states.
    pub(crate) fn state_sizes(&self) -> Vec<usize> {
        match self.flavor {
            Flavor::Lstm => vec![self.units, self.units],
            _ => vec![self.units],
        }
    }

    /// How many gate blocks the kernels hold.
    fn blocks(&self) -> usize {
        match self.flavor {
            Flavor::Simple => 1,
            Flavor::Lstm => 4,
            Flavor::Gru => 3,
        }
    }

    /// `kernel`, `recurrent_kernel` and `bias`, in `get_weights()` order.
    pub(crate) fn weights(&self, input_dim: usize) -> Vec<WeightSpec> {
        let n = self.blocks() * self.units;
        let mut w = vec![
            WeightSpec {
                name: "kernel",
                shape: vec![input_dim, n],
                domain: WeightDomain::Any,
            },
            WeightSpec {
                name: "recurrent_kernel",
                shape: vec![self.units, n],
                domain: WeightDomain::Any,
            },
        ];
        if self.use_bias {
            w.push(WeightSpec {
                name: "bias",
                shape: if self.reset_after {
                    vec![2, n]
                } else {
                    vec![n]
                },
                domain: WeightDomain::Any,
            });
        }
        w
    }

    pub(crate) fn weight_count(&self) -> usize {
        2 + usize::from(self.use_bias)
    }

    /// One step: the output and the new states, for a batch of inputs `x` and the states.
    /// Every operation overflows to infinity past `max`, the largest finite value of the
    /// dtype the cell computes in, as TF's kernels do.
    pub(crate) fn step(
        &self,
        x: ArrayView2<f64>,
        states: &[Array2<f64>],
        w: &[&ArrayD<f64>],
        max: f64,
    ) -> (Array2<f64>, Vec<Array2<f64>>) {
        let sat = |a: Array2<f64>| a.mapv(|v| saturate(v, max));
        let dot = |a: ArrayView2<f64>, b: ArrayView2<f64>| dot_in(a, b, max);
        let act = |f: Activation, a: Array2<f64>| sat(act(f, a));
        // Keras casts the inputs and the weights to the dtype the cell computes in: past
        // `max` they are infinite there (and an infinite input times a zero weight is NaN).
        let x = x.mapv(|v| saturate(v, max));
        let x = x.view();
        let cast: Vec<ArrayD<f64>>;
        let w: Vec<&ArrayD<f64>> = if w.iter().any(|a| a.iter().any(|v| v.abs() > max)) {
            cast = w.iter().map(|a| a.mapv(|v| saturate(v, max))).collect();
            cast.iter().collect()
        } else {
            w.to_vec()
        };
        let (k, r) = (mat(w[0]), mat(w[1]));
        let u = self.units;
        let h = &states[0];
        match self.flavor {
            Flavor::Simple => {
                let mut pre = dot(x, k);
                if self.use_bias {
                    pre = sat(pre + &vec1(w[2]));
                }
                let pre = sat(pre + dot(h.view(), r));
                let out = act(self.activation, pre);
                (out.clone(), vec![out])
            }
            Flavor::Lstm => {
                let mut z = sat(dot(x, k) + dot(h.view(), r));
                if self.use_bias {
                    z = sat(z + &vec1(w[2]));
                }
                let gate = |j: usize, f: Activation| {
                    act(f, z.slice(s![.., j * u..(j + 1) * u]).to_owned())
                };
                let i = gate(0, self.recurrent_activation);
                let f = gate(1, self.recurrent_activation);
                let g = gate(2, self.activation);
                let o = gate(3, self.recurrent_activation);
                let c = sat(sat(&f * &states[1]) + sat(&i * &g));
                let out = sat(&o * &act(self.activation, c.clone()));
                (out.clone(), vec![out, c])
            }
            Flavor::Gru => {
                let (b_in, b_rec): (Option<Array1<f64>>, Option<Array1<f64>>) =
                    match (self.use_bias, self.reset_after) {
                        (false, _) => (None, None),
                        (true, false) => (Some(vec1(w[2])), None),
                        (true, true) => {
                            let b = mat(w[2]);
                            (Some(b.row(0).to_owned()), Some(b.row(1).to_owned()))
                        }
                    };
                let mut mx = dot(x, k);
                if let Some(b) = &b_in {
                    mx = sat(mx + b);
                }
                let cols =
                    |a: &Array2<f64>, j: usize| a.slice(s![.., j * u..(j + 1) * u]).to_owned();
                let (xz, xr, xh) = (cols(&mx, 0), cols(&mx, 1), cols(&mx, 2));
                let (z, hh) = if self.reset_after {
                    let mut inner = dot(h.view(), r);
                    if let Some(b) = &b_rec {
                        inner = sat(inner + b);
                    }
                    let z = act(self.recurrent_activation, sat(xz + cols(&inner, 0)));
                    let rg = act(self.recurrent_activation, sat(xr + cols(&inner, 1)));
                    let rh = sat(rg * cols(&inner, 2));
                    (z, act(self.activation, sat(xh + rh)))
                } else {
                    let inner = dot(h.view(), r.slice(s![.., ..2 * u]));
                    let z = act(self.recurrent_activation, sat(xz + cols(&inner, 0)));
                    let rg = act(self.recurrent_activation, sat(xr + cols(&inner, 1)));
                    let rh = dot(sat(rg * h).view(), r.slice(s![.., 2 * u..]));
                    (z, act(self.activation, sat(xh + rh)))
                };
                let out = sat(sat(&z * h) + sat(sat(1.0 - &z) * &hh));
                (out.clone(), vec![out])
            }
        }
    }

    /// One step of the interval transfer: bounds of the output and of the new states when the
    /// input (of `input_dim` features), the states and each weight array lie in these bounds.
    pub(crate) fn step_interval(
        &self,
        x: Interval,
        states: &[Interval],
        w: &[Interval],
        input_dim: usize,
    ) -> (Interval, Vec<Interval>) {
        let u = self.units;
        let h = states[0];
        let (k, r) = (w[0], w[1]);
        let bias = self.use_bias.then(|| w[2]);
        let xk = (x * k).sum_of(input_dim);
        let add_bias = |iv: Interval| bias.map_or(iv, |b| iv + b);
        match self.flavor {
            Flavor::Simple => {
                let out = self.activation.interval(add_bias(xk) + (h * r).sum_of(u));
                (out, vec![out])
            }
            Flavor::Lstm => {
                let z = add_bias(xk + (h * r).sum_of(u));
                let gate = self.recurrent_activation.interval(z);
                let g = self.activation.interval(z);
                let c = gate * states[1] + gate * g;
                let out = gate * self.activation.interval(c);
                (out, vec![out, c])
            }
            Flavor::Gru => {
                let mx = add_bias(xk);
                let hr = (h * r).sum_of(u);
                let inner = if self.reset_after { add_bias(hr) } else { hr };
                // The update and reset gates share these bounds.
                let gate = self.recurrent_activation.interval(mx + inner);
                let hh = if self.reset_after {
                    self.activation.interval(mx + gate * inner)
                } else {
                    self.activation.interval(mx + (gate * h * r).sum_of(u))
                };
                let out = gate * h + (Interval::point(1.0) + -gate) * hh;
                (out, vec![out])
            }
        }
    }

    /// One step of the rounding-error analysis (see [`Tracked`]): the output and the new
    /// states, with their errors.
    pub(crate) fn step_tracked(
        &self,
        x: &Tracked,
        states: &[Tracked],
        w: &[&ArrayD<f64>],
        st: &Step,
    ) -> (Tracked, Vec<Tracked>) {
        let (k, r) = (mat(w[0]), mat(w[1]));
        let u = self.units;
        let h = &states[0];
        match self.flavor {
            Flavor::Simple => {
                let mut pre = x.dot(k.view(), st);
                if self.use_bias {
                    pre = pre.add_row(vec1(w[2]).view(), st);
                }
                let out = pre
                    .add(&h.dot(r.view(), st), st)
                    .activate(self.activation, st);
                (out.clone(), vec![out])
            }
            Flavor::Lstm => {
                let mut z = x.dot(k.view(), st).add(&h.dot(r.view(), st), st);
                if self.use_bias {
                    z = z.add_row(vec1(w[2]).view(), st);
                }
                let gate = |j: usize, f: Activation| z.cols(j * u, (j + 1) * u).activate(f, st);
                let i = gate(0, self.recurrent_activation);
                let f = gate(1, self.recurrent_activation);
                let g = gate(2, self.activation);
                let o = gate(3, self.recurrent_activation);
                let c = f.mul(&states[1], st).add(&i.mul(&g, st), st);
                let out = o.mul(&c.activate(self.activation, st), st);
                (out.clone(), vec![out, c])
            }
            Flavor::Gru => {
                let (b_in, b_rec) = match (self.use_bias, self.reset_after) {
                    (false, _) => (None, None),
                    (true, false) => (Some(vec1(w[2])), None),
                    (true, true) => {
                        let b = mat(w[2]);
                        (Some(b.row(0).to_owned()), Some(b.row(1).to_owned()))
                    }
                };
                let mut mx = x.dot(k.view(), st);
                if let Some(b) = &b_in {
                    mx = mx.add_row(b.view(), st);
                }
                let (xz, xr, xh) = (mx.cols(0, u), mx.cols(u, 2 * u), mx.cols(2 * u, 3 * u));
                let (z, hh) = if self.reset_after {
                    let mut inner = h.dot(r.view(), st);
                    if let Some(b) = &b_rec {
                        inner = inner.add_row(b.view(), st);
                    }
                    let z = xz
                        .add(&inner.cols(0, u), st)
                        .activate(self.recurrent_activation, st);
                    let rg = xr
                        .add(&inner.cols(u, 2 * u), st)
                        .activate(self.recurrent_activation, st);
                    let rh = rg.mul(&inner.cols(2 * u, 3 * u), st);
                    (z, xh.add(&rh, st).activate(self.activation, st))
                } else {
                    let inner = h.dot(r.slice(s![.., ..2 * u]), st);
                    let z = xz
                        .add(&inner.cols(0, u), st)
                        .activate(self.recurrent_activation, st);
                    let rg = xr
                        .add(&inner.cols(u, 2 * u), st)
                        .activate(self.recurrent_activation, st);
                    let rh = rg.mul(h, st).dot(r.slice(s![.., 2 * u..]), st);
                    (z, xh.add(&rh, st).activate(self.activation, st))
                };
                let out = z.mul(h, st).add(&z.one_minus(st).mul(&hh, st), st);
                (out.clone(), vec![out])
            }
        }
    }
}

/// The compute dtype of a nested object's dtype policy (`"float32"`, `{"class_name":
/// "DTypePolicy", "config": {"name": "mixed_float16"}}`, ...). Without one, Keras gives it the
/// global policy when it deserializes it: float32 where semfuzz builds models (it sets the
/// dtype of the model's layers, not of the objects nested in their configs).
pub(crate) fn nested_dtype(key: &str, v: Option<&Value>) -> ParamResult<DType> {
    let name = match v {
        None | Some(Value::Null) => return Ok(DType::Float32),
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Object(o)) => o
            .get("config")
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str)
            .unwrap_or(""),
        Some(_) => "",
    };
    let name = name.strip_prefix("mixed_").unwrap_or(name);
    match name.parse::<DType>() {
        Ok(d) if d.is_float() => Ok(d),
        _ => Err(crate::violation::Unsupported::new(
            format!("{key}.dtype"),
            format!(
                "the dtype policy {}",
                v.map_or("?".into(), Value::to_string)
            ),
        )
        .into()),
    }
}

/// The input features a nested object was built for, from its `build_config`
/// (`{"input_shape": [...]}` or `{"shapes_dict": {"sequences_shape": [...], ...}}`).
pub(crate) fn built_for(
    key: &str,
    entry: &serde_json::Map<String, Value>,
) -> ParamResult<Option<usize>> {
    let Some(b) = entry.get("build_config").filter(|b| !b.is_null()) else {
        return Ok(None);
    };
    let shape = b
        .get("input_shape")
        .or_else(|| b.get("shapes_dict").and_then(|d| d.get("sequences_shape")));
    match shape.and_then(Value::as_array).and_then(|s| s.last()) {
        Some(Value::Null) => Ok(None),
        Some(d) if d.as_u64().is_some() => Ok(d.as_u64().map(|n| n as usize)),
        _ => Err(crate::violation::Unsupported::new(
            format!("{key}.build_config"),
            format!("an unknown build_config {b}"),
        )
        .into()),
    }
}

/// The largest finite value of the dtype a cell computes in (its own, or its layer's).
pub(crate) fn max_of(cell: &Cell, layer: DType) -> f64 {
    max_finite(cell.dtype.unwrap_or(layer))
}

/// `recurrent_activation`, sigmoid by default.
fn activation_of(c: &Config) -> ParamResult<Activation> {
    activation(c, "recurrent_activation", Activation::Sigmoid)
}

/// `a · b` as TF's CPU kernels compute it in a dtype whose largest finite value is `max`:
/// each element accumulates its terms `a[i,k]·b[k,j]` in order of `k`, each added to the
/// running sum with one rounding (a fused multiply-add), so a running sum that overflows
/// stays infinite — later terms of the other sign cannot bring it back, as they would in the
/// exact sum — and an infinite term against an infinite sum of the other sign makes NaN.
/// Measured on float32 `SimpleRNN` steps whose states overflow: the order and the stickiness
/// reproduce every infinity and NaN TF gives, where the exact sum rounded once does not.
/// When no running sum can reach `max` (every term is at most `max / k`), the plain product
/// is exact enough and is taken instead.
fn dot_in(a: ArrayView2<f64>, b: ArrayView2<f64>, max: f64) -> Array2<f64> {
    let largest = |m: &ArrayView2<f64>| m.iter().fold(0.0_f64, |acc, v| acc.max(v.abs()));
    let terms = a.ncols().max(1) as f64;
    if largest(&a) * largest(&b) * terms <= max {
        return a.dot(&b).mapv(|v| saturate(v, max));
    }
    let mut out = Array2::zeros((a.nrows(), b.ncols()));
    for ((i, j), o) in out.indexed_iter_mut() {
        *o = a
            .row(i)
            .iter()
            .zip(b.column(j))
            .fold(0.0, |acc, (x, y)| saturate(acc + x * y, max));
    }
    out
}

fn mat(a: &ArrayD<f64>) -> ArrayView2<'_, f64> {
    a.view().into_dimensionality::<Ix2>().expect("a 2-D weight")
}

fn vec1(a: &ArrayD<f64>) -> Array1<f64> {
    a.view()
        .into_dimensionality::<Ix1>()
        .expect("a 1-D weight")
        .to_owned()
}

/// An activation on a `(batch, units)` block (softmax over the units).
pub(crate) fn act(f: Activation, a: Array2<f64>) -> Array2<f64> {
    f.apply(&a.into_dyn())
        .into_dimensionality::<Ix2>()
        .expect("2-D stays 2-D")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn cell(flavor: Flavor, units: usize, reset_after: bool) -> Cell {
        Cell {
            flavor,
            units,
            activation: Activation::Tanh,
            recurrent_activation: Activation::Sigmoid,
            use_bias: true,
            reset_after,
            dtype: None,
            built_for: None,
        }
    }

    fn sig(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    /// One LSTM step by hand, with one unit and one feature: gates i, f, c̃, o.
    #[test]
    fn lstm_step_by_hand() {
        let c = cell(Flavor::Lstm, 1, false);
        let k = array![[0.1, 0.2, 0.3, 0.4]].into_dyn();
        let r = array![[0.5, -0.5, 0.25, -0.25]].into_dyn();
        let b = array![0.0, 1.0, -1.0, 0.5].into_dyn();
        let x = array![[2.0]];
        let (h0, c0) = (array![[0.3]], array![[-0.7]]);
        let (out, st) = c.step(x.view(), &[h0, c0], &[&k, &r, &b], f64::MAX);
        let zi = 0.2 + 0.15;
        let zf = 0.4 - 0.15 + 1.0;
        let zc: f64 = 0.6 + 0.075 - 1.0;
        let zo = 0.8 - 0.075 + 0.5;
        let cn = sig(zf) * -0.7 + sig(zi) * zc.tanh();
        let hn = sig(zo) * cn.tanh();
        assert!((st[1][[0, 0]] - cn).abs() < 1e-15);
        assert!((out[[0, 0]] - hn).abs() < 1e-15);
        assert_eq!(out, st[0]);
    }

    /// One GRU step by hand, both placements of the reset gate.
    #[test]
    fn gru_step_by_hand() {
        let k = array![[0.1, 0.2, 0.3]].into_dyn();
        let r = array![[0.5, -0.5, 0.25]].into_dyn();
        let x = array![[2.0]];
        let h = 0.3;
        let after = cell(Flavor::Gru, 1, true);
        let b2 = array![[0.1, 0.2, 0.3], [-0.1, -0.2, -0.3]].into_dyn();
        let (out, _) = after.step(x.view(), &[array![[h]]], &[&k, &r, &b2], f64::MAX);
        let z = sig(0.2 + 0.1 + 0.15 - 0.1);
        let rg = sig(0.4 + 0.2 - 0.15 - 0.2);
        let hh = (0.6f64 + 0.3 + rg * (0.075 - 0.3)).tanh();
        assert!((out[[0, 0]] - (z * h + (1.0 - z) * hh)).abs() < 1e-15);

        let before = cell(Flavor::Gru, 1, false);
        let b1 = array![0.1, 0.2, 0.3].into_dyn();
        let (out, _) = before.step(x.view(), &[array![[h]]], &[&k, &r, &b1], f64::MAX);
        let z = sig(0.2 + 0.1 + 0.15);
        let rg = sig(0.4 + 0.2 - 0.15);
        let hh = (0.6f64 + 0.3 + rg * h * 0.25).tanh();
        assert!((out[[0, 0]] - (z * h + (1.0 - z) * hh)).abs() < 1e-15);
    }

    #[test]
    fn weights_follow_keras_shapes() {
        let shapes = |c: &Cell| {
            c.weights(5)
                .into_iter()
                .map(|w| w.shape)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            shapes(&cell(Flavor::Lstm, 3, false)),
            vec![vec![5, 12], vec![3, 12], vec![12]]
        );
        assert_eq!(
            shapes(&cell(Flavor::Gru, 3, true)),
            vec![vec![5, 9], vec![3, 9], vec![2, 9]]
        );
        assert_eq!(
            shapes(&cell(Flavor::Gru, 3, false)),
            vec![vec![5, 9], vec![3, 9], vec![9]]
        );
        let mut s = cell(Flavor::Simple, 3, false);
        s.use_bias = false;
        assert_eq!(shapes(&s), vec![vec![5, 3], vec![3, 3]]);
    }

    #[test]
    fn flags_follow_python_truth() {
        use serde_json::json;
        assert!(!truthy(&json!(null)) && !truthy(&json!(0)) && !truthy(&json!("")));
        assert!(truthy(&json!("x")) && truthy(&json!(1)) && truthy(&json!(0.5)));
    }

    #[test]
    fn a_running_sum_that_overflows_stays_infinite() {
        use ndarray::array;
        let f32_max = f32::MAX as f64;
        let a = array![[3e38, -3e38], [1.0, 2.0]];
        let b = array![[2.0], [2.0]];
        // float32: 6e38 overflows, and -6e38 added to infinity leaves it infinite.
        let d = dot_in(a.view(), b.view(), f32_max);
        assert_eq!(d[[0, 0]], f64::INFINITY);
        assert_eq!(d[[1, 0]], 6.0);
        // float64 holds 6e38: the terms cancel.
        assert_eq!(dot_in(a.view(), b.view(), f64::MAX)[[0, 0]], 0.0);
        // An infinite term against an infinite running sum of the other sign is NaN.
        let c = array![[3e38, f64::NEG_INFINITY]];
        assert!(dot_in(c.view(), b.view(), f32_max)[[0, 0]].is_nan());
        // Small terms take the plain product.
        let small = array![[0.5, 0.25]];
        assert_eq!(dot_in(small.view(), b.view(), f32_max)[[0, 0]], 1.5);
    }
}
