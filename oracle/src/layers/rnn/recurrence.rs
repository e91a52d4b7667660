//! The recurrence all recurrent layers share: Keras's `RNN` layer running its cell (or a stack
//! of cells) over the time axis with TF's `backend.rnn`, and the [`Spec`] of a call of one
//! recurrent layer (`LSTM`, `GRU`, `SimpleRNN`, `RNN`).
//!
//! Semantics (Keras 3.15 on TF, `training=False`, checked against Keras on every path):
//! - the input is `(batch, time, features)`; `go_backwards` walks the time steps from the
//!   last, and the returned sequence stays in the order the steps were taken (reversed);
//! - the states start at zero, or at the tensors of `initial_state` (a keyword argument, or
//!   the second positional one): `LSTM` takes `[h, c]`, `SimpleRNN` one tensor, `GRU` one or
//!   more of which it uses the first only; a stack of cells takes one entry per cell;
//! - a mask `(batch, time)` skips the masked steps of each sample: its states carry over, and
//!   the output at that step is the previous step's output (zeros before the first one), or
//!   zeros with `zero_output_for_mask`; the last output is the output of the last step taken,
//!   masked or not;
//! - `unroll` gives the same values (a Python loop instead of a `while_loop`), dropouts are
//!   the identity, `stateful` is not modelled;
//! - outputs: the sequence `(batch, time, units)` or the last output `(batch, units)`, then
//!   with `return_state` the final states (flattened, cell by cell);
//! - `compute_mask` keeps the input mask (not reversed for `go_backwards`) on the sequence
//!   output only; the last output and the states are unmasked.
//!
//! The tolerance bounds the rounding errors step by step along the run's own steps and mask
//! (`tolerance_masked`, [`Recurrence::error_bound`], [`Tracked`]): how far they grow depends
//! on the weights, the activations' slopes where the run goes, and the number of steps.

use ndarray::{Array2, Array3, ArrayD, Axis, Ix2, Ix3, s};
use serde_json::{Value, json};

/// Steps of a recurrence's interval analysis taken exactly; bounds that still grow after
/// them are widened to anything.
const EXACT_STEPS: usize = 1 << 20;

/// Steps taken after the widening, for the cell's activations to bound the states again.
const WIDENED_STEPS: usize = 64;

use super::bounds::{Step, Tracked, nan_max};
use super::cell::{Cell, flag, max_of};
use crate::DType;
use crate::case::{Arg, Dims, Node};
use crate::interval::Interval;
use crate::layers::normalization::{max_finite, saturate};
use crate::layers::util::{arity, input_shape_config, show};
use crate::layers::{CallSite, Mask, Spec, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// A parsed recurrent layer (without its call's initial states).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recurrence {
    /// One cell, or the cells of a `StackedRNNCells`, first to last.
    pub cells: Vec<Cell>,
    /// The cells come from a `StackedRNNCells` (its states are nested per cell).
    pub stacked: bool,
    pub return_sequences: bool,
    pub return_state: bool,
    pub go_backwards: bool,
    pub zero_output_for_mask: bool,
    /// `GRU` passes only the first initial state tensor on to its cell.
    pub first_state_only: bool,
    /// The layer declares `InputSpec(ndim=3)` (`LSTM`, `GRU`, `SimpleRNN`); `RNN` does not
    /// check the rank beyond TF's own "at least 3".
    pub strict_rank: bool,
    /// The layer's compute dtype: its outputs are cast to it, and its cells compute in it
    /// unless they have their own.
    pub dtype: DType,
}

/// The arguments of Keras's `RNN` base class, which every recurrent layer takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Flags {
    pub return_sequences: bool,
    pub return_state: bool,
    pub go_backwards: bool,
    pub zero_output_for_mask: bool,
}

impl Flags {
    pub(crate) fn parse(c: &Config) -> ParamResult<Flags> {
        if flag(c, "stateful", false) {
            return Err(
                Unsupported::new("stateful", "states kept from one batch to the next").into(),
            );
        }
        // Same values either way: a Python loop over the steps instead of a `while_loop`.
        c.ignore(&["unroll"]);
        Ok(Flags {
            return_sequences: flag(c, "return_sequences", false),
            return_state: flag(c, "return_state", false),
            go_backwards: flag(c, "go_backwards", false),
            zero_output_for_mask: flag(c, "zero_output_for_mask", false),
        })
    }
}

