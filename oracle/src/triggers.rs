//! Triggers of framework bugs that lie in a layer's own arguments and input shape: shape
//! predicates that say which layers make TensorFlow raise, crash or compute other values than
//! the reference. A kept bug's entry (`crashes/<id>/kept.json`) names its trigger by
//! [`Trigger::name`]; the judge matches verdicts on it and the generators steer away from the
//! triggers the entries name unless asked to keep them.
//!
//! Triggers have no dtype: the two crashes below happen only in float32 (and bfloat16, where
//! TF runs oneDNN's max pooling), but the fuzzer draws the dtype per execution, after the
//! model is generated, so a model that crashes in one dtype counts in all.

use serde_json::Value;

use crate::case::{Layer, Model};
use crate::check::{CheckedCall, ModelAnalysis};

/// A framework bug's trigger in a layer's arguments and input shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// Keras 3.15's `RMSNormalization` gives `scale` the sizes of the normalized axes (in the
    /// order of the sorted `axis` values as written) and multiplies by it as it is, so
    /// broadcasting lays it along the *trailing* axes: where the normalized axes are not the
    /// trailing ones in that order, the call raises, scales along the wrong axes, or returns
    /// a larger tensor than declared (and the next layer raises).
    RmsAxesNotTrailing,
    /// Keras before 3.4's `LayerNormalization` with `rms_scaling` multiplies by `gamma` as it
    /// is, as 3.15's `RMSNormalization` does with its scale
    /// ([`Trigger::RmsAxesNotTrailing`]): where the normalized axes are not the trailing ones,
    /// the call raises, scales along the wrong axes, or returns a larger tensor than declared.
    LayerNormRmsGammaNotTrailing,
    /// Keras before 3.14.1 lays a `LayerNormalization`'s weights over its axes in the order
    /// written, where a case lays them over the sorted axes (as 3.15 does); with
    /// `rms_scaling`, where the two shapes differ, `set_weights` refuses the case's weights
    /// (without it semfuzz reshapes them, and Keras reshapes them back when it uses them).
    LayerNormRmsWeightLayout,
    /// Keras 3.15's TF backend computes `AdaptiveMaxPooling1D/2D/3D` axis by axis with two
    /// stride-1 `valid` max pools, of windows `ceil(n / output_size)` and one more, and
    /// gathers; when the longer window exceeds the last spatial axis (an output size of 1
    /// there, or an axis of length 1), oneDNN's float32 max pooling kills the process by
    /// SIGFPE (see [`Trigger::MaxPoolingWindowExceedsInput`]).
    AdaptiveMaxPoolingWindowExceedsInput,
    /// oneDNN's float32 max pooling (TF's `MaxPool`/`MaxPool3D`, so `MaxPooling1D/2D/3D`)
    /// kills the process by SIGFPE when its `valid` window leaves no output along the *last*
    /// spatial axis; Keras checks the window only against a length known when the model is
    /// built.
    MaxPoolingWindowExceedsInput,
    /// Keras before 3.7 passes an `Attention`/`AdditiveAttention` call the masks its inputs
    /// carry as one list, and refuses a list that mixes tensors and `None` (some inputs
    /// masked, others not) at build. Known only from an analysis, which says which tensors
    /// carry masks.
    AttentionMixedMasks,
    /// Keras before 3.7's `Concatenate.build` drops the length-1 axes of each input shape
    /// (but the concatenation axis) from a list while it walks the shape's original indices,
    /// then drops the concatenation axis by `axis` as written: an index past the shrunk list
    /// raises `IndexError` at build ([`concatenate_build_index_error`]).
    ConcatenateSqueezedAxisIndexError,
    /// Keras before 3.7's `MultiHeadAttention.compute_output_shape` (run by a functional
    /// model's symbolic call) refuses a query and a value whose last dimensions differ, though
    /// the layer projects both.
    MhaQueryValueFeatureSizes,
}

impl Trigger {
    pub const ALL: [Trigger; 8] = [
        Trigger::RmsAxesNotTrailing,
        Trigger::LayerNormRmsGammaNotTrailing,
        Trigger::LayerNormRmsWeightLayout,
        Trigger::AdaptiveMaxPoolingWindowExceedsInput,
        Trigger::MaxPoolingWindowExceedsInput,
        Trigger::AttentionMixedMasks,
        Trigger::ConcatenateSqueezedAxisIndexError,
        Trigger::MhaQueryValueFeatureSizes,
    ];

    /// The name an entry gives it.
    pub fn name(self) -> &'static str {
        match self {
            Trigger::RmsAxesNotTrailing => "rms-axes-not-trailing",
            Trigger::LayerNormRmsGammaNotTrailing => "layer-norm-rms-gamma-not-trailing",
            Trigger::LayerNormRmsWeightLayout => "layer-norm-rms-weight-layout",
            Trigger::AdaptiveMaxPoolingWindowExceedsInput => {
                "adaptive-max-pooling-window-exceeds-input"
            }
            Trigger::MaxPoolingWindowExceedsInput => "max-pooling-window-exceeds-input",
            Trigger::AttentionMixedMasks => "attention-mixed-masks",
            Trigger::ConcatenateSqueezedAxisIndexError => "concatenate-squeezed-axis-index-error",
            Trigger::MhaQueryValueFeatureSizes => "mha-query-value-feature-sizes",
        }
    }
}

/// A set of triggers (the ones kept bugs' entries name, which generation avoids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TriggerSet(u8);

impl TriggerSet {
    pub fn all() -> Self {
        Trigger::ALL.into_iter().collect()
    }

    pub fn none() -> Self {
        TriggerSet(0)
    }

    pub fn contains(self, t: Trigger) -> bool {
        self.0 & Self::bit(t) != 0
    }

