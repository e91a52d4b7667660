//! The few facts about a case that cannot be data: shape predicates an entry names
//! (`"predicates": ["conv3d-same-window-shifts"]`), each small and tested, and the readers of
//! configs they share.

use oracle::check::{CheckedCall, ModelAnalysis};
use oracle::triggers;
use oracle::{Case, DType};
use serde::Deserialize;
use serde_json::Value;

use crate::entries::Facts;

/// Whether a call's first input is the output of a `ZeroPadding2D` or `ZeroPadding3D`.
pub(crate) fn fed_by_zero_padding(case: &Case, call: &oracle::check::CheckedCall) -> bool {
    call.inputs.first().is_some_and(|r| {
        case.model
            .layer(&r.layer)
            .is_some_and(|l| matches!(l.class_name.as_str(), "ZeroPadding2D" | "ZeroPadding3D"))
    })
}

/// The class of the layer a wrapper's config wraps (`TimeDistributed`, `Bidirectional`).
pub(crate) fn wrapped_class(config: &serde_json::Map<String, Value>) -> Option<&str> {
    config.get("layer")?.get("class_name")?.as_str()
}

/// A config argument given as an int or a list of ints (`kernel_size`, `strides`,
/// `output_size`), as its non-negative entries; empty when absent.
pub(crate) fn config_ints(config: &serde_json::Map<String, Value>, key: &str) -> Vec<u64> {
    match config.get(key) {
        Some(Value::Array(v)) => v.iter().filter_map(Value::as_u64).collect(),
        Some(v) => v.as_u64().into_iter().collect(),
        None => Vec::new(),
    }
}

/// Whether a convolution's dilated kernel (`kernel_size` and `dilation_rate`, ints or lists)
/// is even along some axis.
pub(crate) fn even_dilated_kernel(config: &serde_json::Map<String, Value>) -> bool {
    let (kernel, dilation) = (
        config_ints(config, "kernel_size"),
        config_ints(config, "dilation_rate"),
    );
    kernel.iter().enumerate().any(|(i, &k)| {
        let d = dilation.get(i).or(dilation.first()).copied().unwrap_or(1);
        (k.saturating_sub(1) * d + 1) % 2 == 0
    })
}

/// Whether a layer's `strides` (an int or a list) has a stride above 1.
pub(crate) fn strided(config: &serde_json::Map<String, Value>) -> bool {
    config_ints(config, "strides").iter().any(|&s| s > 1)
}

/// The activation a recurrent class applies where its config leaves `key` (`activation` or
/// `recurrent_activation`) out: Keras's defaults, `tanh` and `sigmoid`.
fn default_activation(class: &str, key: &str) -> Option<&'static str> {
    let recurrent = matches!(
        class,
        "SimpleRNN"
            | "SimpleRNNCell"
            | "GRU"
            | "GRUCell"
            | "LSTM"
            | "LSTMCell"
            | "ConvLSTM1D"
            | "ConvLSTM2D"
            | "ConvLSTM3D"
    );
    match key {
        "activation" if recurrent => Some("tanh"),
        "recurrent_activation" if recurrent && !class.starts_with("SimpleRNN") => Some("sigmoid"),
        _ => None,
    }
}

/// Whether the config of a layer of class `class` (or of a layer nested in it: a wrapped
/// layer, an RNN's cell) names this activation as `activation` or `recurrent_activation`, or
/// leaves one out where the class's default is this activation.
pub(crate) fn uses_activation(class: &str, config: &Value, name: &str) -> bool {
    let named = |a: &Value| {
        a.as_str() == Some(name)
            || a.get("config")
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                == Some(name)
    };
    match config {
        Value::Object(o) => {
            ["activation", "recurrent_activation"]
                .into_iter()
                .any(|k| match o.get(k) {
                    Some(v) => named(v),
                    None => default_activation(class, k) == Some(name),
                })
                || o.values().any(|v| {
                    // A nested layer, `{"class_name": ..., "config": {...}}`, has its own class.
                    match (v.get("class_name").and_then(Value::as_str), v.get("config")) {
                        (Some(inner), Some(c)) if c.is_object() => uses_activation(inner, c, name),
                        _ => uses_activation("", v, name),
                    }
                })
        }
        Value::Array(a) => a.iter().any(|v| uses_activation("", v, name)),
        _ => false,
    }
}

/// Whether a layer's config (or a layer it wraps) is a gated recurrent cell's: it has a
/// `recurrent_activation`.
pub(crate) fn gated(config: &Value) -> bool {
    match config {
        Value::Object(o) => o
            .iter()
            .any(|(k, v)| k == "recurrent_activation" || gated(v)),
        Value::Array(a) => a.iter().any(gated),
        _ => false,
    }
}

/// Whether the layer is a convolution that adds a bias in `channels_first` (the convolutions
/// are the layers with a bias and a data format; a pooling has neither bias nor `use_bias`).
pub(crate) fn channels_first_biased_conv(
    class: &str,
    config: &serde_json::Map<String, Value>,
) -> bool {
    class.contains("Conv")
        && config.get("data_format").and_then(Value::as_str) == Some("channels_first")
        // Keras's default is a bias.
        && config.get("use_bias").and_then(Value::as_bool).unwrap_or(true)
}