/// `use_cudnn` of `LSTM` and `GRU` (not in their saved config, but accepted in it): `"auto"`
/// and `False` compute the same values on TF's CPU; `True` raises there and runs cuDNN's
/// kernel (other masking semantics) on a GPU.
pub(crate) fn use_cudnn(c: &Config) -> ParamResult<()> {
    match c.raw("use_cudnn") {
        None | Some(Value::Bool(false)) => Ok(()),
        Some(Value::String(s)) if s == "auto" => Ok(()),
        Some(Value::Bool(true)) => Err(Unsupported::new(
            "use_cudnn",
            "True: an error on TF's CPU, cuDNN's kernel on a GPU",
        )
        .into()),
        Some(v) => Err(
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter("use_cudnn")
                .actual(v)
                .expected("one of \"auto\", true, false")
                .detail("is not a legal value")
                .into(),
        ),
    }
}

/// The shape of a call's `initial_state` argument: absent, one tensor, or a (nested) list.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StateForm {
    Absent,
    Tensor,
    List(Vec<StateForm>),
}

impl StateForm {
    /// The number of tensors.
    pub(crate) fn count(&self) -> usize {
        match self {
            StateForm::Absent => 0,
            StateForm::Tensor => 1,
            StateForm::List(v) => v.iter().map(StateForm::count).sum(),
        }
    }

    fn of(a: &Arg, top: bool) -> ParamResult<StateForm> {
        match a {
            Arg::Tensor { .. } => Ok(StateForm::Tensor),
            Arg::List(v) => v
                .iter()
                .map(|x| StateForm::of(x, false))
                .collect::<ParamResult<_>>()
                .map(StateForm::List),
            Arg::Literal(Value::Null) if top => Ok(StateForm::Absent),
            _ => Err(Unsupported::new("initial_state", "a state that is not a tensor").into()),
        }
    }

    /// The `initial_state` of a call: the keyword argument, or the second positional one.
    pub(crate) fn of_call(node: &Node) -> ParamResult<StateForm> {
        if node.args.iter().skip(2).any(|a| !a.tensors().is_empty()) {
            return Err(Unsupported::new("mask", "a mask given as a positional tensor").into());
        }
        let keyword = node
            .kwargs
            .iter()
            .find(|(k, _)| k == "initial_state")
            .map(|(_, a)| a);
        match (node.args.get(1), keyword) {
            (Some(_), Some(_)) => Err(Unsupported::new(
                "initial_state",
                "given both positionally and by keyword",
            )
            .into()),
            (Some(a), None) | (None, Some(a)) => StateForm::of(a, true),
            (None, None) => Ok(StateForm::Absent),
        }
    }

    /// The number of tensors of a single cell's states: one tensor or a flat list.
    fn flat_count(&self) -> ParamResult<usize> {
        match self {
            StateForm::Tensor => Ok(1),
            StateForm::List(v) if v.iter().all(|f| *f == StateForm::Tensor) => Ok(v.len()),
            _ => Err(Unsupported::new("initial_state", "nested lists for a single cell").into()),
        }
    }

    /// Requires `need` state tensors of a single cell (absent: the cell's zeros).
    pub(crate) fn check_count(&self, need: usize) -> ParamResult<()> {
        if *self == StateForm::Absent {
            return Ok(());
        }
        let given = self.flat_count()?;
        if given != need {
            return Err(structure(
                "is the wrong number of initial states".into(),
                format!("{need} state tensor(s)"),
                given,
            )
            .into());
        }
        Ok(())
    }

    /// The same structure with each tensor replaced by its shape (a `build_config` entry).
    fn shapes(&self, shapes: &mut dyn Iterator<Item = &Dims>) -> Value {
        match self {
            StateForm::Absent => Value::Null,
            StateForm::Tensor => shapes.next().map_or(Value::Null, |d| json!(d)),
            StateForm::List(v) => Value::Array(v.iter().map(|f| f.shapes(shapes)).collect()),
        }
    }