    pub fn insert(&mut self, t: Trigger) {
        self.0 |= Self::bit(t);
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn bit(t: Trigger) -> u8 {
        1 << Trigger::ALL.iter().position(|x| *x == t).unwrap_or(0)
    }
}

impl FromIterator<Trigger> for TriggerSet {
    fn from_iter<I: IntoIterator<Item = Trigger>>(iter: I) -> Self {
        let mut s = TriggerSet::none();
        for t in iter {
            s.insert(t);
        }
        s
    }
}

impl std::str::FromStr for Trigger {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Trigger::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown trigger `{s}` (expected one of: {})",
                    Trigger::ALL.map(Trigger::name).join(", ")
                )
            })
    }
}

/// The kept bug a call of `layer` triggers, if any. `input` is the shape of the call's input
/// (batch included) when it is known: the answer is then exact. Without it the answer is the
/// conservative one, true of every call the layer could make.
///
/// `RMSNormalization` triggers its bug unless every normalized axis with more than one
/// element sits where broadcasting puts its part of `scale`: with `k` axes (sorted by the
/// values as written, as Keras sorts them) on a rank-`r` input, the `j`-th is axis
/// `r - k + j`. So `axis=2` or `[1, 2]` on a rank-3 input are fine, as is `axis=1` on
/// `(b, 1, 5)` (a one-element scale broadcasts everywhere); `axis=1` on `(b, 6, 3)` and
/// `[1, -1]` on `(b, 3, 4)` (sorted `[-1, 1]`: scale `(4, 3)`) are not. Without a shape, any
/// `axis` but `-1` or `[-1]` counts (a positive last axis needs the rank).
///
/// A `LayerNormalization` with `rms_scaling` on Keras before 3.4 triggers the same bug
/// with its `gamma`. That Keras lays `gamma` over the axes in the order written, but a
/// case's weights are laid out over the sorted axes, as 3.15 does, and load only where the
/// two shapes agree (else `set_weights` refuses them first): what multiplies is then the
/// case's `gamma`, as for `RMSNormalization`.
///
/// `AdaptiveMaxPooling1D/2D/3D` triggers its crash when its last spatial axis (the length in
/// 1-D) has `ceil(n / output_size) >= n`: an output size of 1 there, or `n == 1`. An
/// over-long window along another axis only leaves that pool empty, which is never gathered.
/// An unknown length could be 1, so it counts (Keras refuses one anyway).
///
/// `MaxPooling1D/2D/3D` with `padding="valid"` triggers its crash when, along the last
/// spatial axis, the window `k` exceeds the length `n` by at least the stride `s` and less
/// than twice it (`s <= k - n < 2s`: TF's output size `(n - k + s) / s` is 0, oneDNN's
/// `(n - k) / s + 1` too, both truncating), every other spatial axis either fits its window
/// or leaves no output in the same way, and the input is not empty. Elsewhere TF raises
/// first: `0 < k - n < s` (so any `k > n` under the default strides, `s = k`) is an
/// `AbortedError`, `k - n >= 2s` an `InvalidArgumentError`. An unknown last length counts
/// when the window is longer than the stride (some length then crashes), an unknown other
/// length never stops it; `padding="same"` and the global poolings never crash.
pub fn triggered_by(layer: &Layer, input: Option<&[Option<usize>]>) -> Option<Trigger> {
    match layer.class_name.as_str() {
        "RMSNormalization" => {
            rms_axis_scale(layer.config.get("axis"), input).then_some(Trigger::RmsAxesNotTrailing)
        }
        "LayerNormalization"
            if layer.config.get("rms_scaling").and_then(Value::as_bool) == Some(true) =>
        {
            let axis = layer.config.get("axis");
            if written_layout_differs(axis, input) {
                Some(Trigger::LayerNormRmsWeightLayout)
            } else {
                rms_axis_scale(axis, input).then_some(Trigger::LayerNormRmsGammaNotTrailing)
            }
        }
        "AdaptiveMaxPooling1D" | "AdaptiveMaxPooling2D" | "AdaptiveMaxPooling3D" => {
            // Every pooled axis must have its size (else the layer is invalid).
            let last = match input {
                None => None,
                Some(x) => *adaptive_over_long(layer, x)
                    .filter(|axes| axes.len() + 2 == x.len())?
                    .last()?,
            };
            last.unwrap_or(true)
                .then_some(Trigger::AdaptiveMaxPoolingWindowExceedsInput)
        }
        "MaxPooling1D" | "MaxPooling2D" | "MaxPooling3D" => {
            max_pool_window_exceeds(layer, input).then_some(Trigger::MaxPoolingWindowExceedsInput)
        }
        _ => None,
    }
}

/// Whether Keras's TF backend builds a pool longer than its input for this adaptive pooling
/// layer (`AdaptiveMaxPoolingND` or `AdaptiveAveragePoolingND`) on an input of this shape:
/// the second window, `ceil(n / output_size) + 1`, exceeds some pooled axis of known length
/// `n`. Graph shape inference refuses such a pool along any axis
/// (`crashes/mode-mismatch-AdaptiveMaxPooling1D-graph-window-exceeds-input`); the float32
/// crash needs it along the last one ([`Trigger::AdaptiveMaxPoolingWindowExceedsInput`]).
/// Average pooling never crashes: only oneDNN's max pooling divides by zero.
pub fn adaptive_window_exceeds_input(layer: &Layer, input: &[Option<usize>]) -> bool {
    adaptive_over_long(layer, input).is_some_and(|axes| axes.into_iter().any(|a| a == Some(true)))
}

