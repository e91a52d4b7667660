//! Known TensorFlow limitations: rejections that are not bugs of the model or of TF's
//! semantics (a kernel without a CPU implementation for a dtype, an op XLA cannot compile).
//! A matching outcome is counted as one known item instead of being reported again and again.

use oracle::check::ModelAnalysis;
use oracle::{Case, DType};
use serde_json::Value;

use crate::run::{Mode, PyError};
use crate::verdict::{Kind, Verdict};

/// (identifier, error type, text the message contains).
const LIMITATIONS: [(&str, &str, &str); 3] = [
    (
        "no-cpu-kernel-for-dtype",
        "NotFoundError",
        "No OpKernel was registered",
    ),
    (
        "no-cpu-kernel-for-dtype",
        "InvalidArgumentError",
        "No OpKernel was registered",
    ),
    (
        "xla-unsupported-op",
        "InvalidArgumentError",
        "Detected unsupported operations when trying to compile graph",
    ),
];

/// The identifier of the known limitation this error is, if any.
pub fn limitation(e: &PyError) -> Option<&'static str> {
    LIMITATIONS
        .iter()
        .find(|(_, kind, text)| e.kind == *kind && e.message.contains(text))
        .map(|(id, _, _)| *id)
}

/// Confirmed framework bugs, each kept in `crashes/<id>/` with a minimal repro: a verdict
/// they explain is counted as a hit of that bug rather than reported as a new finding. Each
/// matcher is as narrow as the bug's trigger as far as it is understood (see the folder's
/// report); anything outside it is still reported.
pub fn framework_bug(
    case: &Case,
    dtype: DType,
    v: &Verdict,
    analysis: Option<&ModelAnalysis>,
) -> Option<&'static str> {
    let rms_axis_not_last = |l: &oracle::case::Layer| {
        l.class_name == "RMSNormalization"
            && !matches!(l.config.get("axis"), Some(a) if *a == serde_json::json!(-1) || *a == serde_json::json!([-1]))
    };
    // The RMSNormalization scale broadcasts onto the wrong axes and changes the shape, so
    // the op itself or the layers after it raise.
    let raised = v.kind == Kind::UnexpectedRejection
        || v.kind == Kind::ModeMismatch && v.detail.contains(" raises where");
    if raised && case.model.layers.iter().any(rms_axis_not_last) {
        return Some("mismatch-RMSNormalization-axis-scale");
    }
    let layer = case.model.layer(v.layer.as_deref()?)?;
    let class = layer.class_name.as_str();
    let config = &layer.config;
    let activation = |name: &str| {
        config.get("activation").is_some_and(|a| {
            a.as_str() == Some(name)
                || a.get("config")
                    .and_then(|c| c.get("name"))
                    .and_then(Value::as_str)
                    == Some(name)
        })
    };
    // The first call of the layer, as the reference checked it.
    let call = analysis.and_then(|a| {
        let li = case
            .model
            .layers
            .iter()
            .position(|l| l.name == layer.name)?;
        a.calls.iter().find(|c| c.layer == li)
    });
    let max_pooling = matches!(
        class,
        "MaxPooling1D"
            | "MaxPooling2D"
            | "MaxPooling3D"
            | "AdaptiveMaxPooling1D"
            | "AdaptiveMaxPooling2D"
            | "AdaptiveMaxPooling3D"
    );
    let reference_nonfinite =
        v.detail.contains(", reference NaN") || v.detail.contains(", reference -inf");
    match v.kind {
        // oneDNN's max pooling divides by zero on some window/stride geometries (float32).
        Kind::Crash if max_pooling && v.signature.ends_with("/SIGFPE") => {
            return Some(if class.starts_with("Adaptive") {
                "crash-AdaptiveMaxPooling1D-sigfpe"
            } else {
                "crash-MaxPooling1D-sigfpe"
            });
        }
        // Max pooling drops NaN, and gives the lowest finite value for windows of -inf only.
        Kind::UnexpectedNan if max_pooling && reference_nonfinite => {
            return Some("unexpected-nan-MaxPooling1D-nan-and-neg-inf");
        }
        // Float32 softmax through oneDNN: a row holding inf or NaN gives 0 where NaN is due.
        Kind::UnexpectedNan
            if dtype == DType::Float32
                && (class == "Softmax" || activation("softmax"))
                && v.detail.contains(", reference NaN") =>
        {
            return Some("unexpected-nan-Softmax-float32-onednn-inf");
        }
        _ => {}
    }
    if matches!(v.kind, Kind::Mismatch | Kind::ModeMismatch) {
        // XLA's bilinear resize takes the next pixel at some sample points that fall exactly
        // on an input pixel (odd upscale factors).
        if v.mode == Some(Mode::Xla)
            && class == "UpSampling2D"
            && config.get("interpolation").and_then(Value::as_str) == Some("bilinear")
        {
            return Some("mode-mismatch-UpSampling2D-xla-bilinear");
        }
        // Keras's float64 gelu goes through float32 constants.
        if dtype == DType::Float64 && activation("gelu") {
            return Some("mismatch-Activation-gelu-float64");
        }
        if dtype == DType::Float64
            && class == "ReLU"
            && (config.get("max_value").is_some_and(|m| !m.is_null())
                || config
                    .get("threshold")
                    .is_some_and(|t| t.as_f64() != Some(0.0)))
        {
            return Some("mismatch-ReLU-float64-max-value");
        }
        if rms_axis_not_last(layer) {
            return Some("mismatch-RMSNormalization-axis-scale");
        }
        // `ops.add` takes a bias_add shortcut along the last axis when a vector's length
        // equals that axis: a channels_first bias whose channel count equals the last
        // spatial size, or a merge whose inputs broadcast.
        let out = call.and_then(|c| c.outputs.first());
        let channels_first_bias = config.get("data_format").and_then(Value::as_str)
            == Some("channels_first")
            && config.get("use_bias").and_then(Value::as_bool) == Some(true)
            && out.is_some_and(|o| o.len() >= 3 && o[1].is_some() && o[1] == o[o.len() - 1]);
        if channels_first_bias {
            return Some("mismatch-DepthwiseConv2D-channels-first-bias");
        }
        let broadcasting_merge = matches!(class, "Add" | "Average" | "Subtract")
            && call.is_some_and(|c| c.input_shapes.windows(2).any(|w| w[0] != w[1]));
        if broadcasting_merge {
            return Some("mismatch-Average-ops-add-broadcast");
        }
    }
    None
}