    /// `Bidirectional` gives the first half of the list to the forward layer, the rest to the
    /// backward one.
    pub(crate) fn halves(&self) -> ParamResult<(StateForm, StateForm)> {
        match self {
            StateForm::Absent => Ok((StateForm::Absent, StateForm::Absent)),
            StateForm::List(v) => {
                let (a, b) = v.split_at(v.len() / 2);
                Ok((StateForm::List(a.to_vec()), StateForm::List(b.to_vec())))
            }
            StateForm::Tensor => Err(Unsupported::new(
                "initial_state",
                "one tensor for two directions (Keras splits it along the batch)",
            )
            .into()),
        }
    }

    /// The `build_config` Keras writes for a recurrent layer called on these inputs.
    pub(crate) fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        if *self == StateForm::Absent {
            return input_shape_config(&inputs[..1.min(inputs.len())]);
        }
        let mut rest = inputs.iter().skip(1);
        Some(json!({"shapes_dict": {
            "sequences_shape": inputs.first(),
            "initial_state_shape": self.shapes(&mut rest),
        }}))
    }
}

fn structure(detail: String, expected: String, actual: usize) -> Violation {
    Violation::new(Category::Structure, Tag::KerasEnforced)
        .parameter("initial_state")
        .expected(expected)
        .actual(format!("{actual} tensor(s)"))
        .detail(detail)
        .badness(badness::STRUCTURE + 1.0)
}

/// The dtype of the two with the larger unit roundoff.
pub(crate) fn coarser(a: DType, b: DType) -> DType {
    if Tolerance::eps(b) > Tolerance::eps(a) {
        b
    } else {
        a
    }
}

/// What a recurrent layer's tolerance needs of one run: its largest error bounds and
/// magnitudes (see [`Tracked`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ErrorBound {
    pub output_err: f64,
    pub output_mag: f64,
    pub state_err: f64,
    /// Per batch row, the first step (in the order taken) after which an output or state of
    /// that row may lie on either side of the dtype's largest value: its error bound reaches
    /// past it from below or from above, or is unknown. Whether TF overflows there is
    /// rounding's choice, and the recurrence carries an overflow (or its NaN) to every later
    /// step of the row.
    pub overflow_undetermined_from: Vec<Option<usize>>,
}

/// Whether a value known within `±err` may lie on either side of `max` in magnitude.
fn may_overflow_or_not(value: f64, err: f64, max: f64) -> bool {
    if !err.is_finite() {
        return true;
    }
    let v = value.abs();
    v - err <= max && max < v + err
}

/// The tolerance for outputs within `err` of the exact values on each side: TF and the
/// reference each round, so twice that, and twice again for headroom, as
/// [`Tolerance::reduction`] does. An unknown bound (NaN: non-finite data) checks nothing but
/// where NaN and infinities appear.
pub(crate) fn tolerance_of(err: f64, dtype: DType) -> Tolerance {
    let e = Tolerance::elementwise(dtype);
    let abs = if err.is_nan() {
        f64::INFINITY
    } else {
        (4.0 * err).max(e.abs)
    };
    Tolerance {
        abs,
        rel: e.rel,
        flush: 0.0,
    }
}

impl Recurrence {
    /// A layer of one cell.
    pub(crate) fn single(cell: Cell, f: Flags, first_state_only: bool, strict_rank: bool) -> Self {
        Recurrence {
            cells: vec![cell],
            stacked: false,
            return_sequences: f.return_sequences,
            return_state: f.return_state,
            go_backwards: f.go_backwards,
            zero_output_for_mask: f.zero_output_for_mask,
            first_state_only,
            strict_rank,
            dtype: DType::Float64,
        }
    }

    /// The dtype whose roundings dominate: the coarsest the layer or a cell computes in.
    pub(crate) fn coarsest(&self, run: DType) -> DType {
        self.cells
            .iter()
            .filter_map(|c| c.dtype)
            .chain([self.dtype, run])
            .fold(run, coarser)
    }

    /// The sizes of all states, cell by cell.
    pub(crate) fn state_sizes(&self) -> Vec<usize> {
        self.cells.iter().flat_map(Cell::state_sizes).collect()
    }

    pub(crate) fn output_size(&self) -> usize {
        self.cells.last().map_or(0, |c| c.units)
    }

    /// How many outputs a call has.
    pub(crate) fn output_count(&self) -> usize {
        1 + if self.return_state {
            self.state_sizes().len()
        } else {
            0
        }
    }

    /// How many of the given state tensors the cells use.
    fn used(&self, given: usize) -> usize {
        if self.first_state_only {
            given.min(1)
        } else {
            given
        }
    }