/// For each pooled axis of an adaptive pooling layer, in order, whether its second window
/// is longer than the axis (`None` where the length is unknown); `None` for another class,
/// an input of another rank than the class pools, or an `output_size` that is not a
/// non-negative int or a list of them. An output size of 0 is never over-long (the layer
/// refuses it).
fn adaptive_over_long(layer: &Layer, input: &[Option<usize>]) -> Option<Vec<Option<bool>>> {
    let class = layer.class_name.as_str();
    if !(class.starts_with("Adaptive") && class.contains("Pooling")) {
        return None;
    }
    let n = ["1D", "2D", "3D"].iter().position(|r| class.ends_with(r))? + 1;
    if input.len() != n + 2 {
        return None;
    }
    let sizes: Vec<u64> = match layer.config.get("output_size")? {
        Value::Number(k) => k.as_u64().map(|k| vec![k; n]).unwrap_or_default(),
        Value::Array(ks) => ks.iter().filter_map(Value::as_u64).collect(),
        _ => return None,
    };
    let axes = spatial_axes(layer, n);
    Some(
        axes.zip(&sizes)
            .map(|(axis, &out)| {
                input[axis].map(|len| out > 0 && (len as u64).div_ceil(out) >= len as u64)
            })
            .collect(),
    )
}

/// The axes of the `n` spatial dimensions of a pooling layer's rank-`n + 2` input.
fn spatial_axes(layer: &Layer, n: usize) -> std::ops::Range<usize> {
    match layer.config.get("data_format").and_then(Value::as_str) {
        Some("channels_first") => 2..n + 2,
        _ => 1..n + 1,
    }
}

/// What TF's `valid` max pooling does along one axis with window `k` and stride `s` on a
/// length `n`: see [`triggered_by`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValidWindow {
    /// `k <= n`: at least one window.
    Fits,
    /// `s <= k - n < 2s`: no window, and no error.
    Empty,
    /// Any other `k > n`: an error before the kernel runs.
    Raises,
}

fn valid_window(k: usize, s: usize, n: usize) -> ValidWindow {
    match k.checked_sub(n) {
        None | Some(0) => ValidWindow::Fits,
        Some(d) if d >= s && d < 2 * s => ValidWindow::Empty,
        Some(_) => ValidWindow::Raises,
    }
}

/// Whether `MaxPoolingND` on an input of this shape (when known) meets the oneDNN crash.
fn max_pool_window_exceeds(layer: &Layer, input: Option<&[Option<usize>]>) -> bool {
    let class = layer.class_name.as_str();
    let Some(n) = ["1D", "2D", "3D"]
        .iter()
        .position(|r| class.ends_with(r))
        .map(|i| i + 1)
    else {
        return false;
    };
    // Keras's arguments: an int or a list of `n` positive ints; `strides` defaults (null) to
    // the pool, the pool to 2. Anything else makes an invalid layer, which never runs.
    let ints = |key: &str| -> Option<Option<Vec<usize>>> {
        let v = match layer.config.get(key) {
            None | Some(Value::Null) => return Some(None),
            Some(Value::Number(k)) => vec![usize::try_from(k.as_u64()?).ok()?; n],
            Some(Value::Array(ks)) => ks
                .iter()
                .map(|k| k.as_u64().and_then(|k| usize::try_from(k).ok()))
                .collect::<Option<_>>()?,
            Some(_) => return None,
        };
        (v.len() == n && v.iter().all(|&k| k > 0)).then_some(Some(v))
    };
    let (Some(pool), Some(strides)) = (ints("pool_size"), ints("strides")) else {
        return false;
    };
    let pool = pool.unwrap_or_else(|| vec![2; n]);
    let strides = strides.unwrap_or_else(|| pool.clone());
    let valid = match layer.config.get("padding") {
        None => true,
        Some(p) => p.as_str() == Some("valid"),
    };
    if !valid {
        return false;
    }
    let Some(x) = input else {
        return pool[n - 1] > strides[n - 1];
    };
    if x.len() != n + 2 || x.contains(&Some(0)) {
        return false;
    }
    let lengths: Vec<Option<usize>> = spatial_axes(layer, n).map(|a| x[a]).collect();
    let last = match lengths[n - 1] {
        Some(len) => valid_window(pool[n - 1], strides[n - 1], len) == ValidWindow::Empty,
        None => pool[n - 1] > strides[n - 1],
    };
    last && (0..n - 1).all(|a| {
        lengths[a].is_none_or(|len| valid_window(pool[a], strides[a], len) != ValidWindow::Raises)
    })
}

/// The top-level layers of `model` that trigger a kept bug, by position, with the bug. A
/// layer counts when some call of it does, on the shapes `analysis` has for that call
/// (conservatively when there is no analysis, or it lacks the call).
pub fn in_model(model: &Model, analysis: Option<&ModelAnalysis>) -> Vec<(usize, Trigger)> {
    model
        .layers
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_input())
        .filter_map(|(li, _)| of_layer(model, analysis, li).map(|bug| (li, bug)))
        .collect()
}

/// The kept bug the model's layer `li` meets, if any: from its config and each call's first
/// input shape ([`triggered_by`]; unknown where the analysis lacks a call per node), then
/// from what the analysis says of a call's masks and shapes.
pub fn of_layer(model: &Model, analysis: Option<&ModelAnalysis>, li: usize) -> Option<Trigger> {
    let layer = &model.layers[li];
    let calls: Vec<&CheckedCall> = analysis
        .map(|a| a.calls.iter().filter(|c| c.layer == li).collect())
        .unwrap_or_default();
    let shapes: Vec<Option<&[Option<usize>]>> =
        if analysis.is_some() && calls.len() == layer.nodes.len().max(1) {
            calls
                .iter()
                .map(|c| c.input_shapes.first().map(Vec::as_slice))
                .collect()
        } else {
            vec![None]
        };
    shapes
        .into_iter()
        .find_map(|s| triggered_by(layer, s))
        .or_else(|| {
            let analysis = analysis?;
            calls
                .iter()
                .find_map(|c| of_analysed_call(model, analysis, c))
        })
}