/// Whether this layer's bias goes through `ops.add`'s bias_add shortcut onto the wrong axis
/// (see `crashes/mismatch-DepthwiseConv2D-channels-first-bias`).
pub(crate) fn ops_add_bias_shortcut(
    class: &str,
    config: &serde_json::Map<String, Value>,
    call: Option<&oracle::check::CheckedCall>,
) -> bool {
    // `ops.add` takes a bias_add shortcut along the last axis when a vector's length
    // equals that axis: a channels_first bias whose channel count equals the last
    // spatial size.
    let out = call.and_then(|c| c.outputs.first());
    let channels_first_bias = channels_first_biased_conv(class, config)
        && out.is_some_and(|o| o.len() >= 3 && o[1].is_some() && o[1] == o[o.len() - 1]);
    if channels_first_bias {
        return true;
    }
    // EinsumDense adds its bias with `ops.add` too: a bias over an output axis other than
    // the last, as long as the last, takes the same shortcut.
    if class == "EinsumDense" && einsum_bias_off_last_axis(config, call) {
        return true;
    }
    // ... and its NCHW branch: a projection bias of shape (heads, 1) (a key, value or
    // head size of 1) lands on the sequence axis when the sequence is as long as the
    // number of heads.
    if matches!(class, "MultiHeadAttention" | "GroupQueryAttention") {
        let int = |k: &str| config.get(k).and_then(Value::as_u64);
        let size_one = ["key_dim", "value_dim", "head_dim"]
            .iter()
            .any(|k| int(k) == Some(1));
        let heads: Vec<u64> = ["num_heads", "num_query_heads", "num_key_value_heads"]
            .iter()
            .filter_map(|k| int(k))
            .collect();
        let seq_is_heads = call.is_some_and(|c| {
            c.input_shapes.iter().any(|s| {
                s.get(1)
                    .copied()
                    .flatten()
                    .is_some_and(|n| heads.contains(&(n as u64)))
            })
        });
        return size_one && seq_is_heads;
    }
    false
}

/// Whether an EinsumDense call's bias lies along an output axis other than the last whose
/// length equals the last axis's (where `ops.add` takes its bias_add shortcut).
pub(crate) fn einsum_bias_off_last_axis(
    config: &serde_json::Map<String, Value>,
    call: Option<&oracle::check::CheckedCall>,
) -> bool {
    let (Some(equation), Some(bias)) = (
        config.get("equation").and_then(Value::as_str),
        config.get("bias_axes").and_then(Value::as_str),
    ) else {
        return false;
    };
    let Some(out_spec) = equation.split("->").nth(1) else {
        return false;
    };
    let Some(out) = call.and_then(|c| c.outputs.first()) else {
        return false;
    };
    let last = out.last().copied().flatten();
    // Each output label's axis: labels before an ellipsis count from the left, the others
    // from the right.
    let (left, right) = match out_spec.split_once("...") {
        Some((l, r)) => (l, r),
        None => ("", out_spec),
    };
    let right: Vec<char> = right.chars().filter(char::is_ascii_alphabetic).collect();
    // None when an ellipsis ends the output: its last axis carries no bias label.
    let last_label = right.last().copied();
    if bias.is_empty() || last_label.is_some_and(|l| bias.contains(l)) {
        return false;
    }
    let n = out.len();
    let axes = left
        .chars()
        .filter(char::is_ascii_alphabetic)
        .enumerate()
        .map(|(i, l)| (l, i))
        .chain(
            right
                .iter()
                .rev()
                .enumerate()
                .filter_map(|(k, l)| n.checked_sub(k + 1).map(|i| (*l, i))),
        );
    axes.into_iter().any(|(l, i)| {
        bias.contains(l)
            && i + 1 < n
            && out
                .get(i)
                .copied()
                .flatten()
                .is_some_and(|d| d > 1 && Some(d) == last)
    })
}

/// Whether TF's Eigen `Conv3D` kernel (float64/float16; Keras sends `channels_first` and
/// grouped 3-D convolutions through XLA instead) shifts a `same` window: on some spatial
/// axis of length `n`, `(ceil(n / s) - 1)·s + (k - 1)·d + 1 - n` is -2 or less, which that
/// kernel halves (towards zero) into a negative leading pad instead of clamping at 0.
pub(crate) fn conv3d_same_window_shifts(
    config: &serde_json::Map<String, Value>,
    inputs: &[oracle::case::Dims],
) -> bool {
    if config.get("padding").and_then(Value::as_str) != Some("same")
        || config.get("data_format").and_then(Value::as_str) == Some("channels_first")
        || config
            .get("groups")
            .and_then(Value::as_u64)
            .is_some_and(|g| g > 1)
    {
        return false;
    }
    let Some(x) = inputs.first().filter(|x| x.len() == 5) else {
        return false;
    };
    let ones = || Some(vec![1; 3]);
    let (Some(k), Some(s), Some(d)) = (
        config
            .get("kernel_size")
            .and(int_triple(config, "kernel_size", ones())),
        int_triple(config, "strides", ones()),
        int_triple(config, "dilation_rate", ones()),
    ) else {
        return false;
    };
    (0..3).any(|a| {
        let (Some(&k), Some(&s), Some(&d), Some(Some(n))) =
            (k.get(a), s.get(a), d.get(a), x.get(a + 1))
        else {
            return false;
        };
        same_pad_shifts(*n as i64, k, s, d)
    })
}

/// Whether an unclamped `same` padding shifts the window on an axis of length `n` (window
/// `k`, stride `s`, dilation `d`): `(ceil(n / s) - 1)·s + (k - 1)·d + 1 - n` is -2 or less,
/// which Eigen's 3-D kernels halve (towards zero) into a negative leading pad.
fn same_pad_shifts(n: i64, k: i64, s: i64, d: i64) -> bool {
    if s < 1 || n < 1 {
        return false;
    }
    let out = (n + s - 1) / s;
    (out - 1) * s + (k - 1) * d + 1 - n <= -2
}

