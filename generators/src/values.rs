//! Values for weights and inputs, from several distributions (not only U[0,1)): negative
//! values, large and tiny magnitudes, exact integers, zeros, values near activation
//! thresholds and, rarely, special values — so value-dependent bugs are reachable. Each
//! weight's value constraint (a variance stays non-negative) is kept.

use ndarray::ArrayD;
use oracle::Case;
use oracle::case::{Dims, Tensor};
use oracle::check::{CallKind, ModelAnalysis, check_model, declared_inputs};
use oracle::layers::WeightDomain;
use rand::Rng as _;
use rand::seq::IndexedRandom;

use crate::Rng;

/// A distribution of array values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// U[-1, 1): the common case.
    Symmetric,
    /// U[0, 1).
    Unit,
    /// Magnitudes around 1e2..1e4, either sign.
    Large,
    /// Magnitudes around 1e-6..1e-3, either sign.
    Tiny,
    /// Exact small integers in -4..=4.
    Integers,
    /// Mostly zeros, a few values in U[-1, 1).
    Sparse,
    /// Values at and around the thresholds of activations and clips: 0, ±1, ±3, 6, ±1e-7.
    Thresholds,
}

impl Distribution {
    pub const ALL: [Distribution; 7] = [
        Distribution::Symmetric,
        Distribution::Unit,
        Distribution::Large,
        Distribution::Tiny,
        Distribution::Integers,
        Distribution::Sparse,
        Distribution::Thresholds,
    ];

    /// Mostly the common case, each other distribution regularly.
    pub fn pick(rng: &mut Rng) -> Distribution {
        if rng.random_bool(0.5) {
            Distribution::Symmetric
        } else {
            *Distribution::ALL.choose(rng).expect("not empty")
        }
    }

    fn draw(self, rng: &mut Rng) -> f64 {
        let sign = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
        match self {
            Distribution::Symmetric => rng.random_range(-1.0..1.0),
            Distribution::Unit => rng.random_range(0.0..1.0),
            Distribution::Large => sign * 10f64.powf(rng.random_range(2.0..4.0)),
            Distribution::Tiny => sign * 10f64.powf(rng.random_range(-6.0..-3.0)),
            Distribution::Integers => rng.random_range(-4i32..=4) as f64,
            Distribution::Sparse => {
                if rng.random_bool(0.8) {
                    0.0
                } else {
                    rng.random_range(-1.0..1.0)
                }
            }
            Distribution::Thresholds => {
                let base = *[0.0, 1.0, -1.0, 3.0, -3.0, 6.0, 0.5]
                    .choose(rng)
                    .expect("not empty");
                base + *[0.0, 0.0, 1e-7, -1e-7, 1e-3, -1e-3]
                    .choose(rng)
                    .expect("not empty")
            }
        }
    }
}

/// Options of value generation.
#[derive(Debug, Clone, Copy)]
pub struct ValueOptions {
    /// The chance that an array carries a special value (NaN, ±Inf) at one random place.
    pub special: f64,
    /// Only small values (`Symmetric`), for a case whose other draws a layer refused.
    pub tame: bool,
}

impl Default for ValueOptions {
    fn default() -> Self {
        ValueOptions {
            special: 0.01,
            tame: false,
        }
    }
}

impl ValueOptions {
    fn distribution(&self, rng: &mut Rng) -> Distribution {
        if self.tame {
            Distribution::Symmetric
        } else {
            Distribution::pick(rng)
        }
    }
}

/// An array of this shape from `dist`, within `domain`.
pub fn array(
    shape: &[usize],
    dist: Distribution,
    domain: WeightDomain,
    opts: &ValueOptions,
    rng: &mut Rng,
) -> ArrayD<f64> {
    let n: usize = shape.iter().product();
    let mut data: Vec<f64> = (0..n).map(|_| dist.draw(rng)).collect();
    if domain == WeightDomain::NonNegative {
        data.iter_mut().for_each(|x| *x = x.abs());
    }
    if n > 0 && rng.random_bool(opts.special) {
        let i = rng.random_range(0..n);
        data[i] = match (domain, rng.random_range(0..3)) {
            (WeightDomain::NonNegative, _) | (_, 0) => f64::INFINITY,
            (_, 1) => f64::NEG_INFINITY,
            _ => f64::NAN,
        };
    }
    ArrayD::from_shape_vec(shape.to_vec(), data).expect("length matches the shape")
}