    /// Checks the structure of `initial_state` against the cells.
    pub(crate) fn check_form(&self, form: &StateForm) -> ParamResult<()> {
        if *form == StateForm::Absent {
            return Ok(());
        }
        if self.stacked {
            let fits = match form {
                StateForm::List(v) => {
                    v.len() == self.cells.len()
                        && v.iter().zip(&self.cells).all(|(f, c)| match f {
                            StateForm::Tensor => c.state_sizes().len() == 1,
                            StateForm::List(s) => {
                                s.len() == c.state_sizes().len()
                                    && s.iter().all(|x| *x == StateForm::Tensor)
                            }
                            StateForm::Absent => false,
                        })
                }
                _ => false,
            };
            if fits {
                return Ok(());
            }
            return Err(Unsupported::new(
                "initial_state",
                "a structure that does not match the stacked cells",
            )
            .into());
        }
        let need = self.state_sizes().len();
        if self.first_state_only {
            if form.flat_count()? == 0 {
                return Err(structure(
                    "is empty (Keras indexes its first state)".into(),
                    "at least one state tensor".into(),
                    0,
                )
                .into());
            }
            return Ok(());
        }
        form.check_count(need)
    }

    /// Output shapes for a sequence of this shape and these initial states, or the first
    /// violated precondition.
    pub(crate) fn infer(&self, seq: &Dims, states: &[Dims]) -> Result<Vec<Dims>, Violation> {
        let r = seq.len();
        if r != 3 {
            let tag = if r > 3 && !self.strict_rank {
                // TF only asks for rank >= 3; the cell then multiplies a 3-D step input and
                // 2-D states: an error or a broadcast, never a meaningful recurrence.
                Tag::Semantic
            } else {
                Tag::KerasEnforced
            };
            return Err(Violation::new(Category::Rank, tag)
                .parameter("input[0]")
                .expected("rank 3 (batch, time, features)")
                .actual(format!("rank {r}"))
                .detail("has the wrong rank")
                .badness(badness::rank(r.abs_diff(3))));
        }
        if seq[2].is_none() {
            return Err(
                Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter("input[0]")
                    .actual(show(seq))
                    .detail("has an unknown feature size (Keras cannot create the kernel)"),
            );
        }
        if seq[1] == Some(0) {
            return Err(Violation::new(Category::EmptyOutput, Tag::KerasEnforced)
                .parameter("input[0]")
                .actual(show(seq))
                .detail("has no time steps (TF reads the first one)")
                .badness(badness::argument(1.0)));
        }
        let mut features = seq[2];
        for (k, cell) in self.cells.iter().enumerate() {
            if let (Some(b), Some(d)) = (cell.built_for, features)
                && b != d
            {
                return Err(
                    Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                        .parameter(if k == 0 {
                            "input[0]".into()
                        } else {
                            format!("cells[{k}]")
                        })
                        .expected(format!("{b} features, as the nested build_config built it"))
                        .actual(format!("{d} features"))
                        .detail("does not fit the kernel Keras builds from the nested config")
                        .badness(badness::shape(b.abs_diff(d) as f64)),
                );
            }
            features = Some(cell.units);
        }
        let batch = seq[0];
        for (k, (s, size)) in states
            .iter()
            .take(self.used(states.len()))
            .zip(self.state_sizes())
            .enumerate()
        {
            check_state(k, s, batch, size)?;
        }
        let out = Some(self.output_size());
        let mut shapes = vec![if self.return_sequences {
            vec![batch, seq[1], out]
        } else {
            vec![batch, out]
        }];
        if self.return_state {
            shapes.extend(self.state_sizes().into_iter().map(|n| vec![batch, Some(n)]));
        }
        Ok(shapes)
    }

    pub(crate) fn weights(&self, input_dim: usize) -> Vec<WeightSpec> {
        let mut d = input_dim;
        let mut w = Vec::new();
        for c in &self.cells {
            w.extend(c.weights(d));
            d = c.units;
        }
        w
    }