/// A 3-D argument as Keras accepts it (an int or a list of three), `default` where the config
/// leaves it out or null.
fn int_triple(
    config: &serde_json::Map<String, Value>,
    key: &str,
    default: Option<Vec<i64>>,
) -> Option<Vec<i64>> {
    match config.get(key) {
        None | Some(Value::Null) => default,
        Some(Value::Number(n)) => n.as_i64().map(|n| vec![n; 3]),
        Some(Value::Array(a)) => a.iter().map(Value::as_i64).collect(),
        _ => None,
    }
}

/// Whether TF's Eigen 3-D pooling kernel (float32 where the oneDNN kernels are off) shifts a
/// `same` window of a `MaxPooling3D`/`AveragePooling3D`, as [`conv3d_same_window_shifts`]
/// does for `Conv3D` (Keras transposes `channels_first` pooling to `channels_last`, so both
/// formats go through it).
pub(crate) fn pool3d_same_window_shifts(
    config: &serde_json::Map<String, Value>,
    inputs: &[oracle::case::Dims],
) -> bool {
    if config.get("padding").and_then(Value::as_str) != Some("same") {
        return false;
    }
    let Some(x) = inputs.first().filter(|x| x.len() == 5) else {
        return false;
    };
    let spatial = if config.get("data_format").and_then(Value::as_str) == Some("channels_first") {
        &x[2..5]
    } else {
        &x[1..4]
    };
    // `pool_size` defaults to 2 and `strides` to `pool_size`.
    let Some(k) = int_triple(config, "pool_size", Some(vec![2; 3])) else {
        return false;
    };
    let Some(s) = int_triple(config, "strides", Some(k.clone())) else {
        return false;
    };
    (0..3).any(|a| match (k.get(a), s.get(a), spatial.get(a)) {
        (Some(&k), Some(&s), Some(Some(n))) => same_pad_shifts(*n as i64, k, s, 1),
        _ => false,
    })
}

/// The shape of the mask a call's first input carries, as the reference found it (`None`
/// when unmasked, or when the mask is passed as a keyword argument).
pub(crate) fn received_mask(
    case: &Case,
    analysis: &ModelAnalysis,
    call: &oracle::check::CheckedCall,
) -> Option<Vec<usize>> {
    if call.mask_inputs.is_some() {
        return None;
    }
    let r = call.inputs.first()?;
    let li = case.model.layers.iter().position(|l| l.name == r.layer)?;
    let producer = analysis
        .calls
        .iter()
        .find(|c| c.layer == li && c.node == r.node)?;
    producer.output_masks.get(r.index)?.clone()
}

/// [`triggers::adaptive_window_exceeds_input`] on a call's first input.
pub(crate) fn adaptive_window_exceeds_input(
    layer: &oracle::case::Layer,
    inputs: &[oracle::case::Dims],
) -> bool {
    inputs
        .first()
        .is_some_and(|x| triggers::adaptive_window_exceeds_input(layer, x))
}

/// Whether some input or weight of the case holds NaN or an infinity.
pub(crate) fn case_nonfinite(case: &Case) -> bool {
    case.inputs
        .iter()
        .map(|t| &t.data)
        .chain(case.weights.values().flatten().map(|w| &w.data))
        .any(|d| d.iter().any(|x| !x.is_finite()))
}

/// A shape predicate an entry names. Each reads the verdict's layer and the reference's
/// analysis of its first call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Predicate {
    /// TF's float64/float16 Eigen `Conv3D` kernel shifts a `same` window (see
    /// [`conv3d_same_window_shifts`]).
    Conv3dSameWindowShifts,
    /// A 3-D pooling's `same` window that Eigen's kernel shifts
    /// ([`pool3d_same_window_shifts`]).
    Pool3dSameWindowShifts,
    /// The layer's bias goes through `ops.add`'s bias_add shortcut onto the wrong axis.
    OpsAddBiasShortcut,
    /// A merge layer whose inputs have different shapes (they broadcast).
    BroadcastingMerge,
    /// The layer's first input is a `ZeroPadding2D`/`ZeroPadding3D` output.
    FedByZeroPadding,
    /// A mask whose steps axis has length 1 reaches a pooling over more than one step.
    MaskStepsBroadcast,
    /// A convolution whose dilated kernel is even along some axis.
    EvenDilatedKernel,
    /// Some stride is above 1.
    Strided,
    /// Some input of the case has a batch of two or more.
    Batched,
    /// Some input of the case has an empty batch.
    EmptyBatch,
    /// An input of the verdict's layer, on the shapes of its first call, has an empty axis
    /// other than the batch axis.
    EmptyAxis,
    /// The verdict's layer is an `RMSNormalization` whose normalized axes (in the order
    /// written) are not the trailing ones, on the shapes of its call.
    RmsAxesNotTrailing,
    /// Some layer of the model is such an `RMSNormalization`.
    RmsAxesNotTrailingInModel,
    /// The verdict's layer is a `LayerNormalization` with `rms_scaling` whose normalized axes
    /// are not the trailing ones, on the shapes of its call (Keras before 3.4 multiplies by
    /// its `gamma` as it is: `triggers::Trigger::LayerNormRmsGammaNotTrailing`).
    LayerNormRmsGammaNotTrailing,
    /// Some layer of the model is such a `LayerNormalization`.
    LayerNormRmsGammaNotTrailingInModel,
    /// The verdict's layer is a `LayerNormalization` (without `rms_scaling`) or an
    /// `RMSNormalization` whose axes Keras's PyTorch backend hands to torch's
    /// `layer_norm`/`rms_norm` (consecutive once sorted as written) but which are not the
    /// trailing axes of its input, the ones torch normalises.
    NormAxesNotTrailing,
    /// An adaptive pooling whose second window is longer than its input's axis, at the
    /// verdict's layer or at a layer of the class the framework's message says it called.
    AdaptiveWindowExceedsInput,
    /// The layer (or a layer it wraps) is a gated recurrent cell's: it has a
    /// `recurrent_activation`.
    Gated,
    /// The case gives the layer weights (loaded with `set_weights`).
    HasWeights,
    /// The layer's first input is a `Multiply` output.
    FedByMultiply,
    /// Some input of the case holds a `Masking` layer's `mask_value`, or that value rounded
    /// to float32.
    MaskValueInInputs,
    /// An input of the verdict's layer, or an input of the layer that produced one, is also an
    /// input of a `MultiHeadAttention` (whose call clears the masks of the tensors it is
    /// given, for every consumer that runs after it).
    InputSharedWithAttention,
    /// The verdict's layer is a `Concatenate` whose build, as Keras before 3.7 writes it,
    /// deletes past the end of an input's shape (`triggers::concatenate_build_index_error`).
    ConcatenateSqueezedAxisIndexError,
    /// Some `PReLU` of the model shares an axis its input lacks (`shared_axes` holds an axis at
    /// least its input's rank, batch axis included), so its build raises `IndexError`; the
    /// input's rank is read from the call the analysis has of its producer.
    PreluSharedAxisBeyondInputInModel,
}