/// Why arrays could not be given to a case: its model is not valid on its declared shapes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot give arrays to an invalid model: {0}")]
pub struct NotValid(pub Box<oracle::CheckError>);

/// Gives the case input arrays (batch `batch` where the declared batch is unknown) and every
/// layer the weights its class needs. Arrays whose shape is already right are kept, so a
/// structural change elsewhere leaves the other values as they were.
pub fn realize(
    case: &mut Case,
    batch: usize,
    opts: &ValueOptions,
    rng: &mut Rng,
) -> Result<(), NotValid> {
    realize_checked(case, batch, opts, rng, None)
}

/// [`realize`], given an analysis of this case's model that the caller has (a valid
/// repair's): it is used when it covers every call on the input shapes the arrays get, and
/// the model is checked again otherwise.
pub(crate) fn realize_checked(
    case: &mut Case,
    batch: usize,
    opts: &ValueOptions,
    rng: &mut Rng,
    checked: Option<&ModelAnalysis>,
) -> Result<(), NotValid> {
    let declared = declared_inputs(&case.model).map_err(|e| NotValid(Box::new(e)))?;
    let concrete: Vec<Vec<usize>> = declared
        .iter()
        .enumerate()
        .map(|(i, d)| concrete_shape(d, case.inputs.get(i).map(Tensor::shape), batch))
        .collect();
    let dims: Vec<Dims> = concrete
        .iter()
        .map(|s| s.iter().map(|&d| Some(d)).collect())
        .collect();
    let fresh;
    let analysis = match checked.filter(|a| analysed_on(case, a, &dims)) {
        Some(a) => a,
        None => {
            fresh =
                check_model(&case.model, &dims, case.dtype).map_err(|e| NotValid(Box::new(e)))?;
            &fresh
        }
    };
    let rows = index_rows(case, analysis);
    let masked = read_values(case, analysis, |s| s.masked_value(), |first, _| first);
    let dtype = case.dtype;
    let inputs: Vec<Tensor> = concrete
        .iter()
        .enumerate()
        .map(|(i, shape)| {
            let n = rows.get(&i).copied();
            let fits = |t: &Tensor| {
                n.is_none_or(|n| {
                    t.data
                        .iter()
                        .all(|&x| x >= 0.0 && x < n as f64 && x.fract() == 0.0)
                })
            };
            match case.inputs.get(i) {
                // A kept array gets whole steps of the mask value of a `Masking` that reads
                // it now (placed or changed since the array was drawn) as a fresh one does.
                Some(t) if t.shape() == shape.as_slice() && fits(t) => match masked.get(&i) {
                    Some(&v)
                        if n.is_none()
                            && comparable(v, dtype)
                            && !has_masked_step(&t.data, v, dtype)
                            && rng.random_bool(0.5) =>
                    {
                        let mut a = t.data.clone();
                        mask_lanes(&mut a, v, rng);
                        Tensor {
                            data: a,
                            ..t.clone()
                        }
                    }
                    _ => t.clone(),
                },
                _ => Tensor::new(match n {
                    // Indices: rows in range, the edge rows often (the last row, where
                    // off-by-ones are, and 0, a `mask_zero` mask).
                    Some(n) => ArrayD::from_shape_fn(shape.clone(), |_| {
                        let last = n.max(1) - 1;
                        match rng.random_range(0..8) {
                            0 | 1 => last as f64,
                            2 => 0.0,
                            _ => rng.random_range(0..=last) as f64,
                        }
                    }),
                    None => {
                        let mut a =
                            array(shape, opts.distribution(rng), WeightDomain::Any, opts, rng);
                        // Half the time, whole steps a `Masking` reader masks.
                        if let Some(&v) = masked.get(&i)
                            && comparable(v, dtype)
                            && rng.random_bool(0.5)
                        {
                            mask_lanes(&mut a, v, rng);
                        }
                        a
                    }
                }),
            }
        })
        .collect();
    case.inputs = inputs;
    let mut weights = indexmap::IndexMap::new();
    for call in &analysis.calls {
        let CallKind::Layer(spec) = &call.kind else {
            continue;
        };
        let layer = &case.model.layers[call.layer];
        let Some(shapes) = call
            .input_shapes
            .iter()
            .map(oracle::layers::util::known)
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let wanted = spec.weights(&shapes);
        if wanted.is_empty() {
            continue;
        }
        // Arrays are kept only from a weight list of the same length (the same layout).
        let old = case
            .weights
            .get(&layer.name)
            .filter(|o| o.len() == wanted.len());
        let arrays: Vec<Tensor> = wanted
            .iter()
            .enumerate()
            .map(|(i, w)| match old.and_then(|o| o.get(i)) {
                Some(t) if t.shape() == w.shape.as_slice() => t.clone(),
                _ => Tensor::new(array(&w.shape, opts.distribution(rng), w.domain, opts, rng)),
            })
            .collect();
        weights.insert(layer.name.clone(), arrays);
    }
    // Layers the walk does not reach (nested models) keep what they had.
    for (k, v) in &case.weights {
        if !weights.contains_key(k) && case.model.layer(k).is_some_and(|l| l.nested.is_some()) {
            weights.insert(k.clone(), v.clone());
        }
    }
    case.weights = weights;
    Ok(())
}