    /// The weights of each cell.
    fn per_cell<'a, T>(&self, w: &'a [T]) -> Option<Vec<&'a [T]>> {
        let mut out = Vec::new();
        let mut at = 0;
        for c in &self.cells {
            let n = c.weight_count();
            out.push(w.get(at..at + n)?);
            at += n;
        }
        Some(out)
    }

    /// One step of the whole stack: the last cell's output, and every new state.
    fn step(
        &self,
        x: ndarray::ArrayView2<f64>,
        states: &[Array2<f64>],
        w: &[&[&ArrayD<f64>]],
    ) -> (Array2<f64>, Vec<Array2<f64>>) {
        let mut input = x.to_owned();
        let mut new = Vec::with_capacity(states.len());
        let mut at = 0;
        for (cell, cw) in self.cells.iter().zip(w) {
            let n = cell.state_sizes().len();
            let max = max_of(cell, self.dtype);
            let (out, st) = cell.step(input.view(), &states[at..at + n], cw, max);
            new.extend(st);
            input = out;
            at += n;
        }
        (input, new)
    }

    /// The time step taken at position `p` of `t`.
    fn time_of(&self, p: usize, t: usize) -> usize {
        if self.go_backwards { t - 1 - p } else { p }
    }

    /// Evaluates a call: `x` is `(batch, time, features)`, `given` the initial state tensors,
    /// `mask` the input's mask (ignored unless it is `(batch, time)`).
    pub(crate) fn run(
        &self,
        x: &ArrayD<f64>,
        given: &[&ArrayD<f64>],
        mask: Option<&Mask>,
        w: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let x = x.view().into_dimensionality::<Ix3>().expect("rank 3");
        let (b, t) = (x.shape()[0], x.shape()[1]);
        let given = &given[..self.used(given.len())];
        let mut states: Vec<Array2<f64>> = self
            .state_sizes()
            .iter()
            .enumerate()
            .map(|(k, &n)| match given.get(k) {
                Some(a) => a
                    .view()
                    .into_dimensionality::<Ix2>()
                    .expect("a 2-D state")
                    .to_owned(),
                None => Array2::zeros((b, n)),
            })
            .collect();
        let w = self.per_cell(w).expect("weights as declared");
        let mask = mask.filter(|m| m.shape() == [b, t]);
        let mut emitted = Array2::zeros((b, self.output_size()));
        let mut sequence = self
            .return_sequences
            .then(|| Array3::zeros((b, t, self.output_size())));
        for p in 0..t {
            let ti = self.time_of(p, t);
            let (out, new) = self.step(x.index_axis(Axis(1), ti), &states, &w);
            match mask {
                None => {
                    states = new;
                    emitted = out;
                }
                Some(m) => {
                    for row in 0..b {
                        if m[[row, ti]] {
                            for (s, n) in states.iter_mut().zip(&new) {
                                s.row_mut(row).assign(&n.row(row));
                            }
                            emitted.row_mut(row).assign(&out.row(row));
                        } else if self.zero_output_for_mask {
                            emitted.row_mut(row).fill(0.0);
                        }
                    }
                }
            }
            if let Some(s) = &mut sequence {
                s.index_axis_mut(Axis(1), p).assign(&emitted);
            }
        }
        let mut outs = vec![match sequence {
            Some(s) => s.into_dyn(),
            None => emitted.into_dyn(),
        }];
        if self.return_state {
            outs.extend(states.into_iter().map(Array2::into_dyn));
        }
        // Cast to the layer's dtype.
        let max = max_finite(self.dtype);
        outs.into_iter()
            .map(|o| o.mapv(|v| saturate(v, max)))
            .collect()
    }

    /// The output masks (see the module documentation).
    pub(crate) fn output_masks(&self, mask: Option<&Mask>) -> Vec<Option<Mask>> {
        let mut m = vec![if self.return_sequences {
            mask.cloned()
        } else {
            None
        }];
        m.resize(self.output_count(), None);
        m
    }

    /// Bounds of the outputs when the sequence, the given states and the weights lie in
    /// these bounds. Masked steps keep states and may emit zeros, so the bounds are unions
    /// over the steps (and include the initial states and zero). At most
    /// [`EXACT_STEPS`] + [`WIDENED_STEPS`] steps are taken (see there).
    pub(crate) fn intervals(
        &self,
        seq: &Dims,
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let top = vec![Interval::TOP; self.output_count()];
        let (Some(Some(t)), Some(Some(d)), Some(&x)) = (seq.get(1), seq.get(2), inputs.first())
        else {
            return top;
        };
        let Some(w) = self.per_cell(weights) else {
            return top;
        };
        let given = &inputs[1..];
        let given = &given[..self.used(given.len())];
        let mut states: Vec<Interval> = (0..self.state_sizes().len())
            .map(|k| given.get(k).copied().unwrap_or(Interval::point(0.0)))
            .collect();
        let mut out = Interval::point(0.0);
        for step in 0..*t {
            let mut input = x;
            let mut dim = *d;
            let mut new = Vec::new();
            let mut at = 0;
            for (cell, cw) in self.cells.iter().zip(&w) {
                let n = cell.state_sizes().len();
                let (o, st) = cell.step_interval(input, &states[at..at + n], cw, dim);
                new.extend(st);
                input = o;
                dim = cell.units;
                at += n;
            }
            let mut next: Vec<Interval> =
                states.iter().zip(&new).map(|(a, b)| a.union(*b)).collect();
            let mut next_out = out.union(input);
            // Every step sees the same input bounds: once nothing grows, nothing will.
            let fixed = next == states && next_out == out;
            if !fixed && step >= EXACT_STEPS + WIDENED_STEPS {
                // Still growing after widening: nothing is known.
                return top;
            }
            if !fixed && step == EXACT_STEPS {
                // A long sequence whose bounds still grow (slowly, as a float approaches
                // an asymptote, or without end): what still grows is widened to anything,
                // and a few more steps bound it again where the cell's activations do. The
                // analysis takes at most this many steps, whatever the sequence's length.
                for (n, s) in next.iter_mut().zip(&states) {
                    if n != s {
                        *n = Interval::TOP;
                    }
                }
                if next_out != out {
                    next_out = Interval::TOP;
                }
            }
            states = next;
            out = next_out;
            if fixed {
                break;
            }
        }
        let mut ivs = vec![out];
        if self.return_state {
            ivs.extend(states);
        }
        ivs
    }

    /// Error bounds of a run on these values, along the steps it takes under its mask (see
    /// [`Tracked`]).
    pub(crate) fn error_bound(
        &self,
        x: &ArrayD<f64>,
        given: &[&ArrayD<f64>],
        mask: Option<&Mask>,
        w: &[&ArrayD<f64>],
        eps: f64,
        max: f64,
    ) -> ErrorBound {
        let unknown = ErrorBound {
            output_err: f64::NAN,
            output_mag: f64::NAN,
            state_err: f64::NAN,
            overflow_undetermined_from: Vec::new(),
        };
        let (Ok(x), Some(w)) = (x.view().into_dimensionality::<Ix3>(), self.per_cell(w)) else {
            return unknown;
        };
        let (b, t) = (x.shape()[0], x.shape()[1]);
        let given = &given[..self.used(given.len())];
        let sizes = self.state_sizes();
        let offsets: Vec<usize> = sizes
            .iter()
            .scan(0, |at, &n| {
                *at += n;
                Some(*at - n)
            })
            .collect();
        let total: usize = sizes.iter().sum();
        // The states' values along the run, and the bounds on their errors.
        let mut values = Vec::new();
        let mut scale = Array2::zeros((b, total));
        for (k, &n) in sizes.iter().enumerate() {
            let v = match given.get(k) {
                Some(a) => match a.view().into_dimensionality::<Ix2>() {
                    Ok(v) if v.shape() == [b, n] => v.to_owned(),
                    _ => return unknown,
                },
                None => Array2::zeros((b, n)),
            };
            let at = offsets[k];
            scale
                .slice_mut(s![.., at..at + n])
                .assign(&v.mapv(|x| eps * x.abs()));
            values.push(v);
        }
        let mask = mask.filter(|m| m.shape() == [b, t]);
        let out = self.output_size();
        let (mut emitted, mut emitted_err) = (Array2::zeros((b, out)), Array2::zeros((b, out)));
        let (mut output_err, mut output_mag) = (0.0, 0.0);
        let mut undetermined = vec![None; b];
        for p in 0..t {
            let ti = self.time_of(p, t);
            let st = Step { scale, eps };
            let mut input = Tracked::given(x.index_axis(Axis(1), ti), &st);
            let mut new = Vec::new();
            for (cell, cw) in self.cells.iter().zip(&w) {
                let first = new.len();
                let states: Vec<Tracked> = (first..first + cell.state_sizes().len())
                    .map(|k| Tracked::state(values[k].view(), offsets[k], &st))
                    .collect();
                let (o, next) = cell.step_tracked(&input, &states, cw, &st);
                new.extend(next);
                input = o;
            }
            let new_err: Vec<Array2<f64>> = new.iter().map(|n| n.total(&st)).collect();
            let out_err = input.total(&st);
            let mut next = st.scale;
            for row in 0..b {
                if mask.is_none_or(|m| m[[row, ti]]) {
                    for (k, (n, e)) in new.iter().zip(&new_err).enumerate() {
                        values[k].row_mut(row).assign(&n.val.row(row));
                        let at = offsets[k];
                        next.slice_mut(s![row, at..at + sizes[k]])
                            .assign(&e.row(row));
                    }
                    emitted.row_mut(row).assign(&input.val.row(row));
                    emitted_err.row_mut(row).assign(&out_err.row(row));
                    let either = |v: &Array2<f64>, e: &Array2<f64>| {
                        v.row(row)
                            .iter()
                            .zip(e.row(row))
                            .any(|(&v, &e)| may_overflow_or_not(v, e, max))
                    };
                    if undetermined[row].is_none()
                        && (either(&input.val, &out_err)
                            || new.iter().zip(&new_err).any(|(n, e)| either(&n.val, e)))
                    {
                        undetermined[row] = Some(p);
                    }
                } else if self.zero_output_for_mask {
                    emitted.row_mut(row).fill(0.0);
                    emitted_err.row_mut(row).fill(0.0);
                }
            }
            for (v, e) in emitted.iter().zip(&emitted_err) {
                output_err = nan_max(output_err, *e);
                output_mag = nan_max(output_mag, v.abs() + e);
            }
            scale = next;
        }
        ErrorBound {
            output_err,
            output_mag,
            state_err: scale.iter().fold(0.0, |m, &e| nan_max(m, e)),
            overflow_undetermined_from: undetermined,
        }
    }
}