impl Predicate {
    pub fn name(self) -> &'static str {
        match self {
            Predicate::Conv3dSameWindowShifts => "conv3d-same-window-shifts",
            Predicate::Pool3dSameWindowShifts => "pool3d-same-window-shifts",
            Predicate::OpsAddBiasShortcut => "ops-add-bias-shortcut",
            Predicate::BroadcastingMerge => "broadcasting-merge",
            Predicate::FedByZeroPadding => "fed-by-zero-padding",
            Predicate::MaskStepsBroadcast => "mask-steps-broadcast",
            Predicate::EvenDilatedKernel => "even-dilated-kernel",
            Predicate::Strided => "strided",
            Predicate::Batched => "batched",
            Predicate::EmptyBatch => "empty-batch",
            Predicate::EmptyAxis => "empty-axis",
            Predicate::RmsAxesNotTrailing => "rms-axes-not-trailing",
            Predicate::RmsAxesNotTrailingInModel => "rms-axes-not-trailing-in-model",
            Predicate::LayerNormRmsGammaNotTrailing => "layer-norm-rms-gamma-not-trailing",
            Predicate::LayerNormRmsGammaNotTrailingInModel => {
                "layer-norm-rms-gamma-not-trailing-in-model"
            }
            Predicate::NormAxesNotTrailing => "norm-axes-not-trailing",
            Predicate::AdaptiveWindowExceedsInput => "adaptive-window-exceeds-input",
            Predicate::Gated => "gated",
            Predicate::HasWeights => "has-weights",
            Predicate::FedByMultiply => "fed-by-multiply",
            Predicate::MaskValueInInputs => "mask-value-in-inputs",
            Predicate::InputSharedWithAttention => "input-shared-with-attention",
            Predicate::ConcatenateSqueezedAxisIndexError => "concatenate-squeezed-axis-index-error",
            Predicate::PreluSharedAxisBeyondInputInModel => {
                "prelu-shared-axis-beyond-input-in-model"
            }
        }
    }

    pub(crate) fn holds(self, f: &Facts) -> bool {
        let case = f.case;
        let layer_index = f
            .verdict
            .layer
            .as_deref()
            .and_then(|n| case.model.layers.iter().position(|l| l.name == n));
        let layer = layer_index.map(|i| &case.model.layers[i]);
        let call = first_call(f.analysis, layer_index);
        let batch = |pred: fn(usize) -> bool| {
            case.inputs
                .iter()
                .any(|t| t.data.shape().first().is_some_and(|&b| pred(b)))
        };
        let in_model = |t: triggers::Trigger| {
            triggers::in_model(&case.model, f.analysis)
                .iter()
                .any(|&(_, bug)| bug == t)
        };
        // The verdict's own layer, from its calls.
        let here = |t: triggers::Trigger| {
            layer_index.is_some_and(|i| triggers::of_layer(&case.model, f.analysis, i) == Some(t))
        };
        match self {
            Predicate::Batched => batch(|b| b > 1),
            Predicate::EmptyBatch => batch(|b| b == 0),
            Predicate::EmptyAxis => call.is_some_and(|c| {
                c.input_shapes
                    .iter()
                    .any(|s| s.iter().skip(1).any(|&d| d == Some(0)))
            }),
            Predicate::RmsAxesNotTrailingInModel => in_model(triggers::Trigger::RmsAxesNotTrailing),
            Predicate::RmsAxesNotTrailing => here(triggers::Trigger::RmsAxesNotTrailing),
            Predicate::LayerNormRmsGammaNotTrailingInModel => {
                in_model(triggers::Trigger::LayerNormRmsGammaNotTrailing)
            }
            Predicate::LayerNormRmsGammaNotTrailing => {
                here(triggers::Trigger::LayerNormRmsGammaNotTrailing)
            }
            Predicate::ConcatenateSqueezedAxisIndexError => {
                here(triggers::Trigger::ConcatenateSqueezedAxisIndexError)
            }
            Predicate::AdaptiveWindowExceedsInput => adaptive_window_exceeded(f),
            Predicate::MaskValueInInputs => mask_value_in_inputs(case),
            Predicate::PreluSharedAxisBeyondInputInModel => {
                prelu_shared_axis_beyond_input(case, f.analysis)
            }
            Predicate::InputSharedWithAttention => {
                call.is_some_and(|c| input_shared_with_attention(case, f.analysis, c))
            }
            _ => {
                let Some(l) = layer else {
                    return false;
                };
                let config = &l.config;
                match self {
                    Predicate::Conv3dSameWindowShifts => {
                        call.is_some_and(|c| conv3d_same_window_shifts(config, &c.input_shapes))
                    }
                    Predicate::Pool3dSameWindowShifts => {
                        call.is_some_and(|c| pool3d_same_window_shifts(config, &c.input_shapes))
                    }
                    Predicate::OpsAddBiasShortcut => {
                        ops_add_bias_shortcut(&l.class_name, config, call)
                    }
                    Predicate::BroadcastingMerge => {
                        call.is_some_and(|c| c.input_shapes.windows(2).any(|w| w[0] != w[1]))
                    }
                    Predicate::FedByZeroPadding => {
                        call.is_some_and(|c| fed_by_zero_padding(case, c))
                    }
                    Predicate::MaskStepsBroadcast => {
                        mask_steps_broadcast(case, f.analysis, config, call)
                    }
                    Predicate::EvenDilatedKernel => even_dilated_kernel(config),
                    Predicate::NormAxesNotTrailing => call
                        .and_then(|c| c.input_shapes.first())
                        .is_some_and(|x| norm_axes_not_trailing(&l.class_name, config, x.len())),
                    Predicate::Strided => strided(config),
                    Predicate::Gated => gated(&Value::Object(config.clone())),
                    Predicate::HasWeights => {
                        case.weights.get(&l.name).is_some_and(|w| !w.is_empty())
                    }
                    Predicate::FedByMultiply => call.is_some_and(|c| {
                        c.inputs.first().is_some_and(|r| {
                            case.model
                                .layer(&r.layer)
                                .is_some_and(|p| p.class_name == "Multiply")
                        })
                    }),
                    Predicate::Batched
                    | Predicate::EmptyBatch
                    | Predicate::EmptyAxis
                    | Predicate::RmsAxesNotTrailing
                    | Predicate::RmsAxesNotTrailingInModel
                    | Predicate::LayerNormRmsGammaNotTrailing
                    | Predicate::LayerNormRmsGammaNotTrailingInModel
                    | Predicate::AdaptiveWindowExceedsInput
                    | Predicate::MaskValueInInputs
                    | Predicate::InputSharedWithAttention
                    | Predicate::ConcatenateSqueezedAxisIndexError
                    | Predicate::PreluSharedAxisBeyondInputInModel => {
                        unreachable!("handled above")
                    }
                }
            }
        }
    }
}