/// Whether an analysis covers every call of the case's model, on inputs of these shapes.
fn analysed_on(case: &Case, analysis: &ModelAnalysis, inputs: &[Dims]) -> bool {
    let calls: usize = case.model.layers.iter().map(|l| l.call_count()).sum();
    let mut given = 0;
    let on_inputs = analysis.calls.iter().all(|c| match c.kind {
        CallKind::Input { position } => {
            given += 1;
            inputs.get(position) == c.outputs.first()
        }
        _ => true,
    });
    on_inputs && given == inputs.len() && analysis.calls.len() == calls
}

/// Whether an input lane of `v` compares equal to a `mask_value` of `v` in a run of `dtype`
/// as the reference compares them: TF compares in float32, so a float32 run does, and a
/// float64 run only for a value float32 holds exactly (otherwise a kept framework bug fires);
/// other dtypes get no such lanes.
fn comparable(v: f64, dtype: oracle::DType) -> bool {
    dtype == oracle::DType::Float32 || (dtype == oracle::DType::Float64 && v as f32 as f64 == v)
}

/// Whether some lane of the last axis of `a` (a whole timestep) equals `v` everywhere, as a
/// run of `dtype` holds the values (a float32 run holds float32 ones).
fn has_masked_step(a: &ArrayD<f64>, v: f64, dtype: oracle::DType) -> bool {
    let Some(last) = a.ndim().checked_sub(1).filter(|&l| l > 0) else {
        return false;
    };
    let equal = |e: f64| match dtype {
        oracle::DType::Float32 => e as f32 == v as f32,
        _ => e == v,
    };
    a.lanes(ndarray::Axis(last))
        .into_iter()
        .any(|l| l.iter().all(|&e| equal(e)))
}

/// Sets about a third of the lanes of the last axis of `a` (whole timesteps) to `v`.
fn mask_lanes(a: &mut ArrayD<f64>, v: f64, rng: &mut Rng) {
    let Some(last) = a.ndim().checked_sub(1).filter(|&l| l > 0) else {
        return;
    };
    for mut lane in a.lanes_mut(ndarray::Axis(last)) {
        if rng.random_bool(1.0 / 3.0) {
            lane.fill(v);
        }
    }
}

/// The model inputs that a call reads directly and for which its spec gives a value
/// (`read`), by input position; `merge` combines the values of two readers of one input.
fn read_values<T: Copy>(
    case: &Case,
    analysis: &oracle::check::ModelAnalysis,
    read: impl Fn(&dyn oracle::layers::Spec) -> Option<T>,
    merge: impl Fn(T, T) -> T,
) -> std::collections::HashMap<usize, T> {
    let mut values = std::collections::HashMap::new();
    for call in &analysis.calls {
        let CallKind::Layer(spec) = &call.kind else {
            continue;
        };
        let Some(v) = read(spec.as_ref()) else {
            continue;
        };
        for r in &call.inputs {
            let Some(l) = case.model.layers.iter().position(|x| x.name == r.layer) else {
                continue;
            };
            if let Some(oracle::check::CheckedCall {
                kind: CallKind::Input { position },
                ..
            }) = analysis.call(l, r.node)
            {
                let e = values.entry(*position).or_insert(v);
                *e = merge(*e, v);
            }
        }
    }
    values
}