impl Recurrence {
    /// The shapes of a run's outputs, as [`Recurrence::run`] gives them, for `batch` rows of
    /// `steps` steps.
    pub(crate) fn output_shapes(&self, batch: usize, steps: usize) -> Vec<Vec<usize>> {
        let mut shapes = vec![if self.return_sequences {
            vec![batch, steps, self.output_size()]
        } else {
            vec![batch, self.output_size()]
        }];
        if self.return_state {
            shapes.extend(self.state_sizes().into_iter().map(|n| vec![batch, n]));
        }
        shapes
    }

    /// The elements of a run's outputs (shaped as [`Recurrence::run`] gives them) whose
    /// overflow rounding decides: from the step at which a row's outputs or states may
    /// overflow or not by their error bound, that row's later outputs and its final states
    /// (see [`ErrorBound::overflow_undetermined_from`]), along the steps the mask lets the
    /// run take. `None` where there are none.
    pub(crate) fn overflow_flags(
        &self,
        x: &ArrayD<f64>,
        given: &[&ArrayD<f64>],
        mask: Option<&Mask>,
        w: &[&ArrayD<f64>],
        dtype: DType,
    ) -> Option<Vec<ArrayD<bool>>> {
        let dtype = self.coarsest(dtype);
        let eps = Tolerance::eps(dtype);
        let bound = self.error_bound(x, given, mask, w, eps, max_finite(dtype));
        let from = bound.overflow_undetermined_from;
        if from.iter().all(Option::is_none) {
            return None;
        }
        let row = |r: usize| from.get(r).copied().flatten();
        let flags = self
            .output_shapes(x.shape()[0], x.shape()[1])
            .into_iter()
            .enumerate()
            .map(|(i, shape)| {
                let sequence = i == 0 && self.return_sequences;
                ArrayD::from_shape_fn(shape, |ix| {
                    row(ix[0]).is_some_and(|p| !sequence || ix[1] >= p)
                })
            })
            .collect();
        Some(flags)
    }
}