/// Whether Keras's PyTorch backend normalises other axes than the layer's (see
/// [`Predicate::NormAxesNotTrailing`]) on an input of rank `rank`: it sorts the axes as
/// written and calls torch's fused kernel when they are consecutive, and that kernel takes
/// the trailing axes.
fn norm_axes_not_trailing(
    class: &str,
    config: &serde_json::Map<String, Value>,
    rank: usize,
) -> bool {
    let fused = match class {
        "LayerNormalization" => !config
            .get("rms_scaling")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        "RMSNormalization" => true,
        _ => false,
    };
    let written: Option<Vec<i64>> = match config.get("axis") {
        None => Some(vec![-1]),
        Some(Value::Number(n)) => n.as_i64().map(|a| vec![a]),
        Some(Value::Array(a)) => a.iter().map(Value::as_i64).collect(),
        Some(_) => None,
    };
    let r = rank as i64;
    let Some(mut axes) = written.filter(|a| fused && !a.is_empty() && r > 0) else {
        return false;
    };
    axes.sort_unstable();
    if axes.windows(2).any(|w| w[1] - w[0] != 1) {
        return false;
    }
    let k = axes.len() as i64;
    !axes.iter().map(|a| a.rem_euclid(r)).eq((r - k).max(0)..r)
}

/// Whether an input of `call`, or an input of the call that produced one, is a masked tensor
/// that a `MultiHeadAttention` call is also given.
fn input_shared_with_attention(
    case: &Case,
    analysis: Option<&ModelAnalysis>,
    call: &CheckedCall,
) -> bool {
    let Some(a) = analysis else {
        return false;
    };
    let attention_inputs: Vec<&oracle::case::TensorRef> = a
        .calls
        .iter()
        .filter(|c| case.model.layers[c.layer].class_name == "MultiHeadAttention")
        .flat_map(|c| &c.inputs)
        .collect();
    let producer = |r: &oracle::case::TensorRef| {
        a.calls
            .iter()
            .find(|p| case.model.layers[p.layer].name == r.layer && p.node == r.node)
    };
    let shared = |r: &oracle::case::TensorRef| {
        attention_inputs.contains(&r)
            && producer(r)
                .and_then(|p| p.output_masks.get(r.index))
                .is_some_and(Option::is_some)
    };
    call.inputs
        .iter()
        .any(|r| shared(r) || producer(r).is_some_and(|p| p.inputs.iter().any(shared)))
}

/// The first call of layer `index`, as the reference checked it.
fn first_call(analysis: Option<&ModelAnalysis>, index: Option<usize>) -> Option<&CheckedCall> {
    let i = index?;
    analysis?.calls.iter().find(|c| c.layer == i)
}