/// The model inputs that calls read as indices (`Embedding`), by input position, with the
/// fewest rows any of their readers has.
fn index_rows(
    case: &Case,
    analysis: &oracle::check::ModelAnalysis,
) -> std::collections::HashMap<usize, usize> {
    read_values(case, analysis, |s| s.index_rows(), usize::min)
}

/// A declared shape made concrete: the existing array's dimensions where the declaration
/// leaves them open, else `batch` for the batch and a small size for the others.
/// Gives a case whose model is not valid (a minimally-invalid one) an input array for every
/// model input that has none of its declared shape: values spread over [0, 1), which every
/// input takes (an `Embedding` reads them as row 0), since the reference checks no values of
/// an invalid model. The arrays of the right shape stay; the batch of a new one is that of the
/// first array, else `batch`. Without them an invalid model could be built but never called.
/// The values are a fixed sequence, not drawn, so the draws of a seeded campaign stay as they
/// were.
pub fn fill_inputs(case: &mut Case, batch: usize) -> Result<(), NotValid> {
    let declared = declared_inputs(&case.model).map_err(|e| NotValid(Box::new(e)))?;
    let batch = case
        .inputs
        .first()
        .and_then(|t| t.shape().first().copied())
        .unwrap_or(batch);
    let inputs = declared
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let existing = case.inputs.get(i).map(Tensor::shape);
            let shape = concrete_shape(d, existing, batch);
            match case.inputs.get(i) {
                Some(t) if t.shape() == shape.as_slice() => t.clone(),
                _ => {
                    let n: usize = shape.iter().product();
                    // The fractional parts of k times the golden ratio: spread, never repeating.
                    let data = (0..n).map(|k| (k as f64 * 0.618_033_988_749_895 + 0.1).fract());
                    Tensor::new(
                        ArrayD::from_shape_vec(shape, data.collect()).expect("length matches"),
                    )
                }
            }
        })
        .collect();
    case.inputs = inputs;
    Ok(())
}