/// An initial state must be `(batch, size)`. Keras does not check it; TF fails on sizes that
/// cannot broadcast, and a state that broadcasts (a batch or size of 1, another rank) gives
/// states whose shape changes from step to step: accepted eagerly, refused by a graph's
/// `while_loop`, and not the shapes Keras declares.
fn check_state(k: usize, s: &Dims, batch: Option<usize>, size: usize) -> Result<(), Violation> {
    let want = [batch, Some(size)];
    let violation = |tag, detail: &str| {
        Err(Violation::new(Category::IncompatibleShapes, tag)
            .parameter(format!("initial_state[{k}]"))
            .expected(show(&want.to_vec()))
            .actual(show(s))
            .detail(detail.to_owned()))
    };
    if s.len() != 2 {
        return violation(Tag::Semantic, "is not a (batch, units) state");
    }
    let mut broadcasts = false;
    for (d, w) in s.iter().zip(want) {
        if let (Some(a), Some(b)) = (*d, w)
            && a != b
        {
            if a == 1 || b == 1 {
                broadcasts = true;
            } else {
                return violation(Tag::KerasEnforced, "does not fit the batch and the units");
            }
        }
    }
    if broadcasts {
        return violation(Tag::Semantic, "only broadcasts to the batch and the units");
    }
    Ok(())
}