/// A `GlobalAveragePooling1D` given a mask whose steps axis has length 1 over an input of more
/// than one step: Keras counts the broadcast mask once in its divisor.
fn mask_steps_broadcast(
    case: &Case,
    analysis: Option<&ModelAnalysis>,
    config: &serde_json::Map<String, Value>,
    call: Option<&CheckedCall>,
) -> bool {
    let (Some(a), Some(c)) = (analysis, call) else {
        return false;
    };
    let Some(mask) = received_mask(case, a, c) else {
        return false;
    };
    let steps = if config.get("data_format").and_then(Value::as_str) == Some("channels_first") {
        2
    } else {
        1
    };
    let input_steps = c.input_shapes.first().and_then(|x| x.get(steps).copied());
    mask.get(1) == Some(&1) && input_steps.flatten().is_some_and(|n| n > 1)
}

/// The reference's analysis of the calls an invalid case makes before its first violation,
/// on the inputs' shapes (the declared ones when it has no inputs); `None` when the reference
/// cannot check the model. The matchers take it for the analysis an invalid case lacks: the
/// layers before the violation ran in TF on these shapes.
pub fn calls_before_violation(case: &Case, dtype: DType) -> Option<ModelAnalysis> {
    let shapes = oracle::check::input_shapes(case).ok()?;
    oracle::check::check_prefix(&case.model, &shapes, dtype)
        .ok()
        .map(|(analysis, _)| analysis)
}

/// An adaptive pooling whose second window exceeds its input's axis, at the verdict's layer
/// or, where graph mode names a layer by a suffixed name scope, at a layer of the class the
/// verdict's layer has or the framework's message says it called (`calling X.call()`).
fn adaptive_window_exceeded(f: &Facts) -> bool {
    let case = f.case;
    let named_class = f
        .verdict
        .layer
        .as_deref()
        .and_then(|n| case.model.layer(n))
        .map(|l| l.class_name.as_str());
    let message = f
        .verdict
        .evidence
        .error
        .as_ref()
        .map_or("", |e| e.message.as_str());
    case.model.layers.iter().enumerate().any(|(i, l)| {
        let named = named_class == Some(l.class_name.as_str())
            || message.contains(&format!("calling {}.call()", l.class_name));
        named
            && f.analysis
                .and_then(|a| a.calls.iter().find(|c| c.layer == i))
                .is_some_and(|c| adaptive_window_exceeds_input(l, &c.input_shapes))
    })
}

/// Whether some input of the case holds a `Masking` layer's `mask_value` or its float32
/// rounding, where the two differ: the values a float64 `Masking` judges otherwise than its
/// argument says.
fn mask_value_in_inputs(case: &Case) -> bool {
    let values: Vec<(f64, f64)> = case
        .model
        .layers
        .iter()
        .filter(|l| l.class_name == "Masking")
        .filter_map(|l| l.config.get("mask_value").and_then(Value::as_f64))
        .filter(|x| x.is_finite() && *x as f32 as f64 != *x)
        .map(|x| (x, x as f32 as f64))
        .collect();
    !values.is_empty()
        && case.inputs.iter().any(|t| {
            t.data
                .iter()
                .any(|x| values.iter().any(|(m, r)| x == m || x == r))
        })
}