fn concrete_shape(declared: &Dims, existing: Option<&[usize]>, batch: usize) -> Vec<usize> {
    declared
        .iter()
        .enumerate()
        .map(|(i, d)| match d {
            Some(n) => *n,
            None => existing
                .filter(|e| e.len() == declared.len())
                .map(|e| e[i])
                .unwrap_or(if i == 0 { batch } else { 4 }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{GenOptions, generate_structure};
    use crate::repair::{RepairOptions, diagnose, repair_diagnosed};
    use oracle::check::CheckedShapes;

    fn json(case: &Case) -> String {
        serde_json::to_string(&case.to_json(&CheckedShapes::of(case))).unwrap()
    }

    #[test]
    fn arrays_given_with_a_repairs_analysis_are_those_of_a_fresh_check() {
        let opts = GenOptions::default();
        let values = ValueOptions::default();
        let mut rng = crate::rng(5);
        let (mut valid, mut partial) = (0, 0);
        for i in 0..150 {
            // An invalid model's analysis covers only some of its calls.
            let mut unrepaired = generate_structure(&opts, &mut rng);
            let raw = diagnose(&unrepaired, &opts.repair);
            let mut case = unrepaired.clone();
            let (stats, repaired) = repair_diagnosed(&mut case, &opts.repair, &mut rng);
            // The repaired model's analysis at the repair's batch, and one at batch 3, on
            // other shapes.
            let other = diagnose(
                &case,
                &RepairOptions {
                    batch: 3,
                    ..opts.repair
                },
            );
            let mut second = case.clone();
            for (case, analysis) in [
                (&mut unrepaired, raw.analysis.as_ref()),
                (&mut case, repaired.analysis.as_ref()),
                (&mut second, other.analysis.as_ref()),
            ] {
                let mut fresh = case.clone();
                let a = realize(&mut fresh, 2, &values, &mut crate::rng(i));
                let b = realize_checked(case, 2, &values, &mut crate::rng(i), analysis);
                assert_eq!(a.is_ok(), b.is_ok());
                // As written (arrays may hold NaN, which equals nothing).
                assert_eq!(json(case), json(&fresh));
            }
            valid += usize::from(stats.valid);
            partial += usize::from(!raw.score.is_valid());
        }
        assert!(
            valid > 100 && partial > 20,
            "{valid} valid, {partial} partial"
        );
    }
}

#[cfg(test)]
mod masking_tests {
    use super::*;

    /// An input of shape (None, 4, 3) read by `Masking(mask_value)` in `dtype`, no arrays.
    fn masked_model(mask_value: f64, dtype: &str) -> Case {
        let text = serde_json::json!({
            "format": "semfuzz-case/1", "dtype": dtype,
            "model": {"name": "m", "layers": [
                {"class_name": "InputLayer", "name": "x",
                 "config": {"batch_shape": [null, 4, 3], "name": "x"}, "inbound_nodes": []},
                {"class_name": "Masking", "name": "masking",
                 "config": {"name": "masking", "mask_value": mask_value},
                 "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                    "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}],
              "input_layers": [["x", 0, 0]], "output_layers": [["masking", 0, 0]]},
            "weights": {}, "inputs": []
        });
        Case::from_json_str(&text.to_string(), "masking.case.json").unwrap()
    }

    /// Steps whose every value is `mask_value` (in `dtype`), over `runs` fresh realisations.
    fn masked_steps(mask_value: f64, dtype: &str, runs: u64) -> usize {
        (0..runs)
            .map(|seed| {
                let mut case = masked_model(mask_value, dtype);
                realize(
                    &mut case,
                    2,
                    &ValueOptions::default(),
                    &mut crate::rng(seed),
                )
                .unwrap();
                let x = &case.inputs[0].data;
                x.lanes(ndarray::Axis(2))
                    .into_iter()
                    .filter(|l| {
                        l.iter().all(|&e| match dtype {
                            // Float32 runs hold float32 values.
                            "float32" => e as f32 == mask_value as f32,
                            _ => e == mask_value,
                        })
                    })
                    .count()
            })
            .sum()
    }

    #[test]
    fn an_input_read_by_masking_gets_whole_steps_of_its_mask_value() {
        // 20 runs of 8 steps: about half the runs mask about a third of their steps.
        let n = masked_steps(2.5, "float32", 20);
        assert!((10..=50).contains(&n), "{n} masked steps");
        // 0.1 is no float32: a float64 run would compare it otherwise than Keras does.
        assert_eq!(masked_steps(0.1, "float64", 20), 0);
        assert!(masked_steps(0.1, "float32", 20) > 0);
        assert!(masked_steps(2.5, "float64", 20) > 0);
    }

    #[test]
    fn a_kept_array_gets_the_steps_of_a_new_mask_value() {
        let (mut gained, mut kept) = (0, 0);
        for seed in 0..20 {
            let mut case = masked_model(0.25, "float32");
            let values = ValueOptions::default();
            realize(&mut case, 2, &values, &mut crate::rng(seed)).unwrap();
            let before = case.inputs[0].data.clone();
            let masking = &mut case.model.layers[1];
            masking
                .config
                .insert("mask_value".into(), serde_json::json!(2.5));
            realize(&mut case, 2, &values, &mut crate::rng(seed + 100)).unwrap();
            let after = &case.inputs[0].data;
            assert_eq!(after.shape(), before.shape());
            if has_masked_step(after, 2.5, oracle::DType::Float32) {
                gained += 1;
                // Only whole steps changed, each to the mask value.
                for (a, b) in after
                    .lanes(ndarray::Axis(2))
                    .into_iter()
                    .zip(before.lanes(ndarray::Axis(2)))
                {
                    assert!(a == b || a.iter().all(|&e| e == 2.5), "{a} from {b}");
                }
            } else {
                kept += usize::from(after == before);
            }
        }
        // Half the time, as for a fresh array; the rest keep the array as it was.
        assert!(
            (5..=15).contains(&gained),
            "{gained} of 20 gained masked steps"
        );
        assert_eq!(gained + kept, 20);
    }
}