/// The kept bug only a call's analysis shows: the masks its inputs carry, or all of its
/// input shapes.
fn of_analysed_call(
    model: &Model,
    analysis: &ModelAnalysis,
    call: &CheckedCall,
) -> Option<Trigger> {
    let layer = &model.layers[call.layer];
    match layer.class_name.as_str() {
        "Attention" | "AdditiveAttention" => {
            mixed_attention_masks(model, analysis, call).then_some(Trigger::AttentionMixedMasks)
        }
        "Concatenate" => {
            let axis = layer.config.get("axis").map_or(Some(-1), Value::as_i64)?;
            concatenate_build_index_error(axis, &call.input_shapes)
                .then_some(Trigger::ConcatenateSqueezedAxisIndexError)
        }
        "MultiHeadAttention" => matches!(call.input_shapes.as_slice(),
                [query, value, ..] if query.last() != value.last())
        .then_some(Trigger::MhaQueryValueFeatureSizes),
        _ => None,
    }
}

/// Whether Keras before 3.7's `Concatenate(axis).build` raises `IndexError` on these input
/// shapes ([`Trigger::ConcatenateSqueezedAxisIndexError`]). For each shape it walks the
/// original indices from 1 and deletes each length-1 axis but the concatenation axis
/// (`axis` modulo the rank) from the shrinking list, which fails once an index is past its
/// end; then, where the list is longer than `axis` as written (always, for a negative one),
/// it deletes the entry at `axis` (negative from the end), which fails outside the list.
/// On `(None, 1, 1)`, `axis=0` fails at index 2; on `(None, 7, 1, 1)`, `axis=1` at index 3.
pub fn concatenate_build_index_error(axis: i64, shapes: &[Vec<Option<usize>>]) -> bool {
    shapes.iter().any(|shape| {
        let rank = shape.len() as i64;
        if rank == 0 {
            return false;
        }
        let concat_axis = axis.rem_euclid(rank) as usize;
        let mut reduced = shape.clone();
        for (a, d) in shape.iter().enumerate().skip(1) {
            if a != concat_axis && *d == Some(1) {
                if a >= reduced.len() {
                    return true;
                }
                reduced.remove(a);
            }
        }
        let len = reduced.len() as i64;
        if len > axis {
            let at = if axis < 0 { axis + len } else { axis };
            if at < 0 || at >= len {
                return true;
            }
        }
        false
    })
}

/// Whether this call of an `Attention` or `AdditiveAttention` gets masks on some of its
/// inputs and none on others ([`Trigger::AttentionMixedMasks`]): the `mask` keyword's
/// tensors where the call passes them, else the masks its inputs carry.
fn mixed_attention_masks(model: &Model, analysis: &ModelAnalysis, call: &CheckedCall) -> bool {
    let masked: Vec<bool> = match &call.mask_inputs {
        Some(given) => (0..call.inputs.len())
            .map(|i| given.get(i).is_some_and(Option::is_some))
            .collect(),
        None => call
            .inputs
            .iter()
            .map(|r| {
                model
                    .layers
                    .iter()
                    .position(|l| l.name == r.layer)
                    .and_then(|p| analysis.call(p, r.node))
                    .and_then(|c| c.output_masks.get(r.index))
                    .is_some_and(Option::is_some)
            })
            .collect(),
    };
    masked.iter().any(|&m| m) && !masked.iter().all(|&m| m)
}

/// Whether a weight over the normalized axes `axis`, laid out in the order written, has
/// another shape than one laid out over the axes sorted by the values as written, on an
/// input of this shape (when known; without it, whether the order written is not sorted).
fn written_layout_differs(axis: Option<&Value>, input: Option<&[Option<usize>]>) -> bool {
    let Some(Value::Array(a)) = axis else {
        return false;
    };
    let Some(written) = a.iter().map(Value::as_i64).collect::<Option<Vec<i64>>>() else {
        return false;
    };
    let mut sorted = written.clone();
    sorted.sort_unstable();
    if sorted == written {
        return false;
    }
    let Some(x) = input else {
        return true;
    };
    let r = x.len() as i64;
    let size = |a: &i64| (-r..r).contains(a).then(|| x[a.rem_euclid(r) as usize]);
    let shape = |axes: &[i64]| axes.iter().map(size).collect::<Vec<_>>();
    shape(&written) != shape(&sorted)
}