/// The mask of a sequence must be `(batch, time)` (unknown dimensions of either are 1 in
/// `mask`). TF's loop takes one `(batch, …)` slice per step and `tf.where`s it against the
/// outputs and states: another shape fails or broadcasts into something meaningless.
pub(crate) fn check_mask(seq: &Dims, mask: &[usize]) -> Result<(), Violation> {
    let fits = mask.len() == 2
        && seq.len() >= 2
        && mask.iter().zip(seq).all(|(&m, d)| d.is_none_or(|d| d == m));
    if fits {
        return Ok(());
    }
    Err(Violation::new(Category::IncompatibleShapes, Tag::Semantic)
        .parameter("mask")
        .actual(format!("{mask:?}"))
        .expected(format!("a (batch, time) mask for the input {}", show(seq)))
        .detail("is not a mask of the sequence's steps"))
}

/// The spec of one call of a recurrent layer.
#[derive(Debug)]
pub(crate) struct RecurrentSpec {
    pub rec: Recurrence,
    pub form: StateForm,
}

/// Parses a call of a recurrent layer whose config `parse` reads.
pub(crate) fn recurrent_call(
    call: &CallSite<'_>,
    parse: fn(&Config) -> ParamResult<Recurrence>,
) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let mut rec = parse(&c)?;
    c.finish()?;
    rec.dtype = call.dtype;
    let form = StateForm::of_call(call.node)?;
    rec.check_form(&form)?;
    Ok(Box::new(RecurrentSpec { rec, form }))
}

impl Spec for RecurrentSpec {
    fn reads_mask(&self) -> bool {
        true
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1 + self.form.count())?;
        self.rec.infer(&inputs[0], &inputs[1..])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        match inputs.first().and_then(|s| s.get(2)) {
            Some(&d) => self.rec.weights(d),
            None => Vec::new(),
        }
    }

    fn check_masks(
        &self,
        inputs: &[Dims],
        mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        match (inputs.first(), mask_shapes.first()) {
            (Some(seq), Some(Some(m))) => check_mask(seq, m),
            _ => Ok(()),
        }
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        self.rec.run(inputs[0], &inputs[1..], None, weights)
    }

    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let mask = masks.first().copied().flatten();
        self.rec.run(inputs[0], &inputs[1..], mask, weights)
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        Some(self.rec.output_masks(masks.first().copied().flatten()))
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        match shapes.first() {
            Some(seq) => self.rec.intervals(seq, inputs, weights),
            None => vec![Interval::TOP; self.rec.output_count()],
        }
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        self.tolerance_masked(dtype, inputs, &[], weights)
    }

    /// The error bound of the run along the steps its mask lets it take.
    fn tolerance_masked(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let dtype = self.rec.coarsest(dtype);
        let mask = masks.first().copied().flatten();
        let b = self.rec.error_bound(
            inputs[0],
            &inputs[1..],
            mask,
            weights,
            Tolerance::eps(dtype),
            max_finite(dtype),
        );
        tolerance_of(nan_max(b.output_err, b.state_err), dtype)
    }

    /// See [`Recurrence::overflow_flags`]. The judge's dtype is the layer's here.
    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        self.order_dependent_overflow_masked(inputs, &[], weights)
    }

    fn order_dependent_overflow_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let mask = masks.first().copied().flatten();
        self.rec
            .overflow_flags(inputs[0], &inputs[1..], mask, weights, self.rec.dtype)
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        self.form.build_config(inputs)
    }
}