/// Whether some `PReLU` of the model has a shared axis at least the rank of an input it is
/// called on (Keras's build then writes past the end of its parameter shape). Each input's
/// rank is that of its producer's output in the analysis (the PReLU's own call, refused by
/// the reference, is not there); an input the analysis lacks counts as no evidence.
fn prelu_shared_axis_beyond_input(case: &Case, analysis: Option<&ModelAnalysis>) -> bool {
    let Some(analysis) = analysis else {
        return false;
    };
    case.model
        .layers
        .iter()
        .filter(|l| l.class_name == "PReLU")
        .any(|l| {
            let largest = match l.config.get("shared_axes") {
                Some(Value::Array(axes)) => axes.iter().filter_map(Value::as_i64).max(),
                Some(v) => v.as_i64(),
                None => None,
            };
            let Some(largest) = largest else {
                return false;
            };
            l.nodes.iter().any(|node| {
                node.tensors().first().is_some_and(|r| {
                    case.model
                        .layers
                        .iter()
                        .position(|p| p.name == r.layer)
                        .and_then(|p| analysis.call(p, r.node))
                        .and_then(|c| c.outputs.get(r.index))
                        .is_some_and(|shape| largest >= shape.len() as i64)
                })
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_recurrent_layer_uses_its_default_activations_where_its_config_leaves_them_out() {
        let lstm = json!({"units": 3});
        assert!(uses_activation("LSTM", &lstm, "tanh"));
        assert!(uses_activation("LSTM", &lstm, "sigmoid"));
        assert!(!uses_activation(
            "LSTM",
            &json!({"activation": "relu", "recurrent_activation": "relu"}),
            "tanh"
        ));
        assert!(!uses_activation(
            "SimpleRNN",
            &json!({"units": 3}),
            "sigmoid"
        ));
        assert!(!uses_activation("Dense", &json!({"units": 3}), "tanh"));
        // A wrapped layer and an RNN's cell have their own class.
        let wrapped = json!({"layer": {"class_name": "GRU", "config": {"units": 2}}});
        assert!(uses_activation("Bidirectional", &wrapped, "tanh"));
        let rnn =
            json!({"cell": {"class_name": "SimpleRNNCell", "config": {"activation": "relu"}}});
        assert!(!uses_activation("RNN", &rnn, "tanh"));
        assert!(uses_activation(
            "Dense",
            &json!({"activation": {"class_name": "function", "config": {"name": "tanh"}}}),
            "tanh"
        ));
    }

    fn layer(class: &str, config: Value) -> oracle::case::Layer {
        oracle::case::Layer {
            name: "l".into(),
            class_name: class.into(),
            module: None,
            registered_name: Value::Null,
            config: config.as_object().unwrap().clone(),
            nested: None,
            nodes: vec![],
            extra: Default::default(),
        }
    }

    #[test]
    fn torch_normalises_the_trailing_axes_where_keras_hands_it_consecutive_ones() {
        let holds = |class: &str, config: Value, rank: usize| {
            norm_axes_not_trailing(class, config.as_object().unwrap(), rank)
        };
        let ln = "LayerNormalization";
        assert!(holds(ln, json!({"axis": 0}), 2));
        assert!(holds(ln, json!({"axis": [0, 1]}), 3));
        assert!(holds(ln, json!({"axis": -2}), 3));
        assert!(!holds(ln, json!({"axis": -1}), 2));
        assert!(!holds(ln, json!({"axis": [1, 2]}), 3));
        assert!(!holds(ln, json!({"axis": [-2, -1]}), 3));
        assert!(!holds(ln, json!({}), 3));
        // Not consecutive: Keras computes the moments itself, over the right axes.
        assert!(!holds(ln, json!({"axis": [0, 2]}), 3));
        assert!(!holds(ln, json!({"axis": 0, "rms_scaling": true}), 2));
        assert!(holds("RMSNormalization", json!({"axis": 1}), 3));
        assert!(!holds("BatchNormalization", json!({"axis": 0}), 2));
    }

    #[test]
    fn adaptive_pooling_window_exceeds_input_only_when_ceil_reaches_the_length() {
        let shape = |dims: &[usize]| vec![dims.iter().map(|&d| Some(d)).collect::<Vec<_>>()];
        let max1 = |k: u64| layer("AdaptiveMaxPooling1D", json!({"output_size": k}));
        // Measured in TF 2.21: out=1 on 7 and out=3 on 1 raise in graph mode; out=2 on 7 and
        // out=3 on 2 trace.
        assert!(adaptive_window_exceeds_input(&max1(1), &shape(&[2, 7, 4])));
        assert!(!adaptive_window_exceeds_input(&max1(2), &shape(&[2, 7, 4])));
        assert!(adaptive_window_exceeds_input(&max1(3), &shape(&[2, 1, 4])));
        assert!(!adaptive_window_exceeds_input(&max1(3), &shape(&[2, 2, 4])));
        // channels_first: the spatial axes follow the channels (a 3×1 input pooled to 4×3).
        let avg2 = |df: &str| {
            layer(
                "AdaptiveAveragePooling2D",
                json!({"output_size": [4, 3], "data_format": df}),
            )
        };
        assert!(adaptive_window_exceeds_input(
            &avg2("channels_first"),
            &shape(&[2, 7, 3, 1])
        ));
        assert!(!adaptive_window_exceeds_input(
            &avg2("channels_last"),
            &shape(&[2, 7, 3, 1])
        ));
        // Other pooling layers never match.
        let max = layer("MaxPooling1D", json!({"pool_size": 1}));
        assert!(!adaptive_window_exceeds_input(&max, &shape(&[2, 7, 4])));
    }
}

#[cfg(test)]
mod conv3d_same_tests {
    use super::*;
    use serde_json::json;

    fn shifts(n: usize, k: u64, s: u64, extra: Value) -> bool {
        let mut config = json!({"kernel_size": [1, k, 1], "strides": [1, s, 1], "padding": "same"});
        config
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let x = vec![vec![Some(1), Some(1), Some(n), Some(1), Some(1)]];
        conv3d_same_window_shifts(config.as_object().unwrap(), &x)
    }

    #[test]
    fn same_windows_shift_where_the_unclamped_padding_halves_below_zero() {
        // Measured with tf.nn.conv3d in float64 (TF 2.21) along one axis: these shift by one.
        assert!(shifts(4, 1, 4, json!({})));
        assert!(shifts(3, 1, 3, json!({})));
        assert!(shifts(4, 2, 6, json!({})));
        // A total of -1 halves to 0 (n=5, k=1, s=3; n=6, k=1, s=4); non-negative totals pad.
        assert!(!shifts(5, 1, 3, json!({})));
        assert!(!shifts(6, 1, 4, json!({})));
        assert!(!shifts(5, 2, 4, json!({})));
        assert!(!shifts(8, 3, 6, json!({})));
        // Valid padding, channels_first and grouped convs (run by XLA) are not affected.
        assert!(!shifts(4, 1, 4, json!({"padding": "valid"})));
        assert!(!shifts(4, 1, 4, json!({"data_format": "channels_first"})));
        assert!(!shifts(4, 1, 4, json!({"groups": 2})));
        // Int arguments apply to every axis.
        let ints = json!({"kernel_size": 1, "strides": 4, "padding": "same"});
        let x = vec![vec![Some(1), Some(2), Some(4), Some(2), Some(1)]];
        assert!(conv3d_same_window_shifts(ints.as_object().unwrap(), &x));
    }
}

#[cfg(test)]
mod pool3d_same_tests {
    use super::*;
    use serde_json::json;

    fn shifts(n: usize, k: u64, s: u64, extra: Value) -> bool {
        let mut config = json!({"pool_size": [1, k, 1], "strides": [1, s, 1], "padding": "same"});
        config
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let x = vec![vec![Some(1), Some(1), Some(n), Some(1), Some(1)]];
        pool3d_same_window_shifts(config.as_object().unwrap(), &x)
    }

    #[test]
    fn pooling_windows_shift_as_the_conv3d_kernel_s_do() {
        // Measured with tf.nn.max_pool3d in float32, oneDNN off (TF 2.21), along one axis:
        // these shift by one.
        assert!(shifts(4, 1, 4, json!({})));
        assert!(shifts(4, 2, 6, json!({})));
        assert!(shifts(3, 1, 3, json!({})));
        // These do not (totals of -1 and above).
        assert!(!shifts(5, 1, 3, json!({})));
        assert!(!shifts(6, 2, 3, json!({})));
        assert!(!shifts(6, 1, 4, json!({})));
        assert!(!shifts(4, 1, 4, json!({"padding": "valid"})));
        // channels_first is transposed first: its spatial axes are 2..5.
        let cf = json!({"pool_size": 1, "strides": 3, "padding": "same",
                        "data_format": "channels_first"});
        let x = vec![vec![Some(1), Some(1), Some(1), Some(1), Some(3)]];
        assert!(pool3d_same_window_shifts(cf.as_object().unwrap(), &x));
        let x = vec![vec![Some(1), Some(3), Some(1), Some(1), Some(1)]];
        assert!(!pool3d_same_window_shifts(cf.as_object().unwrap(), &x));
        // `strides` defaults to `pool_size` (never a shift: the windows then cover the
        // axis), and `pool_size` to 2.
        let default = json!({"pool_size": [1, 1, 3], "padding": "same"});
        let x = vec![vec![Some(1), Some(1), Some(1), Some(1), Some(1)]];
        assert!(!pool3d_same_window_shifts(default.as_object().unwrap(), &x));
        let two = json!({"strides": 4, "padding": "same"});
        let x = vec![vec![Some(1), Some(4), Some(4), Some(4), Some(1)]];
        assert!(pool3d_same_window_shifts(two.as_object().unwrap(), &x));
        let x = vec![vec![Some(1), Some(5), Some(5), Some(5), Some(1)]];
        assert!(!pool3d_same_window_shifts(two.as_object().unwrap(), &x));
    }
}

#[cfg(test)]
mod concatenate_tests {
    use super::*;
    use crate::entries::{Facts, Target};
    use crate::verdict::{Kind, Verdict};

    /// Whether the predicate holds at the kept Concatenate case's layer, its axis set to
    /// `axis`.
    fn holds(axis: i64) -> bool {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../crashes/unexpected-rejection-Concatenate-batch-axis-index-error/case.case.json"
        );
        let mut case = Case::read(path).unwrap();
        let layer = case
            .model
            .layers
            .iter_mut()
            .find(|l| l.class_name == "Concatenate")
            .unwrap();
        layer.config.insert("axis".into(), serde_json::json!(axis));
        let name = layer.name.clone();
        let analysis = oracle::check(&case).unwrap();
        let verdict = Verdict::new(
            Kind::UnexpectedRejection,
            "Concatenate",
            "",
            Some(&name),
            String::new(),
        );
        Predicate::ConcatenateSqueezedAxisIndexError.holds(&Facts {
            case: &case,
            dtype: case.dtype,
            verdict: &verdict,
            analysis: Some(&analysis),
            target: &Target::unknown_tensorflow(),
        })
    }

    /// The kept case joins two `(None, 1, 1)` inputs: Keras 3.3.3's build fails on the batch
    /// axis (0, or -3) and on axis 1, and builds on the last axis.
    #[test]
    fn the_predicate_reads_the_verdict_s_own_call() {
        assert!(holds(0));
        assert!(holds(-3));
        assert!(!holds(-1));
        assert!(!holds(2));
    }
}

#[cfg(test)]
mod prelu_tests {
    use super::*;
    use crate::entries::{Facts, Target};
    use crate::verdict::{Kind, Verdict};

    /// Whether the predicate holds for the kept PReLU timeout case (a `(None, 4, 4)` input)
    /// with `shared_axes` set, judged as the judge sees an invalid case: the analysis of the
    /// calls before its violation.
    fn holds(shared_axes: serde_json::Value) -> bool {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../crashes/timeout-PReLU-from-config-retries-index-error-3.3.3/case.case.json"
        );
        let mut case = Case::read(path).unwrap();
        let layer = case
            .model
            .layers
            .iter_mut()
            .find(|l| l.class_name == "PReLU")
            .unwrap();
        layer.config.insert("shared_axes".into(), shared_axes);
        let analysis = match oracle::check(&case) {
            Ok(a) => Some(a),
            Err(_) => calls_before_violation(&case, case.dtype),
        };
        let verdict = Verdict::new(Kind::Timeout, "model", "", None, String::new());
        Predicate::PreluSharedAxisBeyondInputInModel.holds(&Facts {
            case: &case,
            dtype: case.dtype,
            verdict: &verdict,
            analysis: analysis.as_ref(),
            target: &Target::unknown_tensorflow(),
        })
    }

    /// On a rank-3 input, axis 3 (or any list holding it) is beyond the input; axes 1 and 2
    /// build, so a timeout beside them is not this bug.
    #[test]
    fn the_predicate_holds_for_an_axis_the_input_lacks_only() {
        assert!(holds(serde_json::json!([3])));
        assert!(holds(serde_json::json!([1, 3])));
        assert!(!holds(serde_json::json!([2])));
        assert!(!holds(serde_json::json!([1, 2])));
        assert!(!holds(serde_json::Value::Null));
    }
}