/// Whether a scale over the normalized axes `axis` (sorted by the values as written),
/// multiplied as it is, misses those axes of an input of this shape (when known).
fn rms_axis_scale(axis: Option<&Value>, input: Option<&[Option<usize>]>) -> bool {
    let last_only = |a: &Value| match a {
        Value::Array(v) => matches!(v.as_slice(), [x] if x.as_i64() == Some(-1)),
        _ => a.as_i64() == Some(-1),
    };
    let Some(x) = input else {
        return !axis.is_some_and(last_only);
    };
    let values: Option<Vec<i64>> = match axis {
        None => Some(vec![-1]),
        Some(Value::Number(n)) => n.as_i64().map(|a| vec![a]),
        Some(Value::Array(a)) => a.iter().map(Value::as_i64).collect(),
        Some(_) => None,
    };
    let r = x.len() as i64;
    // Axes Keras cannot resolve (not ints, out of range, repeated) make an invalid layer:
    // the conservative answer stands.
    let Some(mut values) = values.filter(|v| {
        !v.is_empty()
            && r > 0
            && v.iter().all(|a| (-r..r).contains(a))
            && (0..v.len()).all(|i| !v[..i].iter().any(|b| b.rem_euclid(r) == v[i].rem_euclid(r)))
    }) else {
        return !axis.is_some_and(last_only);
    };
    values.sort_unstable();
    let k = values.len() as i64;
    values.iter().enumerate().any(|(j, a)| {
        let axis = a.rem_euclid(r);
        let size = x[axis as usize];
        size != Some(1) && axis != r - k + j as i64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keras 3.3.3's own `Concatenate.build`, run on 300 random shapes and axes (ranks 2 to
    /// 5, two equal inputs, lengths 1 to 3), raised `IndexError` on 83; the function agreed on
    /// all of them. A sample of each answer.
    #[test]
    fn concatenate_build_index_error_is_keras_3_3s_build() {
        let shape = |dims: &[usize]| -> Vec<Option<usize>> {
            std::iter::once(None)
                .chain(dims.iter().map(|&d| Some(d)))
                .collect()
        };
        let raises = |axis: i64, dims: &[usize]| {
            concatenate_build_index_error(axis, &[shape(dims), shape(dims)])
        };
        for (axis, dims) in [
            (-3, &[1, 2][..]),
            (2, &[1, 3, 3, 1]),
            (-4, &[1, 1, 2]),
            (-2, &[1]),
            (2, &[1, 2, 1, 1]),
            (-2, &[1, 3, 1]),
            (0, &[1, 3, 3, 1]),
            (0, &[1, 1]),
        ] {
            assert!(raises(axis, dims), "{axis} {dims:?}");
        }
        for (axis, dims) in [
            (-4, &[3, 3, 3, 1][..]),
            (-1, &[1, 2, 3]),
            (-4, &[2, 3, 3]),
            (-1, &[3, 1, 1]),
            (-1, &[1]),
            (3, &[2, 2, 3, 2]),
            (-1, &[3]),
            (0, &[3, 1]),
        ] {
            assert!(!raises(axis, dims), "{axis} {dims:?}");
        }
    }
    use serde_json::json;

    fn rms(axis: Option<Value>) -> Layer {
        let mut config = serde_json::Map::new();
        if let Some(a) = axis {
            config.insert("axis".into(), a);
        }
        Layer {
            name: "rms".into(),
            class_name: "RMSNormalization".into(),
            module: None,
            registered_name: Value::Null,
            config,
            nested: None,
            nodes: vec![],
            extra: Default::default(),
        }
    }

    fn triggers(axis: Value, shape: &[usize]) -> bool {
        let mut x: Vec<Option<usize>> = vec![None];
        x.extend(shape.iter().map(|&d| Some(d)));
        triggered_by(&rms(Some(axis)), Some(&x)).is_some()
    }

    /// Measured with Keras 3.15.1 on TF 2.21 (float64), against `x·rsqrt(mean(x²) + ε)`
    /// scaled along the normalized axes:
    /// ```python
    /// layer = keras.layers.RMSNormalization(axis=axis, dtype="float64")
    /// layer.build(shape); layer.set_weights([random(layer.scale.shape)])
    /// layer(x)  # raises, or compare with the expected values and shape
    /// ```
    #[test]
    fn rms_normalization_triggers_where_keras_scales_the_wrong_axes() {
        // Correct in Keras.
        assert!(!triggers(json!(2), &[3, 4]));
        assert!(!triggers(json!([2]), &[3, 4]));
        assert!(!triggers(json!([1, 2]), &[3, 4]));
        assert!(!triggers(json!([2, 1]), &[3, 4]));
        assert!(!triggers(json!([-2, -1]), &[3, 4]));
        assert!(!triggers(json!(1), &[1, 4]));
        assert!(!triggers(json!([1, 2]), &[3, 1]));
        assert!(!triggers(json!([1, 3]), &[1, 4, 5]));
        // Raises (InvalidArgumentError in the multiplication).
        assert!(triggers(json!(1), &[3, 4]));
        assert!(triggers(json!([1, -1]), &[3, 4]));
        assert!(triggers(json!([1, 3]), &[3, 4, 5]));
        assert!(triggers(json!([1, -1]), &[3, 1, 5]));
        // Another shape than declared: (2, 3, 3) for (2, 3, 1).
        assert!(triggers(json!(1), &[3, 1]));
        assert!(triggers(json!([1, 3]), &[3, 1, 5]));
        // Keras's order is that of the values as written: `[1, -1]` sorts to `[-1, 1]`, a
        // scale of shape (4, 4) laid out transposed (counted even where the transposition
        // happens to agree with the reference).
        assert!(triggers(json!([1, -1]), &[4, 4]));
    }

    /// Measured with Keras 3.3.3 on TF 2.16.2 (float64), gamma laid out over the sorted axes
    /// as a case gives it, against `x·rsqrt(var(x) + ε)` scaled along the normalized axes:
    /// ```python
    /// layer = keras.layers.LayerNormalization(axis=axis, rms_scaling=True, dtype="float64")
    /// layer.build(shape); layer.set_weights([random(sorted_axes_shape)])
    /// layer(x)  # raises, or compare with the expected values and shape
    /// ```
    /// Axes written unsorted over axes of different lengths (`[2, 1]` on `(b, 3, 4)`) make
    /// `set_weights` refuse first, a kept limitation of its own.
    #[test]
    fn layer_normalization_with_rms_scaling_triggers_where_keras_3_3_scales_the_wrong_axes() {
        let layer_norm = |axis: Value, shape: &[usize], rms_scaling: bool| {
            let mut l = rms(Some(axis));
            l.class_name = "LayerNormalization".into();
            l.config.insert("rms_scaling".into(), json!(rms_scaling));
            let mut x: Vec<Option<usize>> = vec![None];
            x.extend(shape.iter().map(|&d| Some(d)));
            triggered_by(&l, Some(&x))
        };
        let triggers = |axis: Value, shape: &[usize]| {
            layer_norm(axis, shape, true) == Some(Trigger::LayerNormRmsGammaNotTrailing)
        };
        // Correct in Keras 3.3.3.
        for (axis, shape) in [
            (json!(2), &[3, 4][..]),
            (json!([2]), &[3, 4]),
            (json!([1, 2]), &[3, 4]),
            (json!([-2, -1]), &[3, 4]),
            (json!(1), &[1, 4]),
            (json!([1, 2]), &[3, 1]),
            (json!([1, 3]), &[1, 4, 5]),
        ] {
            assert!(!triggers(axis.clone(), shape), "{axis} {shape:?}");
        }
        // Raises InvalidArgumentError; another shape than declared; wrong values.
        for (axis, shape) in [
            (json!(1), &[3, 4][..]),
            (json!([1, 3]), &[3, 4, 5]),
            (json!([-3, -2]), &[12, 7, 1]),
            (json!(1), &[3, 1]),
            (json!([1, 3]), &[3, 1, 5]),
            (json!(1), &[4, 4]),
            (json!(-2), &[5, 5]),
        ] {
            assert!(triggers(axis.clone(), shape), "{axis} {shape:?}");
        }
        // Without rms_scaling, Keras 3.3.3 broadcasts gamma itself.
        assert_eq!(layer_norm(json!(1), &[3, 4], false), None);
        // Axes written unsorted over axes of different lengths: set_weights refuses the case's
        // gamma first (a kept limitation of its own); over equal lengths the case's gamma loads
        // and multiplies as for sorted axes.
        assert_eq!(
            layer_norm(json!([2, 1]), &[3, 4], true),
            Some(Trigger::LayerNormRmsWeightLayout)
        );
        assert_eq!(
            layer_norm(json!([1, -1]), &[3, 1, 5], true),
            Some(Trigger::LayerNormRmsWeightLayout)
        );
        assert!(triggers(json!([1, -1]), &[4, 4]));
        assert_eq!(layer_norm(json!([2, 1]), &[4, 4], true), None);
    }

    /// The kept case of `unexpected-rejection-MultiHeadAttention-query-value-feature-sizes`
    /// (Keras 3.3.3 refuses it); with the value as wide as the query, no trigger.
    #[test]
    fn a_multi_head_attention_of_other_query_and_value_sizes_triggers() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../crashes/unexpected-rejection-MultiHeadAttention-query-value-feature-sizes/case.case.json"
        );
        let case = crate::Case::read(path).unwrap();
        let analysis = crate::check(&case).unwrap();
        let found = |case: &crate::Case, analysis: &ModelAnalysis| {
            in_model(&case.model, Some(analysis))
                .iter()
                .any(|(_, t)| *t == Trigger::MhaQueryValueFeatureSizes)
        };
        assert!(found(&case, &analysis));
        // The value (an input of shape (None, 2, 1)) as wide as the query's 4.
        let text = std::fs::read_to_string(path).unwrap();
        let mut json: Value = serde_json::from_str(&text).unwrap();
        json["model"]["layers"][1]["config"]["batch_shape"] = serde_json::json!([null, 2, 4]);
        json["model"]["layers"][2]["inbound_nodes"][0]["args"][1]["config"]["shape"] =
            serde_json::json!([null, 2, 4]);
        json["inputs"][1] = serde_json::json!({"shape": [2, 2, 4], "data": vec![0.0; 16]});
        // The value projection's kernel would widen too: the layer draws its own.
        json["weights"] = serde_json::json!({});
        let same = crate::Case::from_json_str(&json.to_string(), "same.case.json").unwrap();
        let same_analysis = crate::check(&same).unwrap();
        assert!(!found(&same, &same_analysis));
    }

    #[test]
    fn without_a_shape_only_the_last_axis_written_as_minus_one_is_safe() {
        let wide = |axis: Option<Value>| triggered_by(&rms(axis), None);
        assert_eq!(wide(Some(json!(-1))), None);
        assert_eq!(wide(Some(json!([-1]))), None);
        assert_eq!(wide(Some(json!(2))), Some(Trigger::RmsAxesNotTrailing));
        assert_eq!(
            wide(Some(json!([-2, -1]))),
            Some(Trigger::RmsAxesNotTrailing)
        );
        // A missing axis counts too (a serialized layer always writes it).
        assert_eq!(wide(None), Some(Trigger::RmsAxesNotTrailing));
        // With a shape, a missing axis is Keras's default, -1.
        assert_eq!(
            triggered_by(&rms(None), Some(&[None, Some(3), Some(4)])),
            None
        );
    }

    #[test]
    fn with_a_shape_the_answer_never_widens_the_conservative_one() {
        let axes = [
            json!(-1),
            json!([-1]),
            json!(1),
            json!(2),
            json!(3),
            json!([1, 2]),
            json!([-1, 1]),
            json!([2, -2]),
            json!([-1, -1]),
            json!([1, 2, 3]),
            json!([0]),
            json!("x"),
        ];
        let shapes: [&[usize]; 4] = [&[3], &[3, 4], &[1, 4], &[3, 1, 5]];
        for axis in &axes {
            for s in shapes {
                if triggers(axis.clone(), s) {
                    assert!(
                        triggered_by(&rms(Some(axis.clone())), None).is_some(),
                        "{axis} {s:?}"
                    );
                }
            }
        }
        // Invalid axes keep the conservative answer.
        assert!(triggers(json!([-1, -1]), &[3, 4]));
        assert!(triggers(json!(3), &[3, 4]));
        assert!(!triggers(json!(-1), &[3, 4]));
    }

    fn pooling(class: &str, config: Value) -> Layer {
        Layer {
            class_name: class.into(),
            config: config.as_object().unwrap().clone(),
            ..rms(None)
        }
    }

    /// `class` with `config` on a batch of 2 of this shape (`None`: unknown length).
    fn pool_triggers(class: &str, config: Value, shape: &[Option<usize>]) -> Option<Trigger> {
        let mut x: Vec<Option<usize>> = vec![Some(2)];
        x.extend(shape);
        triggered_by(&pooling(class, config), Some(&x))
    }

    /// Measured with Keras 3.15.1 on TF 2.21, float32, each call in a child process (SIGFPE
    /// kills it):
    /// ```python
    /// keras.layers.AdaptiveMaxPooling2D((2, 1))(tf.ones((2, 4, 4, 3)))  # killed by SIGFPE
    /// ```
    #[test]
    fn adaptive_max_pooling_crashes_where_the_last_axis_window_exceeds_it() {
        let crash = Some(Trigger::AdaptiveMaxPoolingWindowExceedsInput);
        let max1 = |out: Value, len: usize| {
            pool_triggers(
                "AdaptiveMaxPooling1D",
                json!({"output_size": out}),
                &[Some(len), Some(3)],
            )
        };
        // Crashes.
        assert_eq!(max1(json!(1), 4), crash);
        assert_eq!(max1(json!(1), 3), crash);
        assert_eq!(max1(json!(3), 1), crash);
        assert_eq!(max1(json!([1]), 7), crash);
        // Runs: ceil(n / out) < n.
        assert_eq!(max1(json!(2), 4), None);
        assert_eq!(max1(json!(3), 2), None);
        let s = |d: &[usize]| d.iter().map(|&d| Some(d)).collect::<Vec<_>>();
        let max2 = |out: Value, fmt: &str, shape: &[usize]| {
            pool_triggers(
                "AdaptiveMaxPooling2D",
                json!({"output_size": out, "data_format": fmt}),
                &s(shape),
            )
        };
        // Only the last spatial axis counts: (1, 2) on 4×4 runs, (2, 1) crashes; a 1×4
        // channels_first input pooled to 2×2 runs, 4×1 channels_last to 3×3 crashes.
        assert_eq!(max2(json!([1, 2]), "channels_last", &[4, 4, 3]), None);
        assert_eq!(max2(json!([2, 1]), "channels_last", &[4, 4, 3]), crash);
        assert_eq!(max2(json!(2), "channels_last", &[4, 4, 3]), None);
        assert_eq!(max2(json!(2), "channels_first", &[3, 1, 4]), None);
        assert_eq!(max2(json!(3), "channels_last", &[4, 1, 3]), crash);
        let max3 = |out: Value, shape: &[usize]| {
            pool_triggers(
                "AdaptiveMaxPooling3D",
                json!({"output_size": out}),
                &s(shape),
            )
        };
        assert_eq!(max3(json!([2, 1, 2]), &[4, 4, 4, 3]), None);
        assert_eq!(max3(json!([1, 2, 2]), &[4, 4, 4, 3]), None);
        assert_eq!(max3(json!([2, 2, 1]), &[4, 4, 4, 3]), crash);
        assert_eq!(max3(json!(2), &[4, 4, 1, 3]), crash);
        assert_eq!(max3(json!(2), &[4, 5, 6, 3]), None);
        // Average pooling runs (its eager kernel returns the empty pool): no crash, though
        // the over-long pool is still what graph tracing refuses.
        let avg = pooling("AdaptiveAveragePooling1D", json!({"output_size": 1}));
        let x = [Some(2), Some(7), Some(3)];
        assert_eq!(triggered_by(&avg, Some(&x)), None);
        assert!(adaptive_window_exceeds_input(&avg, &x));
        // An unknown length could be 1; so could any length without a shape.
        assert_eq!(max1(json!(2), 4), None);
        assert_eq!(
            pool_triggers(
                "AdaptiveMaxPooling1D",
                json!({"output_size": 2}),
                &[None, Some(3)]
            ),
            crash
        );
        let two = pooling("AdaptiveMaxPooling1D", json!({"output_size": 2}));
        assert_eq!(triggered_by(&two, None), crash);
    }

    #[test]
    fn adaptive_windows_exceed_an_input_axis_where_ceil_reaches_its_length() {
        let over = |class: &str, config: Value, shape: &[Option<usize>]| {
            adaptive_window_exceeds_input(&pooling(class, config), shape)
        };
        let avg2 = json!({"output_size": [4, 3], "data_format": "channels_first"});
        let x = [Some(2), Some(7), Some(3), Some(1)];
        assert!(over("AdaptiveAveragePooling2D", avg2.clone(), &x));
        assert!(!over(
            "AdaptiveAveragePooling2D",
            json!({"output_size": [4, 3]}),
            &x
        ));
        // Unknown lengths, another rank, another class: no.
        assert!(!over(
            "AdaptiveMaxPooling1D",
            json!({"output_size": 1}),
            &[None, None, Some(3)]
        ));
        assert!(!over(
            "AdaptiveMaxPooling2D",
            json!({"output_size": 1}),
            &[None, Some(7), Some(3)]
        ));
        assert!(!over(
            "MaxPooling1D",
            json!({"pool_size": 1}),
            &[None, Some(7), Some(3)]
        ));
    }

    /// Measured with TF 2.21, float32, each call in a child process:
    /// ```python
    /// tf.nn.max_pool(tf.ones((1, n, 2)), ksize=k, strides=s, padding="VALID")
    /// # (n, k, s) = (5, 6, 1), (4, 6, 2), (3, 6, 2), (1, 2, 1), (1, 3, 2): killed by SIGFPE
    /// # (5, 6, 6), (5, 6, 2), (1, 2, 2), (2, 4, 3): AbortedError
    /// # (1, 6, 1), (2, 6, 2): InvalidArgumentError
    /// tf.nn.max_pool(tf.ones((1, 5, 8, 2)), ksize=(6, 1), strides=1, padding="VALID")  # (1, 0, 8, 2)
    /// tf.nn.max_pool(tf.ones((1, 8, 5, 2)), ksize=(1, 6), strides=1, padding="VALID")  # SIGFPE
    /// ```
    #[test]
    fn max_pooling_crashes_where_the_last_axis_leaves_no_window() {
        let crash = Some(Trigger::MaxPoolingWindowExceedsInput);
        let max1 = |k: usize, s: Value, n: usize| {
            pool_triggers(
                "MaxPooling1D",
                json!({"pool_size": k, "strides": s, "padding": "valid"}),
                &[Some(n), Some(1)],
            )
        };
        for (n, k, s) in [
            (5, 6, 1),
            (4, 6, 2),
            (3, 6, 2),
            (1, 2, 1),
            (1, 3, 2),
            (2, 5, 2),
        ] {
            assert_eq!(max1(k, json!(s), n), crash, "{n} {k} {s}");
        }
        for (n, k, s) in [
            (6, 6, 1),
            (5, 6, 6),
            (5, 6, 2),
            (1, 2, 2),
            (2, 4, 3),
            (1, 6, 1),
        ] {
            assert_eq!(max1(k, json!(s), n), None, "{n} {k} {s}");
        }
        // The default strides are the pool: never a crash.
        assert_eq!(max1(6, Value::Null, 5), None);
        // `same` never crashes.
        let same = json!({"pool_size": 6, "strides": 1, "padding": "same"});
        assert_eq!(
            pool_triggers("MaxPooling1D", same, &[Some(5), Some(1)]),
            None
        );

        let max2 = |k: Value, s: Value, fmt: &str, shape: &[Option<usize>]| {
            pool_triggers(
                "MaxPooling2D",
                json!({"pool_size": k, "strides": s, "padding": "valid", "data_format": fmt}),
                shape,
            )
        };
        let last = "channels_last";
        // The last axis decides; an empty pool along another axis runs.
        assert_eq!(
            max2(json!([6, 1]), json!(1), last, &[Some(5), Some(8), Some(2)]),
            None
        );
        assert_eq!(
            max2(json!([1, 6]), json!(1), last, &[Some(8), Some(5), Some(2)]),
            crash
        );
        assert_eq!(
            max2(
                json!([5, 6]),
                json!([2, 1]),
                last,
                &[Some(3), Some(5), Some(2)]
            ),
            crash
        );
        // Another axis that raises comes first.
        assert_eq!(
            max2(
                json!([6, 6]),
                json!([6, 1]),
                last,
                &[Some(5), Some(5), Some(2)]
            ),
            None
        );
        assert_eq!(
            max2(json!([6, 6]), json!(1), last, &[Some(1), Some(5), Some(2)]),
            None
        );
        // channels_first: the same axes, after the channels.
        let first = "channels_first";
        assert_eq!(
            max2(json!([1, 6]), json!(1), first, &[Some(2), Some(4), Some(5)]),
            crash
        );
        assert_eq!(
            max2(json!([6, 1]), json!(1), first, &[Some(2), Some(5), Some(4)]),
            None
        );
        // An empty input never reaches the kernel.
        assert_eq!(
            max2(json!([1, 6]), json!(1), last, &[Some(0), Some(5), Some(2)]),
            None
        );
        assert_eq!(
            max2(json!([1, 6]), json!(1), last, &[Some(4), Some(5), Some(0)]),
            None
        );
        // 3-D: likewise the last axis.
        let max3 = |k: Value, s: Value, shape: &[usize]| {
            let shape: Vec<_> = shape.iter().map(|&d| Some(d)).collect();
            pool_triggers(
                "MaxPooling3D",
                json!({"pool_size": k, "strides": s}),
                &shape,
            )
        };
        assert_eq!(max3(json!([1, 1, 6]), json!(1), &[8, 8, 5, 2]), crash);
        assert_eq!(max3(json!([6, 1, 1]), json!(1), &[5, 8, 8, 2]), None);
        assert_eq!(max3(json!([3, 1, 6]), json!(1), &[2, 4, 5, 2]), crash);
        assert_eq!(
            max3(json!([3, 1, 6]), json!([3, 1, 1]), &[2, 4, 5, 2]),
            None
        );

        // Unknown lengths: the last counts when some length crashes (a window longer than
        // the stride); another never stops it.
        let unknown = |k: usize, s: usize| {
            pool_triggers(
                "MaxPooling1D",
                json!({"pool_size": k, "strides": s}),
                &[None, Some(1)],
            )
        };
        assert_eq!(unknown(2, 1), crash);
        assert_eq!(unknown(3, 2), crash);
        assert_eq!(unknown(2, 2), None);
        assert_eq!(unknown(1, 3), None);
        assert_eq!(
            max2(json!([6, 2]), json!(1), last, &[None, None, Some(2)]),
            crash
        );
        let default = pooling("MaxPooling1D", json!({"pool_size": 3, "strides": 1}));
        assert_eq!(triggered_by(&default, None), crash);
        let strided = pooling("MaxPooling1D", json!({"pool_size": 3, "strides": null}));
        assert_eq!(triggered_by(&strided, None), None);
        // The global pooling reduces the whole axis.
        let global = pooling("GlobalMaxPooling1D", json!({}));
        assert_eq!(
            triggered_by(&global, Some(&[Some(2), Some(1), Some(2)])),
            None
        );
        assert_eq!(triggered_by(&global, None), None);
    }

    #[test]
    fn other_classes_trigger_nothing() {
        let mut l = rms(Some(json!(1)));
        l.class_name = "LayerNormalization".into();
        assert_eq!(triggered_by(&l, None), None);
        assert_eq!(triggered_by(&l, Some(&[None, Some(3), Some(4)])), None);
    }
}
