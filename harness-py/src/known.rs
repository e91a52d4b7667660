//! Known TensorFlow limitations: rejections that are not bugs of the model or of TF's
//! semantics (a kernel without a CPU implementation for a dtype, an op XLA cannot compile).
//! A matching outcome is counted as one known item instead of being reported again and again.

use oracle::check::{self, ModelAnalysis};
use oracle::known_bugs::{self, KnownBug};
use oracle::{Case, DType};
use serde_json::Value;

use crate::run::{Mode, PyError};
use crate::verdict::{Kind, Verdict};

/// (identifier, error type, text the message contains).
const LIMITATIONS: [(&str, &str, &str); 10] = [
    // oneDNN's float32 softmax takes at most rank 5 (float64, or TF_ENABLE_ONEDNN_OPTS=0,
    // works): multi-head attention on rank-5 inputs hits it.
    (
        "onednn-softmax-above-rank-5",
        "AbortedError",
        "Input dims must be <= 5",
    ),
    // TF's CPU kernels broadcast (SelectV2, used by masked softmax) only up to rank 8.
    (
        "broadcast-above-rank-8",
        "UnimplementedError",
        "is not supported yet. [Op:SelectV2]",
    ),
    // TF's CPU slicing kernels (StridedSlice, Slice) take at most rank 8: `TimeDistributed`
    // slices its time steps with them, so it fails on a rank-9 input in every mode but XLA.
    // StridedSlice says "Unhandled input dimensions 9", Slice "SliceOp : Unhandled input
    // dimensions".
    (
        "slice-above-rank-8",
        "UnimplementedError",
        "Unhandled input dimensions",
    ),
    // The other binary element-wise kernels (AddV2, Sub, Mul, Minimum, Maximum, ...) only up
    // to rank 5, counted after merging neighbouring axes that broadcast alike: `Minimum` of
    // `(2, 1, 2, 1, 2, 1)` and `(1, 2, 1, 2, 1, 2)` raises in eager and graph mode (TF 2.21).
    (
        "broadcast-above-rank-5",
        "UnimplementedError",
        "Broadcast between",
    ),
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
    // TF's float64/float16 CPU kernels for transposed convolutions take channels-last data
    // only (float32 goes through oneDNN, which takes both).
    (
        "cpu-transposed-conv-channels-last-only",
        "InvalidArgumentError",
        "Conv2DCustomBackpropInputOp only supports NHWC",
    ),
    (
        "cpu-transposed-conv-channels-last-only",
        "InvalidArgumentError",
        "Conv3DBackpropInputOpV2 only supports NDHWC on the CPU",
    ),
    // Nor do they dilate (float32 goes through oneDNN, which does). The 3-D kernel says
    // "implementation does not", the 2-D one "implementations do not".
    (
        "cpu-transposed-conv-no-dilation",
        "InvalidArgumentError",
        " not yet support dilation rates larger than 1",
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

/// oneDNN's error when it cannot convert a tensor between layouts for a convolution.
const ONEDNN_REORDER: &str = "could not create a primitive descriptor for the reorder primitive";

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
    // The layers that trigger a kept bug, exactly on the shapes the reference found for
    // their calls (conservatively where it has none): an `RMSNormalization` whose axes are
    // harmless does not explain an error elsewhere in the model.
    let rms_triggers: Vec<&str> = known_bugs::in_model(&case.model, analysis)
        .into_iter()
        .filter(|(_, bug)| *bug == KnownBug::RmsNormalizationAxisScale)
        .map(|(li, _)| case.model.layers[li].name.as_str())
        .collect();
    // The RMSNormalization scale broadcasts onto the wrong axes and changes the shape, so
    // the op itself or the layers after it raise.
    let raised = v.kind == Kind::UnexpectedRejection
        || v.kind == Kind::ModeMismatch && v.detail.contains(" raises where");
    if raised && !rms_triggers.is_empty() {
        return Some(KnownBug::RmsNormalizationAxisScale.id());
    }
    // Keras's adaptive pooling builds a second pool one longer than `ceil(n / output_size)`,
    // longer than the axis when that is `n` itself: graph shape inference refuses it.
    let traced = matches!(v.mode, Some(Mode::Graph | Mode::Xla));
    if raised && traced && v.detail.contains(": ValueError: ") {
        // TF's graph names the layer by its name scope at tracing time, which Keras may have
        // suffixed (`adaptive_max_pooling2d_1` for the case's `adaptive_max_pooling2d`):
        // a layer of the named layer's class counts as named.
        let named_class = v
            .layer
            .as_deref()
            .and_then(|n| case.model.layer(n))
            .map(|l| l.class_name.as_str());
        let over_long = case.model.layers.iter().enumerate().any(|(i, l)| {
            let named = named_class == Some(l.class_name.as_str())
                || v.detail
                    .contains(&format!("calling {}.call()", l.class_name));
            named
                && analysis
                    .and_then(|a| a.calls.iter().find(|c| c.layer == i))
                    .is_some_and(|c| adaptive_window_exceeds_input(l, &c.input_shapes))
        });
        if over_long {
            return Some("mode-mismatch-AdaptiveMaxPooling1D-graph-window-exceeds-input");
        }
    }
    // oneDNN's float32 convolutions give an empty batch the input's channels instead of the
    // filters': the bias add (or the shape comparison) after the conv fails, at the conv or,
    // inside a convolutional LSTM's loop, at no layer TF names.
    let empty_batch = case
        .inputs
        .iter()
        .any(|t| t.data.shape().first() == Some(&0));
    if empty_batch
        && dtype == DType::Float32
        && case
            .model
            .layers
            .iter()
            .any(|l| l.class_name.contains("Conv") && v.layer.as_ref().is_none_or(|n| *n == l.name))
        && (raised || v.kind == Kind::Mismatch && v.detail.contains(" has shape "))
    {
        return Some("unexpected-rejection-Conv1D-onednn-float32-empty-batch");
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
    let max_pooling = is_max_pooling(class);
    let reference_nonfinite =
        v.detail.contains(", reference NaN") || v.detail.contains(", reference -inf");
    let reference_nan = v.detail.contains(", reference NaN");
    let xla = v.mode == Some(Mode::Xla);
    let attention = matches!(class, "Attention" | "MultiHeadAttention");
    let nonfinite_weights = case
        .weights
        .get(&layer.name)
        .is_some_and(|ws| ws.iter().any(|w| w.data.iter().any(|x| !x.is_finite())));
    let nonfinite_kernel = case
        .weights
        .get(&layer.name)
        .and_then(|ws| ws.first())
        .is_some_and(|k| k.data.iter().any(|x| !x.is_finite()));
    let batched = case
        .inputs
        .iter()
        .any(|t| t.data.shape().first().is_some_and(|&b| b > 1));
    let conv_transpose = matches!(
        class,
        "Conv1DTranspose" | "Conv2DTranspose" | "Conv3DTranspose"
    );
    let same_padded_conv = matches!(
        class,
        "Conv1D"
            | "Conv2D"
            | "Conv3D"
            | "DepthwiseConv1D"
            | "DepthwiseConv2D"
            | "SeparableConv1D"
            | "SeparableConv2D"
            // Their input and recurrent convolutions pad alike.
            | "ConvLSTM1D"
            | "ConvLSTM2D"
            | "ConvLSTM3D"
    ) && config.get("padding").and_then(Value::as_str) == Some("same");
    // Convolutions Keras compiles with XLA in every mode (TF's CPU kernels lack them):
    // channels_first 3-D ones and grouped ones.
    let keras_xla_conv = (config.get("data_format").and_then(Value::as_str)
        == Some("channels_first")
        && matches!(class, "Conv3D" | "ConvLSTM3D"))
        || config
            .get("groups")
            .and_then(Value::as_u64)
            .is_some_and(|g| g > 1);
    // TF's NaN, or the finite value the layer's activation makes of a NaN where the
    // reference is non-finite: `hard_shrink` and `soft_shrink` give 0 for NaN, and so does
    // `relu6` under XLA.
    let nan_turns_finite =
        activation("hard_shrink") || activation("soft_shrink") || xla && activation("relu6");
    let tf_nan_or_what_activation_makes_of_it = v.detail.contains(": TensorFlow NaN,")
        || nan_turns_finite && tf_finite_reference_not(&v.detail);
    match v.kind {
        // Keras declares a left-ellipsis EinsumDense's output with the ellipsis axes
        // reversed, and runs the model built on that shape. A layer after it may fail in a
        // kernel on the actual shape, or refuse the declared one while it is built, in words
        // that name neither the EinsumDense nor `output_shape`.
        Kind::MissingValidation | Kind::LateError
            if class == "EinsumDense"
                && v.detail
                    .contains("makes Keras declare another output shape") =>
        {
            return Some("missing-validation-EinsumDense-ellipsis-declared-shape");
        }
        Kind::UnclearError
            if class == "EinsumDense"
                && v.detail.contains("nor `output_shape`")
                && !v.detail.contains("Negative dimensions")
                && config
                    .get("equation")
                    .and_then(Value::as_str)
                    .is_some_and(|e| e.starts_with("...")) =>
        {
            return Some("missing-validation-EinsumDense-ellipsis-declared-shape");
        }
        // EinsumDense never compares its input's rank with the equation's: TF's backend runs
        // common equations as a matmul, which broadcasts the extra axes, or the model fails
        // in a kernel when it runs.
        Kind::MissingValidation | Kind::LateError
            if class == "EinsumDense"
                && v.detail
                    .contains("has another rank than the equation's input") =>
        {
            return Some("missing-validation-EinsumDense-input-rank-runs-as-batched-matmul");
        }
        // Dot refuses the batch axis only when called on data: built, it declares a shape
        // without the batch axis, and a later layer refuses that.
        Kind::MissingValidation | Kind::LateError | Kind::UnclearError
            if class == "Dot" && v.detail.contains(" is the batch axis of input[") =>
        {
            return Some("missing-validation-Dot-batch-axis-declared-shape");
        }
        // GroupQueryAttention never checks its inputs' ranks (nor do its EinsumDense
        // projections): it builds on a rank-4 query and fails when it runs, or fails on a
        // rank-2 one with an IndexError.
        Kind::MissingValidation | Kind::LateError | Kind::UnclearError
            if class == "GroupQueryAttention" && v.detail.contains(" has the wrong rank ") =>
        {
            return Some("missing-validation-GroupQueryAttention-input-rank");
        }
        // Keras names the layer in errors raised while it runs, not in those raised while it
        // is built or its output shape computed: these checks' messages name no layer.
        Kind::UnclearError if unnamed_build_error(class, &v.detail) => {
            return Some("unclear-error-build-errors-name-no-layer");
        }
        // GroupQueryAttention checks none of its sizes: a zero or negative one fails in its
        // constructor (a square root, a division, a modulo), in a kernel, or as the shape of
        // a variable; with no query heads and no biases it may run.
        Kind::LateError | Kind::UnclearError | Kind::MissingValidation
            if class == "GroupQueryAttention" && unchecked_attention_size(&v.detail) =>
        {
            return Some("late-error-GroupQueryAttention-unchecked-sizes");
        }
        // The attention layers hand `dropout` to a Dropout layer they build, whose check
        // names its own argument, `rate`, and no layer.
        Kind::UnclearError
            if matches!(class, "MultiHeadAttention" | "GroupQueryAttention")
                && v.detail.contains("nor `dropout`")
                && v.detail
                    .contains("Invalid value received for argument `rate`") =>
        {
            return Some("unclear-error-MultiHeadAttention-dropout-refused-as-rate");
        }
        // A negative size that Keras does not check reaches the shape of a variable, whose
        // message names neither the layer nor the argument.
        Kind::UnclearError
            if matches!(class, "EinsumDense" | "MultiHeadAttention")
                && v.detail.contains(": Cannot convert '(")
                && v.detail.contains("Negative dimensions are not allowed") =>
        {
            return Some("unclear-error-negative-sizes-reach-variable-shapes");
        }
        // GlobalAveragePooling1D (channels_first) takes the mask of the wrong axis unchecked:
        // where its length is neither 1 nor the number of steps, it fails in a kernel.
        Kind::LateError
            if class == "GlobalAveragePooling1D"
                && config.get("data_format").and_then(Value::as_str) == Some("channels_first")
                && v.detail.contains(": mask=")
                && v.detail.contains(" does not broadcast to the input ") =>
        {
            return Some("mismatch-GlobalAveragePooling1D-channels-first-mask-sum");
        }
        // The ConvLSTM layers never check `filters`: 0 builds an output without channels and
        // fails in the convolution when it runs, a negative count fails as a variable's shape.
        Kind::LateError | Kind::UnclearError
            if class.starts_with("ConvLSTM")
                && (v.detail.contains(": filters=") && v.detail.contains(" is not positive ")
                    || v.detail.contains("nor `filters`")) =>
        {
            return Some("late-error-ConvLSTM-unchecked-filters");
        }
        // Poolings take a zero stride or output size and divide by it; an adaptive one builds
        // an empty axis first, which a later layer may refuse before the division is reached.
        Kind::LateError
            if class.contains("Pooling")
                && v.detail.contains("(ZeroDivisionError: ")
                && v.detail.contains(" is not positive ") =>
        {
            return Some("late-error-Pooling-zero-size-division-by-zero");
        }
        Kind::MissingValidation
            if class.starts_with("Adaptive")
                && v.detail.contains(": output_size[")
                && v.detail.contains("]=0 is not positive ")
                && v.detail
                    .contains(", which consumes its output, refused first: ") =>
        {
            return Some("late-error-Pooling-zero-size-division-by-zero");
        }
        // The same empty axis refused by a later layer whose error names neither.
        Kind::UnclearError
            if class.starts_with("Adaptive")
                && v.detail.contains(" nor `output_size[")
                && config_ints(config, "output_size").contains(&0) =>
        {
            return Some("late-error-Pooling-zero-size-division-by-zero");
        }
        // TimeDistributed never checks the wrapped layer's input spec on the slices.
        Kind::MissingValidation
            if class == "TimeDistributed" && v.detail.contains(": layer.input") =>
        {
            return Some("missing-validation-TimeDistributed-skips-input-checks");
        }
        // The 2-D and 3-D adaptive poolings have no input spec; the backend runs the 1-D
        // pooling on a rank-3 input and the declared shape stays the 2-D/3-D one.
        Kind::MissingValidation
            if class.starts_with("Adaptive") && v.detail.contains("Keras runs the 1-D pooling") =>
        {
            return Some("missing-validation-AdaptivePooling2D-rank-3-runs-1d");
        }
        // Nor do the 1-D ones: another rank builds, declares a rank-3 output, and fails in
        // the backend's unpacking of the shape when the model runs (or a later layer refuses
        // the declared shape first). A 2-D or 3-D one on a rank-2 input declares an output of
        // its own rank and fails in the backend ("supports 1D, 2D, or 3D inputs only").
        Kind::MissingValidation | Kind::LateError | Kind::UnclearError
            if class.starts_with("Adaptive")
                && v.detail.contains(": input[0]=rank ")
                && [
                    (
                        class.ends_with("1D"),
                        " has the wrong rank (expected rank 3)",
                    ),
                    (
                        class.ends_with("2D"),
                        " has the wrong rank (expected rank 4)",
                    ),
                    (
                        class.ends_with("3D"),
                        " has the wrong rank (expected rank 5)",
                    ),
                ]
                .iter()
                .any(|(at, rule)| *at && v.detail.contains(rule)) =>
        {
            return Some("missing-validation-AdaptivePooling2D-rank-3-runs-1d");
        }
        // RNN checks no input rank: a rank-4 input runs (another shape than declared) or
        // fails inside the cell's kernel, also inside a Bidirectional. LSTM, GRU and
        // SimpleRNN have an input spec.
        Kind::MissingValidation | Kind::LateError
            if (class == "RNN"
                || class == "Bidirectional" && wrapped_class(config) == Some("RNN"))
                && v.detail.contains(": input[0]=rank ")
                && v.detail.contains(" has the wrong rank (expected rank 3") =>
        {
            return Some("missing-validation-RNN-rank-4-input");
        }
        // Attention and AdditiveAttention check no shapes of the query, value and key: another
        // rank broadcasts (and attends across the batch), or fails in a kernel when the model
        // runs, as other position or feature counts do.
        Kind::MissingValidation | Kind::LateError
            if matches!(class, "Attention" | "AdditiveAttention")
                && [
                    "has another rank than the query",
                    " key positions (expected as many value as key positions)",
                    " key features (expected query and key features of one size)",
                    " (expected equal batch axes)",
                    // A mask is not checked against the scores either.
                    " does not broadcast (expected a mask that fits ",
                ]
                .iter()
                .any(|rule| v.detail.contains(rule)) =>
        {
            return Some("missing-validation-Attention-value-rank-broadcasts-across-batch");
        }
        // Nor does MultiHeadAttention compare the value's and key's ranks with the query's,
        // or their sizes on the axes it does not attend over: the model builds, then fails in
        // an einsum or transpose kernel.
        Kind::MissingValidation | Kind::LateError
            if class == "MultiHeadAttention"
                && (v.detail.contains("has another rank than the query")
                    || v.detail.contains(" differ in query and key axis ")) =>
        {
            return Some("late-error-MultiHeadAttention-unchecked-query-value-shapes");
        }
        // PReLU takes a negative shared axis as a Python index into the non-batch shape,
        // one place off: `shared_axes=[-1]` shares the second-to-last axis.
        // MultiHeadAttention builds an empty output for a 0 in `output_shape` (Dense refuses
        // `units=0`); a later layer may refuse that output, naming neither.
        Kind::MissingValidation | Kind::UnclearError | Kind::LateError
            if class == "MultiHeadAttention"
                && config
                    .get("output_shape")
                    .and_then(Value::as_array)
                    .is_some_and(|dims| dims.iter().any(|d| d.as_i64() == Some(0)))
                && (v.detail.contains(" makes an empty output ")
                    || v.detail.contains("nor `output_shape`")) =>
        {
            return Some("missing-validation-MultiHeadAttention-zero-output-shape");
        }
        // On rank-2 inputs MultiHeadAttention attends over no axis: it builds, and its
        // Softmax fails with an IndexError when it runs.
        Kind::LateError
            if class == "MultiHeadAttention"
                && v.detail.contains(" leaves the softmax no axis ") =>
        {
            return Some("late-error-MultiHeadAttention-rank-2-softmax-no-axis");
        }
        // XLA's gather clamps an index out of range where TF's CPU kernel refuses it: an
        // Embedding compiled with XLA returns the nearest row (reported upstream).
        Kind::MissingValidation
            if class == "Embedding"
                && v.mode == Some(Mode::Xla)
                && v.detail.contains(" is not a row of the embedding ") =>
        {
            return Some("missing-validation-Embedding-xla-out-of-range-index-clamped");
        }
        // Attention and AdditiveAttention take any dropout rate, where Dropout refuses one
        // outside [0, 1]: a negative rate is ignored, one past 1 fails when trained.
        Kind::MissingValidation
            if matches!(class, "Attention" | "AdditiveAttention")
                && v.detail.contains(": dropout=")
                && v.detail.contains("(expected a rate in [0, 1])") =>
        {
            return Some("missing-validation-Attention-dropout-out-of-range");
        }
        Kind::MissingValidation | Kind::LateError
            if class == "PReLU" && v.detail.contains("is not a non-batch axis (Keras shares") =>
        {
            return Some("missing-validation-PReLU-negative-shared-axes");
        }
        // oneDNN's graph-mode convolution cannot build a reorder for some one-channel
        // separable convolutions (the folder lists the shapes measured): a mode mismatch, or,
        // where graph mode ran alone, an unexpected rejection.
        _ if raised && class == "SeparableConv2D" && v.detail.contains(ONEDNN_REORDER) => {
            return Some("mode-mismatch-SeparableConv2D-graph-onednn-one-channel-pointwise");
        }
        // oneDNN's max pooling divides by zero on some window/stride geometries (float32).
        Kind::Crash if max_pooling && v.signature.ends_with("/SIGFPE") => {
            return Some(if class.starts_with("Adaptive") {
                "crash-AdaptiveMaxPooling1D-sigfpe"
            } else {
                "crash-MaxPooling1D-sigfpe"
            });
        }
        // Keras's squareplus squares its input: beyond the square root of the dtype's
        // largest value it gives +inf where the function is about `x` (or about `1/|x|`). A
        // gated recurrent cell multiplies it by a gate, which may be negative: -inf there, and
        // NaN where an infinite gate meets a zero state (the first step's). At -inf itself,
        // `-inf + inf` is NaN where the function's limit is 0.
        Kind::UnexpectedNan
            if (v.detail.contains(": TensorFlow inf, ")
                || (v.detail.contains(": TensorFlow -inf, ")
                    || v.detail.contains(": TensorFlow NaN, "))
                    && gated(&Value::Object(config.clone()))
                || v.detail.contains(": TensorFlow NaN, reference 0e0 ")
                || v.detail.contains(": TensorFlow NaN, reference -0e0 "))
                && !reference_nonfinite
                && !v.detail.contains(", reference inf")
                && uses_activation(&Value::Object(config.clone()), "squareplus") =>
        {
            return Some("unexpected-nan-Activation-squareplus-overflow");
        }
        // Max pooling drops NaN, and gives the lowest finite value for windows of -inf only;
        // XLA's does not, so on such inputs the modes differ too.
        Kind::UnexpectedNan if max_pooling && reference_nonfinite => {
            return Some("unexpected-nan-MaxPooling1D-nan-and-neg-inf");
        }
        Kind::ModeMismatch
            if (max_pooling
                || class == "TimeDistributed"
                    && wrapped_class(config).is_some_and(is_max_pooling))
                && v.detail.ends_with(crate::verdict::NONFINITE_INPUTS) =>
        {
            return Some("unexpected-nan-MaxPooling1D-nan-and-neg-inf");
        }
        // The same max pooling, run on each time slice by TimeDistributed (the verdict names
        // the wrapper).
        Kind::UnexpectedNan
            if class == "TimeDistributed"
                && wrapped_class(config).is_some_and(is_max_pooling)
                && reference_nonfinite =>
        {
            return Some("unexpected-nan-MaxPooling1D-nan-and-neg-inf");
        }
        // Normalization's stale statistics (see the mismatch below) are finite, so a
        // non-finite mean or variance set by `set_weights` never reaches the output: TF
        // stays finite where the weights the layer holds make the result non-finite.
        Kind::UnexpectedNan
            if class == "Normalization"
                && nonfinite_weights
                && tf_finite_reference_not(&v.detail) =>
        {
            return Some("mismatch-Normalization-set-weights-stale-statistics");
        }
        // XLA on CPU lowers max/min (and max reductions) without NaN propagation
        // (`xla_cpu_enable_fast_min_max`).
        Kind::ModeMismatch | Kind::UnexpectedNan
            if xla
                && matches!(
                    class,
                    "Maximum"
                        | "Minimum"
                        | "GlobalMaxPooling1D"
                        | "GlobalMaxPooling2D"
                        | "GlobalMaxPooling3D"
                )
                && (v.kind == Kind::ModeMismatch || reference_nan) =>
        {
            return Some("mode-mismatch-Maximum-xla-nan");
        }
        // Float32 XLA multiplies a transposed conv's non-finite weights by the zeros it pads
        // and dilates with: the whole filter turns NaN.
        Kind::ModeMismatch | Kind::UnexpectedNan
            if xla
                && dtype == DType::Float32
                && conv_transpose
                && nonfinite_weights
                && (v.kind == Kind::ModeMismatch || v.detail.contains(": TensorFlow NaN,")) =>
        {
            return Some("unexpected-nan-Conv2DTranspose-xla-float32-nonfinite-kernel");
        }
        // oneDNN's float32 transposed convolution with strides above 1 multiplies a
        // non-finite kernel tap by the zeros between the strided inputs: NaN at outputs the
        // weight never reaches (or what the activation makes of that NaN). XLA computes the
        // scatter itself: only a mode mismatch involves it.
        Kind::UnexpectedNan | Kind::Mismatch | Kind::ModeMismatch
            if conv_transpose
                && (!xla || v.kind == Kind::ModeMismatch)
                && dtype == DType::Float32
                && nonfinite_kernel
                && strided(config)
                && (v.kind != Kind::UnexpectedNan || v.detail.contains(": TensorFlow NaN,")) =>
        {
            return Some("unexpected-nan-Conv1DTranspose-float32-onednn-strided-nonfinite-kernel");
        }
        // TF's float64/float16 Conv3DTranspose kernel, given a batch of two or more, also
        // multiplies a non-finite kernel weight by the zeros around the input: NaN at outputs
        // the weight never reaches (or what the activation makes of that NaN).
        Kind::UnexpectedNan | Kind::Mismatch | Kind::ModeMismatch
            if class == "Conv3DTranspose"
                // XLA computes the scatter: only a mode mismatch involves it.
                && (!xla || v.kind == Kind::ModeMismatch)
                && matches!(dtype, DType::Float64 | DType::Float16)
                && nonfinite_kernel
                && batched
                && (v.kind != Kind::UnexpectedNan || v.detail.contains(": TensorFlow NaN,")) =>
        {
            return Some("unexpected-nan-Conv3DTranspose-float64-batch-nonfinite-kernel");
        }
        // XLA folds a ZeroPadding layer's pad into the 2-D/3-D convolution after it, whose
        // own padding never multiplies the weights: a non-finite weight times those zeros
        // (NaN in eager mode) vanishes.
        Kind::UnexpectedNan | Kind::ModeMismatch
            if xla
                && matches!(class, "Conv2D" | "Conv3D")
                && nonfinite_kernel
                && (v.kind == Kind::ModeMismatch || tf_finite_reference_not(&v.detail))
                && call.is_some_and(|c| fed_by_zero_padding(case, c)) =>
        {
            return Some("mode-mismatch-Conv2D-xla-folded-zero-padding-nonfinite-kernel");
        }
        // XLA's bilinear resize (the kept `mode-mismatch-UpSampling2D-xla-bilinear`) also
        // weighs an infinite pixel otherwise: +inf where eager mode and the reference
        // multiply it by a zero weight (NaN).
        Kind::UnexpectedNan
            if xla
                && class == "UpSampling2D"
                && config.get("interpolation").and_then(Value::as_str) == Some("bilinear") =>
        {
            return Some("mode-mismatch-UpSampling2D-xla-bilinear");
        }
        // XLA fuses a softmax with the product feeding it and gives NaN (or inf) for finite
        // logits whose rounding error exceeds exp's range (above 1e10 in float32, 1e20 in
        // float64), where eager mode gives the right weights: Attention's and
        // MultiHeadAttention's scores in float32, and a Softmax layer after a Multiply in
        // either dtype. Where the error stays inside exp's range, an attention layer's
        // weights stay finite but do not sum to 1: a finite mismatch under XLA (campaign 20).
        // No value tells this apart from another wrong output there: every float32 XLA
        // mismatch at an attention layer counts as this bug.
        Kind::UnexpectedNan | Kind::ModeMismatch | Kind::Mismatch
            if (attention && dtype == DType::Float32 || class == "Softmax")
                && xla
                && (v.kind == Kind::ModeMismatch
                    || tf_nonfinite(&v.detail)
                    || v.kind == Kind::Mismatch && attention) =>
        {
            return Some("unexpected-nan-Attention-xla-float32-fused-softmax-large-scores");
        }
        // Graph mode fuses conv/matmul + bias + relu into one oneDNN kernel (float32) whose
        // relu maps NaN to 0.
        Kind::ModeMismatch | Kind::UnexpectedNan
            if v.mode == Some(Mode::Graph)
                && dtype == DType::Float32
                && matches!(class, "Conv2D" | "Conv3D" | "Dense")
                && config.get("use_bias").and_then(Value::as_bool) != Some(false)
                && (activation("relu") || activation("relu6"))
                && (v.kind == Kind::ModeMismatch || reference_nan) =>
        {
            return Some("unexpected-nan-Conv2D-graph-float32-fused-relu");
        }
        // Float64 XLA computes depthwise convs as if across channels with zero weights: a
        // non-finite input turns the other channels at its position NaN.
        Kind::ModeMismatch | Kind::UnexpectedNan
            if xla
                && dtype == DType::Float64
                && matches!(
                    class,
                    "DepthwiseConv1D" | "DepthwiseConv2D" | "SeparableConv1D" | "SeparableConv2D"
                )
                && (v.kind == Kind::ModeMismatch || tf_nan_or_what_activation_makes_of_it) =>
        {
            return Some("unexpected-nan-DepthwiseConv2D-xla-float64-inf-other-channels");
        }
        // Keras runs grouped convolutions through XLA in every mode (TF's CPU kernels lack
        // them), and float64 XLA spreads a non-finite input to the other groups alike.
        Kind::UnexpectedNan
            if dtype == DType::Float64
                && matches!(class, "Conv1D" | "Conv2D" | "Conv3D")
                && config
                    .get("groups")
                    .and_then(Value::as_u64)
                    .is_some_and(|g| g > 1)
                && tf_nan_or_what_activation_makes_of_it =>
        {
            return Some("unexpected-nan-DepthwiseConv2D-xla-float64-inf-other-channels");
        }
        // `same` padding with a non-finite weight over the padded zeros: NaN in float64 eager
        // (Eigen, as the reference), skipped by oneDNN (float32) and by XLA.
        Kind::ModeMismatch | Kind::UnexpectedNan
            if same_padded_conv
                && nonfinite_weights
                && (dtype == DType::Float32 || xla || keras_xla_conv)
                && (v.kind == Kind::ModeMismatch || reference_nan) =>
        {
            return Some("unexpected-nan-DepthwiseConv2D-same-padding-nonfinite-weight");
        }
        // Keras checks neither a Softmax axis against the rank nor the normalizations' axes
        // for repeats: the kernel refuses them when the model runs (or a later layer refuses
        // the model first).
        Kind::LateError | Kind::MissingValidation
            if class == "Softmax"
                && (v.detail.contains(" is out of range ")
                    || v.detail.contains(" repeats axis ")) =>
        {
            return Some("late-error-Softmax-axis-out-of-range");
        }
        // Keras's `same` transposed-conv length with `output_padding=0` and an even kernel,
        // which TF's kernel derives a different input length from (or which a later layer
        // refuses before the kernel runs).
        Kind::LateError | Kind::MissingValidation
            if conv_transpose
                && v.detail.contains(": output_padding[")
                && v.detail.contains(" gives an output length ")
                && (v.kind == Kind::LateError
                    || v.detail
                        .contains(", which consumes its output, refused first: ")) =>
        {
            return Some("late-error-Conv1DTranspose-same-even-kernel-output-length");
        }
        // Where that length is 0 along some axis, eager TF returns the empty output without
        // running the kernel; XLA checks the lengths (of every axis) and refuses: a mode
        // mismatch, or, where XLA ran alone, an unexpected rejection (campaign 21).
        _ if raised
            && conv_transpose
            && v.mode == Some(Mode::Xla)
            && config.get("padding").and_then(Value::as_str) == Some("same")
            && even_dilated_kernel(config)
            && v.detail
                .contains(": Size of out_backprop doesn't match computed: ") =>
        {
            return Some("late-error-Conv1DTranspose-same-even-kernel-output-length");
        }
        // Nor do these normalizations check their axes for repeats (a later layer may refuse
        // the model first).
        Kind::LateError | Kind::MissingValidation
            if matches!(
                class,
                "UnitNormalization" | "LayerNormalization" | "RMSNormalization"
            ) && v.detail.contains(" repeats axis ") =>
        {
            return Some("late-error-UnitNormalization-duplicate-axes");
        }
        // Float32 softmax through oneDNN: a row holding inf or NaN gives 0 where NaN is due
        // (XLA, which does not use oneDNN, gives the NaN: eager and XLA then differ).
        Kind::UnexpectedNan | Kind::ModeMismatch
            if dtype == DType::Float32
                && (class == "Softmax" || activation("softmax"))
                && (v.detail.contains(", reference NaN")
                    || v.kind == Kind::ModeMismatch && xla) =>
        {
            return Some("unexpected-nan-Softmax-float32-onednn-inf");
        }
        _ => {}
    }
    // TF's float64/float16 Conv3D kernel takes `same` padding unclamped: where the strides
    // step past the end of a short axis, the negative total becomes a negative leading pad
    // and every window on that axis starts inside the input (a shifted value, or a NaN
    // shifted in).
    if matches!(
        v.kind,
        Kind::Mismatch | Kind::UnexpectedNan | Kind::ModeMismatch
    ) && matches!(dtype, DType::Float64 | DType::Float16)
        && class == "Conv3D"
        && call.is_some_and(|c| conv3d_same_window_shifts(config, &c.input_shapes))
    {
        return Some("mismatch-Conv3D-float64-same-padding-shifted-window");
    }
    // The same shortcut moves a non-finite bias entry onto other outputs: TF gives NaN where
    // the reference has a finite value, and the reverse.
    if v.kind == Kind::UnexpectedNan
        && nonfinite_weights
        && ops_add_bias_shortcut(class, config, call)
    {
        return Some("mismatch-DepthwiseConv2D-channels-first-bias");
    }
    let broadcasting_merge = matches!(class, "Add" | "Average" | "Subtract")
        && call.is_some_and(|c| c.input_shapes.windows(2).any(|w| w[0] != w[1]));
    let case_nonfinite = || {
        case.inputs
            .iter()
            .map(|t| &t.data)
            .chain(case.weights.values().flatten().map(|w| &w.data))
            .any(|d| d.iter().any(|x| !x.is_finite()))
    };
    if matches!(v.kind, Kind::Mismatch | Kind::ModeMismatch) {
        // XLA's bilinear resize takes the next pixel at some sample points that fall exactly
        // on an input pixel (odd upscale factors).
        if v.mode == Some(Mode::Xla)
            && class == "UpSampling2D"
            && config.get("interpolation").and_then(Value::as_str) == Some("bilinear")
        {
            return Some("mode-mismatch-UpSampling2D-xla-bilinear");
        }
        // Keras's float64 gelu goes through float32 constants (as any activation of the layer,
        // a recurrent one included, or of a layer nested in it).
        if dtype == DType::Float64 && uses_activation(&Value::Object(config.clone()), "gelu") {
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
        if rms_triggers.contains(&layer.name.as_str()) {
            return Some(KnownBug::RmsNormalizationAxisScale.id());
        }
        if ops_add_bias_shortcut(class, config, call) {
            return Some("mismatch-DepthwiseConv2D-channels-first-bias");
        }
        // Float64 Rescaling, Normalization (statistics in its config) and Masking turn their
        // Python float constants into float32 tensors first.
        let f32_constant = |key: &str| {
            let rounded = |x: f64| x.is_finite() && x as f32 as f64 != x;
            match config.get(key) {
                Some(Value::Number(n)) => n.as_f64().is_some_and(rounded),
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_f64).any(rounded),
                _ => false,
            }
        };
        let masking_f32_value = case.model.layers.iter().any(|l| {
            l.class_name == "Masking"
                && l.config
                    .get("mask_value")
                    .and_then(Value::as_f64)
                    .is_some_and(|x| x.is_finite() && x as f32 as f64 != x)
        });
        if dtype == DType::Float64
            && ((class == "Rescaling" && (f32_constant("scale") || f32_constant("offset")))
                || (class == "Normalization" && (f32_constant("mean") || f32_constant("variance")))
                || masking_f32_value)
        {
            return Some("mismatch-Rescaling-float64-constants-float32");
        }
        // Normalization caches its statistics when built: `set_weights` (how the harness loads
        // adapted statistics) leaves the cache stale.
        if class == "Normalization" && case.weights.get(&layer.name).is_some_and(|w| !w.is_empty())
        {
            return Some("mismatch-Normalization-set-weights-stale-statistics");
        }
        if broadcasting_merge {
            return Some("mismatch-Average-ops-add-broadcast");
        }
        // GlobalAveragePooling1D counts a mask whose steps axis broadcasts once in its
        // divisor, so it returns the sum of the steps, not their mean.
        if class == "GlobalAveragePooling1D"
            && let (Some(a), Some(c)) = (analysis, call)
            && let Some(mask) = received_mask(case, a, c)
        {
            let steps =
                if config.get("data_format").and_then(Value::as_str) == Some("channels_first") {
                    2
                } else {
                    1
                };
            let input_steps = c.input_shapes.first().and_then(|x| x.get(steps).copied());
            if mask.get(1) == Some(&1) && input_steps.flatten().is_some_and(|n| n > 1) {
                return Some("mismatch-GlobalAveragePooling1D-channels-first-mask-sum");
            }
        }
    }
    // The same merge moves values between positions (and samples), a non-finite one too: TF
    // is then non-finite where the reference is not. The bug makes no non-finite value of
    // finite ones, so one must be in the case's inputs or weights.
    if v.kind == Kind::UnexpectedNan && broadcasting_merge && case_nonfinite() {
        return Some("mismatch-Average-ops-add-broadcast");
    }
    None
}

/// The shape of the mask a call's first input carries, as the reference found it (`None`
/// when unmasked, or when the mask is passed as a keyword argument).
fn received_mask(
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

/// Whether an unclear-error verdict's message is one of the build-time checks Keras raises
/// without naming the layer, at a layer of a class that raises it.
fn unnamed_build_error(class: &str, detail: &str) -> bool {
    let merge = matches!(
        class,
        "Add" | "Subtract" | "Multiply" | "Average" | "Minimum" | "Maximum"
    );
    let conv = class.contains("Conv");
    let checks: [(bool, &str); 5] = [
        (merge, ": Inputs have incompatible shapes. Received shapes "),
        (class == "Dot", ": Incompatible input shapes: axis values "),
        // Raised by the shape computation that convolutions and poolings share (also under
        // a wrapper): any class.
        (true, ": Computed output size would be zero or negative."),
        (
            conv || class == "TimeDistributed",
            ": Kernel shape must have the same length as input",
        ),
        (
            class == "MultiHeadAttention",
            ": All dimensions of `value` and `key`, except the last one, must be equal.",
        ),
    ];
    checks.iter().any(|(at, text)| *at && detail.contains(text))
}

/// Whether a verdict's detail is about a size of `GroupQueryAttention` that is not positive:
/// the violation the judge quotes, or the argument an unclear message does not name.
fn unchecked_attention_size(detail: &str) -> bool {
    ["head_dim", "num_query_heads", "num_key_value_heads"]
        .iter()
        .any(|p| {
            detail.contains(&format!("{p}=")) && detail.contains(" is not positive ")
                || detail.contains(&format!("nor `{p}`"))
                    && detail.contains("Negative dimensions are not allowed")
        })
}

/// Whether a call's first input is the output of a `ZeroPadding2D` or `ZeroPadding3D`.
fn fed_by_zero_padding(case: &Case, call: &oracle::check::CheckedCall) -> bool {
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

const NONFINITE: [&str; 3] = ["NaN", "inf", "-inf"];

/// Whether a value verdict's detail says TF's value is NaN or infinite.
fn tf_nonfinite(detail: &str) -> bool {
    NONFINITE
        .iter()
        .any(|x| detail.contains(&format!(": TensorFlow {x}, ")))
}

/// Whether a value verdict's detail says TF's value is finite and the reference's is not.
fn tf_finite_reference_not(detail: &str) -> bool {
    NONFINITE
        .iter()
        .any(|x| detail.contains(&format!(", reference {x} ")))
        && !tf_nonfinite(detail)
}

/// A config argument given as an int or a list of ints (`kernel_size`, `strides`,
/// `output_size`), as its non-negative entries; empty when absent.
fn config_ints(config: &serde_json::Map<String, Value>, key: &str) -> Vec<u64> {
    match config.get(key) {
        Some(Value::Array(v)) => v.iter().filter_map(Value::as_u64).collect(),
        Some(v) => v.as_u64().into_iter().collect(),
        None => Vec::new(),
    }
}

/// Whether a convolution's dilated kernel (`kernel_size` and `dilation_rate`, ints or lists)
/// is even along some axis.
fn even_dilated_kernel(config: &serde_json::Map<String, Value>) -> bool {
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
fn strided(config: &serde_json::Map<String, Value>) -> bool {
    config_ints(config, "strides").iter().any(|&s| s > 1)
}

/// A max pooling layer (which drops NaN, kept bug `unexpected-nan-MaxPooling1D-nan-and-neg-inf`).
fn is_max_pooling(class: &str) -> bool {
    matches!(
        class,
        "MaxPooling1D"
            | "MaxPooling2D"
            | "MaxPooling3D"
            | "AdaptiveMaxPooling1D"
            | "AdaptiveMaxPooling2D"
            | "AdaptiveMaxPooling3D"
    )
}

/// Whether a layer config (or a config nested in it) names this activation, as `activation`
/// or `recurrent_activation`.
fn uses_activation(config: &Value, name: &str) -> bool {
    let named = |a: &Value| {
        a.as_str() == Some(name)
            || a.get("config")
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                == Some(name)
    };
    match config {
        Value::Object(o) => o.iter().any(|(k, v)| {
            ((k == "activation" || k == "recurrent_activation") && named(v))
                || uses_activation(v, name)
        }),
        Value::Array(a) => a.iter().any(|v| uses_activation(v, name)),
        _ => false,
    }
}

/// Whether a layer's config (or a layer it wraps) is a gated recurrent cell's: it has a
/// `recurrent_activation`.
fn gated(config: &Value) -> bool {
    match config {
        Value::Object(o) => o
            .iter()
            .any(|(k, v)| k == "recurrent_activation" || gated(v)),
        Value::Array(a) => a.iter().any(gated),
        _ => false,
    }
}

/// Whether this layer's bias goes through `ops.add`'s bias_add shortcut onto the wrong axis
/// (see `crashes/mismatch-DepthwiseConv2D-channels-first-bias`).
fn ops_add_bias_shortcut(
    class: &str,
    config: &serde_json::Map<String, Value>,
    call: Option<&oracle::check::CheckedCall>,
) -> bool {
    // `ops.add` takes a bias_add shortcut along the last axis when a vector's length
    // equals that axis: a channels_first bias whose channel count equals the last
    // spatial size.
    let out = call.and_then(|c| c.outputs.first());
    let channels_first_bias = config.get("data_format").and_then(Value::as_str)
        == Some("channels_first")
        // Keras's default is a bias.
        && config.get("use_bias").and_then(Value::as_bool).unwrap_or(true)
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
fn einsum_bias_off_last_axis(
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
fn conv3d_same_window_shifts(
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
    // An int or a list of three, as Keras accepts them.
    let triple = |key: &str| -> Option<Vec<i64>> {
        match config.get(key) {
            None => Some(vec![1; 3]),
            Some(Value::Number(n)) => n.as_i64().map(|n| vec![n; 3]),
            Some(Value::Array(a)) => a.iter().map(Value::as_i64).collect(),
            _ => None,
        }
    };
    let (Some(k), Some(s), Some(d)) = (
        config.get("kernel_size").and(triple("kernel_size")),
        triple("strides"),
        triple("dilation_rate"),
    ) else {
        return false;
    };
    (0..3).any(|a| {
        let (Some(&k), Some(&s), Some(&d), Some(Some(n))) =
            (k.get(a), s.get(a), d.get(a), x.get(a + 1))
        else {
            return false;
        };
        let n = *n as i64;
        if s < 1 || n < 1 {
            return false;
        }
        let out = (n + s - 1) / s;
        (out - 1) * s + (k - 1) * d + 1 - n <= -2
    })
}

/// The reference's analysis of the calls an invalid case makes before its first violation,
/// on the inputs' shapes (the declared ones when it has no inputs); `None` when the reference
/// cannot check the model. The matchers take it for the analysis an invalid case lacks: the
/// layers before the violation ran in TF on these shapes.
pub fn calls_before_violation(case: &Case, dtype: DType) -> Option<ModelAnalysis> {
    let shapes = check::input_shapes(case).ok()?;
    check::check_prefix(&case.model, &shapes, dtype)
        .ok()
        .map(|(analysis, _)| analysis)
}

/// [`known_bugs::adaptive_window_exceeds_input`] on a call's first input.
fn adaptive_window_exceeds_input(
    layer: &oracle::case::Layer,
    inputs: &[oracle::case::Dims],
) -> bool {
    inputs
        .first()
        .is_some_and(|x| known_bugs::adaptive_window_exceeds_input(layer, x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    /// An invalid case has no analysis: the pooling's shapes come from the calls before the
    /// first violation (campaign 22: the pooling, then a layer the reference refuses).
    #[test]
    fn a_traced_adaptive_pooling_refusal_before_a_later_violation_is_the_window_bug() {
        let case_with = |output_size: u64| {
            let text = json!({
                "format": "semfuzz-case/1",
                "dtype": "float64",
                "model": {
                    "name": "functional",
                    "layers": [
                        {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                         "config": {"batch_shape": [null, 4, 3], "name": "x"}, "inbound_nodes": []},
                        {"module": "keras.layers", "class_name": "AdaptiveAveragePooling1D", "name": "l",
                         "config": {"name": "l", "output_size": [output_size]},
                         "inbound_nodes": [{"args": [keras_tensor("x")], "kwargs": {}}]},
                        {"module": "keras.layers", "class_name": "Reshape", "name": "r",
                         "config": {"name": "r", "target_shape": [7]},
                         "inbound_nodes": [{"args": [keras_tensor("l")], "kwargs": {}}]}
                    ],
                    "input_layers": [["x", 0, 0]],
                    "output_layers": [["r", 0, 0]]
                },
                "weights": {},
                "inputs": []
            });
            Case::from_json_str(&text.to_string(), "test.case.json").unwrap()
        };
        let raised = verdict_at_l(
            Kind::UnexpectedRejection,
            "unexpected-rejection/AdaptiveAveragePooling1D/xla:ValueError",
            Some(Mode::Xla),
            "xla raises where the reference (and other modes) do not: ValueError: Negative \
             dimension size caused by subtracting 5 from 4; the reference's first violation is \
             later, at 'r'",
        );
        // A 4-long axis pooled to 1: the second pool is 5 long.
        let over_long = case_with(1);
        assert!(oracle::check::check(&over_long).is_err());
        let explained = |case: &Case| {
            let prefix = calls_before_violation(case, DType::Float64);
            assert!(prefix.is_some());
            framework_bug(case, DType::Float64, &raised, prefix.as_ref())
        };
        assert_eq!(
            explained(&over_long),
            Some("mode-mismatch-AdaptiveMaxPooling1D-graph-window-exceeds-input")
        );
        // Pooled to 2, the windows fit: the same refusal is something else.
        assert_eq!(explained(&case_with(2)), None);
    }

    /// A one-layer float64 case: `class` with `config` on an input of this batch shape, and
    /// these weights.
    /// A reference to a layer's first output, as a case's `inbound_nodes` write it.
    pub(super) fn keras_tensor(name: &str) -> Value {
        json!({"class_name": "__keras_tensor__", "config": {"keras_history": [name, 0, 0]}})
    }

    /// The kept bug explaining `v` on a float64 `case`, with the shapes the reference finds.
    pub(super) fn explained_with_shapes(case: &Case, v: &Verdict) -> Option<&'static str> {
        let analysis = oracle::check::check_in(case, DType::Float64).unwrap();
        framework_bug(case, DType::Float64, v, Some(&analysis))
    }

    pub(super) fn one_layer_case(
        class: &str,
        config: Value,
        batch_shape: Value,
        weights: Value,
    ) -> Case {
        let mut config = config;
        config["name"] = json!("l");
        let text = json!({
            "format": "semfuzz-case/1",
            "dtype": "float64",
            "model": {
                "name": "functional",
                "layers": [
                    {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                     "config": {"batch_shape": batch_shape, "name": "x"}, "inbound_nodes": []},
                    {"module": "keras.layers", "class_name": class, "name": "l", "config": config,
                     "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                        "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}
                ],
                "input_layers": [["x", 0, 0]],
                "output_layers": [["l", 0, 0]]
            },
            "weights": {"l": weights},
            "inputs": []
        });
        Case::from_json_str(&text.to_string(), "test.case.json").unwrap()
    }

    /// A verdict at layer `l`, not yet explained.
    pub(super) fn verdict_at_l(
        kind: Kind,
        signature: &str,
        mode: Option<Mode>,
        detail: &str,
    ) -> Verdict {
        Verdict {
            kind,
            signature: signature.into(),
            layer: Some("l".into()),
            mode,
            detail: detail.into(),
            known: None,
        }
    }

    fn nan_verdict(class: &str, detail: &str) -> Verdict {
        verdict_at_l(
            Kind::UnexpectedNan,
            &format!("unexpected-nan/{class}"),
            Some(Mode::Eager),
            detail,
        )
    }

    /// A float32 strided transposed conv with a non-finite kernel weight is the oneDNN bug;
    /// unstrided, in float64, with finite weights, as a NaN of the reference's or at another
    /// convolution, it is not.
    #[test]
    fn a_strided_float32_transposed_conv_with_a_nonfinite_weight_is_the_onednn_bug() {
        let case = |class: &str, strides: Value, tap: Value| {
            one_layer_case(
                class,
                json!({"filters": 1, "kernel_size": 3, "strides": strides, "use_bias": false}),
                json!([null, 1, 1]),
                json!([{"shape": [3, 1, 1], "data": [1.0, 1.0, tap]}]),
            )
        };
        let bug = Some("unexpected-nan-Conv1DTranspose-float32-onednn-strided-nonfinite-kernel");
        let nan = nan_verdict(
            "Conv1DTranspose",
            "'l' output 0 at [0, 0, 0]: TensorFlow NaN, reference 1e0",
        );
        let explained = |c: &Case, dtype: DType, v: &Verdict| framework_bug(c, dtype, v, None);
        let strided = case("Conv1DTranspose", json!([2]), json!("-inf"));
        assert_eq!(explained(&strided, DType::Float32, &nan), bug);
        assert_eq!(explained(&strided, DType::Float64, &nan), None);
        let unstrided = case("Conv1DTranspose", json!([1]), json!("-inf"));
        assert_eq!(explained(&unstrided, DType::Float32, &nan), None);
        let finite = case("Conv1DTranspose", json!(2), json!(5.0));
        assert_eq!(explained(&finite, DType::Float32, &nan), None);
        let reference_nan = nan_verdict(
            "Conv1DTranspose",
            "'l' output 0 at [0, 0, 0]: TensorFlow 1e0, reference NaN",
        );
        assert_eq!(explained(&strided, DType::Float32, &reference_nan), None);
        let conv3d = case("Conv3DTranspose", json!([2, 1, 1]), json!("-inf"));
        assert_eq!(explained(&conv3d, DType::Float32, &nan), bug);
        let conv = case("Conv1D", json!([2]), json!("-inf"));
        assert_eq!(explained(&conv, DType::Float32, &nan), None);
    }

    /// Under XLA, a Conv2D fed by a ZeroPadding2D with a NaN weight and a finite TF value
    /// where the reference's is NaN is the folded-padding bug; fed by the input, in eager
    /// mode, or with finite weights, it is not.
    #[test]
    fn an_xla_conv_after_zero_padding_with_a_nan_weight_is_the_folding_bug() {
        let case = |producer: &str, weight: Value| {
            let tensor = |name: &str| {
                json!({"class_name": "__keras_tensor__",
                "config": {"keras_history": [name, 0, 0]}})
            };
            let mut layers = vec![json!({"module": "keras.layers", "class_name": "InputLayer",
                "name": "x", "config": {"batch_shape": [null, 2, 2, 1], "name": "x"},
                "inbound_nodes": []})];
            let mut fed = "x";
            if producer == "ZeroPadding2D" {
                layers.push(
                    json!({"module": "keras.layers", "class_name": "ZeroPadding2D",
                    "name": "p", "config": {"name": "p", "padding": 1},
                    "inbound_nodes": [{"args": [tensor("x")], "kwargs": {}}]}),
                );
                fed = "p";
            }
            layers.push(
                json!({"module": "keras.layers", "class_name": "Conv2D", "name": "l",
                "config": {"name": "l", "filters": 1, "kernel_size": 2, "use_bias": false},
                "inbound_nodes": [{"args": [tensor(fed)], "kwargs": {}}]}),
            );
            let text = json!({"format": "semfuzz-case/1", "dtype": "float64",
                "model": {"name": "m", "layers": layers, "input_layers": [["x", 0, 0]],
                          "output_layers": [["l", 0, 0]]},
                "weights": {"l": [{"shape": [2, 2, 1, 1], "data": [weight, 1.0, 1.0, 1.0]}]},
                "inputs": []});
            Case::from_json_str(&text.to_string(), "test.case.json").unwrap()
        };
        let verdict = |mode: Mode| {
            verdict_at_l(
                Kind::UnexpectedNan,
                "unexpected-nan/Conv2D",
                Some(mode),
                "'l' output 0 at [0, 0, 0, 0]: TensorFlow 1e0, reference NaN (tolerance)",
            )
        };
        let bug = Some("mode-mismatch-Conv2D-xla-folded-zero-padding-nonfinite-kernel");
        let explained = |c: &Case, mode: Mode| {
            let analysis = oracle::check::check_in(c, DType::Float64).unwrap();
            framework_bug(c, DType::Float64, &verdict(mode), Some(&analysis))
        };
        let padded = case("ZeroPadding2D", json!("nan"));
        assert_eq!(explained(&padded, Mode::Xla), bug);
        assert_eq!(explained(&padded, Mode::Eager), None);
        assert_eq!(explained(&case("input", json!("nan")), Mode::Xla), None);
        assert_eq!(
            explained(&case("ZeroPadding2D", json!(2.0)), Mode::Xla),
            None
        );
    }

    /// Float64 XLA's depthwise NaN in other channels is the kept bug also where the layer's
    /// activation turns that NaN into 0 (hard_shrink); with an activation that keeps NaN, a
    /// finite TF value is not it.
    #[test]
    fn a_depthwise_nan_the_activation_zeroes_is_still_the_xla_bug() {
        let bug = Some("unexpected-nan-DepthwiseConv2D-xla-float64-inf-other-channels");
        let at = |activation: &str| {
            let case = one_layer_case(
                "DepthwiseConv2D",
                json!({"kernel_size": [1, 2], "activation": activation}),
                json!([null, 3, 5, 2]),
                json!([]),
            );
            let v = verdict_at_l(
                Kind::UnexpectedNan,
                "unexpected-nan/DepthwiseConv2D",
                Some(Mode::Xla),
                "'l' output 0 at [0, 0, 0, 1]: TensorFlow 0e0, reference inf (tolerance abs 2.3e-15)",
            );
            framework_bug(&case, DType::Float64, &v, None)
        };
        assert_eq!(at("hard_shrink"), bug);
        assert_eq!(at("linear"), None);
    }

    /// XLA's bilinear UpSampling2D giving +inf where the reference's zero weight on an
    /// infinite pixel gives NaN is the kept XLA bilinear bug; in eager mode, or with nearest
    /// interpolation, it is not.
    #[test]
    fn an_xla_bilinear_upsampling_of_an_infinity_is_the_bilinear_bug() {
        let at = |interpolation: &str, mode: Mode| {
            let case = one_layer_case(
                "UpSampling2D",
                json!({"interpolation": interpolation}),
                json!([null, 1, 1, 1]),
                json!([]),
            );
            let v = verdict_at_l(
                Kind::UnexpectedNan,
                "unexpected-nan/UpSampling2D",
                Some(mode),
                "'l' output 0 at [0, 0, 0, 0]: TensorFlow inf, reference NaN (tolerance)",
            );
            framework_bug(&case, DType::Float32, &v, None)
        };
        let bug = Some("mode-mismatch-UpSampling2D-xla-bilinear");
        assert_eq!(at("bilinear", Mode::Xla), bug);
        assert_eq!(at("bilinear", Mode::Eager), None);
        assert_eq!(at("nearest", Mode::Xla), None);
    }

    /// The build-time messages that name no layer are the kept bug at the classes that raise
    /// them; the same words at another class, or another unclear message, are not.
    #[test]
    fn a_build_error_naming_no_layer_is_the_kept_bug_at_its_classes_only() {
        let bug = Some("unclear-error-build-errors-name-no-layer");
        let at = |class: &str, kind: Kind, message: &str| {
            let case = one_layer_case(class, json!({}), json!([null, 4]), json!([]));
            let detail =
                format!("the error names neither layer 'l' nor `inputs`: ValueError: {message}");
            let v = verdict_at_l(
                kind,
                &format!("{}/{class}/ValueError", kind.name()),
                None,
                &detail,
            );
            framework_bug(&case, DType::Float64, &v, None)
        };
        let merge = "Inputs have incompatible shapes. Received shapes (4,) and (2,)";
        let dot = "Incompatible input shapes: axis values 3 (at axis 1) != 5 (at axis 1).";
        let conv =
            "Computed output size would be zero or negative. Received `inputs shape=(None, 2, 4)`";
        let rank = "Kernel shape must have the same length as input, but received kernel of shape (2, 1, 2)";
        for class in [
            "Add", "Subtract", "Multiply", "Average", "Minimum", "Maximum",
        ] {
            assert_eq!(at(class, Kind::UnclearError, merge), bug, "{class}");
        }
        assert_eq!(at("Dot", Kind::UnclearError, dot), bug);
        for class in ["Conv1D", "DepthwiseConv2D", "SeparableConv1D", "Conv3D"] {
            assert_eq!(at(class, Kind::UnclearError, conv), bug, "{class}");
        }
        assert_eq!(at("TimeDistributed", Kind::UnclearError, rank), bug);
        let key_value = "All dimensions of `value` and `key`, except the last one, must be \
                         equal. Received: value_shape=(None, 1, 8) and key_shape=(None, 2, 8)";
        assert_eq!(at("MultiHeadAttention", Kind::UnclearError, key_value), bug);
        assert_eq!(
            at("GroupQueryAttention", Kind::UnclearError, key_value),
            None
        );
        // The same words elsewhere, another kind, another message.
        assert_eq!(at("Attention", Kind::UnclearError, merge), None);
        assert_eq!(at("Concatenate", Kind::UnclearError, merge), None);
        // The output-size message comes from a shape computation poolings and wrappers
        // share.
        assert_eq!(at("TimeDistributed", Kind::UnclearError, conv), bug);
        assert_eq!(at("AdaptiveMaxPooling2D", Kind::UnclearError, conv), bug);
        assert_eq!(at("Add", Kind::LateError, merge), None);
        assert_eq!(
            at(
                "Add",
                Kind::UnclearError,
                "Cannot convert '(6, -1)' to a shape."
            ),
            None
        );
    }

    /// A `same` transposed conv whose Keras length is 0 runs eagerly (an empty output) and is
    /// refused by XLA: the output-length bug, at that layer and in XLA only.
    #[test]
    fn xla_refusing_an_empty_same_transposed_conv_is_the_output_length_bug() {
        let bug = Some("late-error-Conv1DTranspose-same-even-kernel-output-length");
        let detail = "xla raises where the reference (and other modes) do not: \
            InvalidArgumentError: Conv2DBackpropInput: Size of out_backprop doesn't match \
            computed: actual = 1, computed = 0 spatial_dim: 2 input: 0 filter: 2 output: 1";
        let judged = |padding: &str, mode: Mode, kind: Kind| {
            let case = one_layer_case(
                "Conv1DTranspose",
                json!({"filters": 3, "kernel_size": [2], "padding": padding, "output_padding": 0}),
                json!([null, 1, 2]),
                json!([]),
            );
            let sig = format!(
                "{}/Conv1DTranspose/{}:InvalidArgumentError",
                kind.name(),
                mode.name()
            );
            let v = verdict_at_l(kind, &sig, Some(mode), detail);
            framework_bug(&case, DType::Float32, &v, None)
        };
        let at = |padding: &str, mode: Mode| judged(padding, mode, Kind::ModeMismatch);
        assert_eq!(at("same", Mode::Xla), bug);
        assert_eq!(at("same", Mode::Graph), None);
        assert_eq!(at("valid", Mode::Xla), None);
        // XLA run alone refuses it where the reference does not (campaign 21).
        let alone = |padding: &str, mode: Mode| judged(padding, mode, Kind::UnexpectedRejection);
        assert_eq!(alone("same", Mode::Xla), bug);
        assert_eq!(alone("same", Mode::Eager), None);
        assert_eq!(alone("valid", Mode::Xla), None);
        // Another axis's length: a kernel of 2 with stride 3 on (2, 1) steps makes (3, 0),
        // and XLA derives 1 step from the 3 (campaign 4's Conv2DTranspose). An odd kernel
        // is not the bug.
        let conv2d = |kernel: u64| {
            let case = one_layer_case(
                "Conv2DTranspose",
                json!({"filters": 16, "kernel_size": [kernel, kernel], "strides": 3,
                       "padding": "same", "output_padding": 0}),
                json!([null, 2, 1, 16]),
                json!([]),
            );
            let detail = "xla raises where the reference (and other modes) do not: \
                InvalidArgumentError: Conv2DBackpropInput: Size of out_backprop doesn't match \
                computed: actual = 2, computed = 1 spatial_dim: 1 input: 3 filter: 2";
            let sig = "mode-mismatch/Conv2DTranspose/xla:InvalidArgumentError";
            let v = verdict_at_l(Kind::ModeMismatch, sig, Some(Mode::Xla), detail);
            framework_bug(&case, DType::Float32, &v, None)
        };
        assert_eq!(conv2d(2), bug);
        assert_eq!(conv2d(3), None);
    }

    /// A division by a zero stride or output size at a pooling layer is the kept bug; the
    /// same error at another class, or for another reason, is not.
    #[test]
    fn a_pooling_dividing_by_a_zero_argument_is_the_kept_bug() {
        let bug = Some("late-error-Pooling-zero-size-division-by-zero");
        let zero = "rejected only by an internal error (ZeroDivisionError: Exception encountered \
            when calling AdaptiveAveragePooling1D.call().); the reference says: \
            AdaptiveAveragePooling1D 'l': output_size[0]=0 is not positive (expected a \
            positive integer)";
        let at = |class: &str, detail: &str| {
            let case = one_layer_case(class, json!({}), json!([null, 1, 1]), json!([]));
            let sig = format!("late-error/{class}/ZeroDivisionError");
            let v = verdict_at_l(Kind::LateError, &sig, Some(Mode::Eager), detail);
            framework_bug(&case, DType::Float32, &v, None)
        };
        for class in [
            "AdaptiveAveragePooling1D",
            "MaxPooling2D",
            "AveragePooling1D",
        ] {
            assert_eq!(at(class, zero), bug, "{class}");
        }
        assert_eq!(at("Conv1D", zero), None);
        let other = "rejected only by an internal error (IndexError: ...); the reference says: \
            'l': strides[0]=0 is not positive (expected a positive integer)";
        assert_eq!(at("MaxPooling1D", other), None);
        // An adaptive pooling's empty axis refused by a later layer first (campaign 6).
        let refused_later = |class: &str, detail: &str| {
            let case = one_layer_case(class, json!({}), json!([null, 1, 1]), json!([]));
            let sig = format!("missing-validation/{class}/illegal-argument");
            let v = verdict_at_l(Kind::MissingValidation, &sig, None, detail);
            framework_bug(&case, DType::Float32, &v, None)
        };
        let empty = "TensorFlow builds a layer the reference calls invalid (keras-enforced): \
            AdaptiveAveragePooling3D 'l': output_size[0]=0 is not positive (expected a \
            positive integer); layer 'reshape', which consumes its output, refused first: \
            ValueError: Exception encountered when calling Reshape.call().";
        assert_eq!(refused_later("AdaptiveAveragePooling3D", empty), bug);
        assert_eq!(refused_later("MaxPooling3D", empty), None);
        let negative = empty.replace("]=0 is not positive", "]=-1 is not positive");
        assert_eq!(refused_later("AdaptiveAveragePooling3D", &negative), None);
    }

    /// Dot over the batch axis, answered by a later layer's refusal, is the kept bug; another
    /// Dot axis violation, or the batch axis at another class, is not.
    #[test]
    fn a_dot_over_the_batch_axis_is_the_kept_bug() {
        let case = one_layer_case("Dot", json!({"axes": 0}), json!([null, 1, 2]), json!([]));
        let batch = "TensorFlow builds a layer the reference calls invalid (keras-enforced): Dot \
            'l': axes=0 is the batch axis of input[0] (expected a non-batch axis); layer 'd', \
            which consumes its output, refused first: ValueError: Incompatible input shapes";
        let range = "TensorFlow runs a model the reference calls invalid (keras-enforced): Dot \
            'l': axes=-3 is out of range for input[0] of rank 2";
        let at = |class: &str, detail: &str| {
            let v = verdict_at_l(
                Kind::MissingValidation,
                "k/Dot/axis",
                Some(Mode::Eager),
                detail,
            );
            let case = if class == "Dot" {
                case.clone()
            } else {
                one_layer_case(class, json!({}), json!([null, 1, 2]), json!([]))
            };
            framework_bug(&case, DType::Float64, &v, None)
        };
        assert_eq!(
            at("Dot", batch),
            Some("missing-validation-Dot-batch-axis-declared-shape")
        );
        assert_eq!(at("Dot", range), None);
        assert_eq!(at("Softmax", batch), None);
    }

    /// GroupQueryAttention on an input of the wrong rank, however TF answers, is the kept
    /// bug; a rank violation at another class, or another violation there, is not.
    #[test]
    fn a_group_query_attention_input_of_the_wrong_rank_is_the_kept_bug() {
        let case = one_layer_case(
            "GroupQueryAttention",
            json!({"head_dim": 1, "num_query_heads": 4, "num_key_value_heads": 1}),
            json!([null, 1, 1, 1]),
            json!([]),
        );
        let rank = "TensorFlow builds a layer the reference calls invalid (keras-enforced): \
            GroupQueryAttention 'l': input[0]=rank 4 has the wrong rank (expected rank 3); \
            layer 'z', which consumes its output, refused first: ValueError: ...";
        let bug = Some("missing-validation-GroupQueryAttention-input-rank");
        let at = |kind: Kind, detail: &str| {
            let v = verdict_at_l(
                kind,
                "k/GroupQueryAttention/rank",
                Some(Mode::Eager),
                detail,
            );
            framework_bug(&case, DType::Float64, &v, None)
        };
        assert_eq!(at(Kind::MissingValidation, rank), bug);
        assert_eq!(at(Kind::UnclearError, rank), bug);
        assert_eq!(at(Kind::LateError, rank), bug);
        assert_eq!(at(Kind::Mismatch, rank), None);
        let other = "TensorFlow runs a model the reference calls invalid (keras-enforced): \
            GroupQueryAttention 'l': dropout=2 is out of range";
        assert_eq!(at(Kind::MissingValidation, other), None);
        let dense = one_layer_case("Dense", json!({"units": 1}), json!([null, 1, 1]), json!([]));
        let v = verdict_at_l(
            Kind::MissingValidation,
            "k/Dense/rank",
            Some(Mode::Eager),
            rank,
        );
        assert_eq!(framework_bug(&dense, DType::Float64, &v, None), None);
    }

    /// GroupQueryAttention's sizes that are not positive, however they fail, are the kept
    /// bug; another GroupQueryAttention violation, or the same at another class, is not.
    #[test]
    fn group_query_attention_sizes_that_are_not_positive_are_the_kept_bug() {
        let bug = Some("late-error-GroupQueryAttention-unchecked-sizes");
        let at = |class: &str, kind: Kind, detail: &str| {
            let case = one_layer_case(class, json!({}), json!([null, 2, 3]), json!([]));
            let sig = format!("{}/{class}/ValueError", kind.name());
            let v = verdict_at_l(kind, &sig, None, detail);
            framework_bug(&case, DType::Float32, &v, None)
        };
        let sqrt = "rejected only by an internal error in its constructor (TypeError: ... math \
            domain error); the reference says: GroupQueryAttention 'l': head_dim=-1 is not \
            positive (expected a positive integer)";
        let kernel = "rejected only inside a kernel (InvalidArgumentError: ...); the reference \
            says: GroupQueryAttention 'l': num_query_heads=0 is not positive (expected a \
            positive integer)";
        let shape = "the error names neither layer 'l' nor `num_key_value_heads`: ValueError: \
            Cannot convert '(3, -2, 2)' to a shape. Negative dimensions are not allowed.";
        assert_eq!(at("GroupQueryAttention", Kind::LateError, sqrt), bug);
        assert_eq!(at("GroupQueryAttention", Kind::LateError, kernel), bug);
        assert_eq!(at("GroupQueryAttention", Kind::UnclearError, shape), bug);
        assert_eq!(at("MultiHeadAttention", Kind::LateError, sqrt), None);
        let other = "the error names neither layer 'l' nor `inputs`: ValueError: Inputs have \
            incompatible shapes";
        assert_eq!(at("GroupQueryAttention", Kind::UnclearError, other), None);
        // Campaign 24: no query heads and no biases runs in eager mode, and graph mode's
        // BiasAdd refuses in words that name neither.
        let runs = "TensorFlow runs a model the reference calls invalid (keras-enforced): \
            GroupQueryAttention 'l': num_query_heads=0 is not positive (expected a positive \
            integer)";
        let bias_rank = "the error names neither layer 'l' nor `num_query_heads`: ValueError: \
            Exception encountered when calling EinsumDense.call(); the reference says: \
            GroupQueryAttention 'l': num_query_heads=0 is not positive (expected a positive \
            integer)";
        assert_eq!(
            at("GroupQueryAttention", Kind::MissingValidation, runs),
            bug
        );
        assert_eq!(
            at("GroupQueryAttention", Kind::UnclearError, bias_rank),
            bug
        );
        assert_eq!(
            at("MultiHeadAttention", Kind::MissingValidation, runs),
            None
        );
    }

    /// An attention layer's `dropout` refused as the `rate` of its Dropout is the kept bug; the
    /// same words about another argument, or at another class, are not.
    #[test]
    fn an_attention_dropout_refused_as_rate_is_the_kept_bug() {
        let bug = Some("unclear-error-MultiHeadAttention-dropout-refused-as-rate");
        let at = |class: &str, parameter: &str| {
            let case = one_layer_case(class, json!({}), json!([null, 2, 3]), json!([]));
            let detail = format!(
                "the error names neither layer 'l' nor `{parameter}`: ValueError: Invalid value \
                 received for argument `rate`. Expected a float value between 0 and 1. \
                 Received: rate=-1.0"
            );
            let sig = format!("unclear-error/{class}/ValueError");
            let v = verdict_at_l(Kind::UnclearError, &sig, None, &detail);
            framework_bug(&case, DType::Float32, &v, None)
        };
        assert_eq!(at("MultiHeadAttention", "dropout"), bug);
        assert_eq!(at("GroupQueryAttention", "dropout"), bug);
        assert_eq!(at("MultiHeadAttention", "key_dim"), None);
        assert_eq!(at("Dropout", "dropout"), None);
    }

    /// A left-ellipsis EinsumDense's reversed declared shape is the kept bug whether TF runs
    /// it, a kernel after it fails, or a layer built on the declared shape refuses it
    /// unclearly (campaign 17's two findings); an unclear error about `output_shape` at an
    /// EinsumDense without a left ellipsis, or about a negative size, is not.
    #[test]
    fn a_reversed_einsum_declared_shape_is_the_kept_bug_however_it_shows() {
        let bug = Some("missing-validation-EinsumDense-ellipsis-declared-shape");
        let at = |equation: &str, kind: Kind, detail: &str| {
            let config = json!({"equation": equation, "output_shape": 1, "bias_axes": "c"});
            let case = one_layer_case("EinsumDense", config, json!([null, 6, 2, 3]), json!([]));
            let v = verdict_at_l(kind, "x/EinsumDense/y", None, detail);
            framework_bug(&case, DType::Float32, &v, None)
        };
        let declared = "the reference says: EinsumDense 'l': output_shape=(None, 4, 1, 1) \
                        makes Keras declare another output shape than the einsum's";
        let late = format!("rejected only inside a kernel (InvalidArgumentError: ...); {declared}");
        let unclear = "the error names neither layer 'l' nor `output_shape`: ValueError: \
                       Inputs have incompatible shapes. Received shapes (2, 6, 1) and (6, 6, 1)";
        let negative = "the error names neither layer 'l' nor `output_shape`: ValueError: \
                        Cannot convert '(3, -1)' to a shape. Negative dimensions are not allowed";
        assert_eq!(at("...b,bc->...c", Kind::MissingValidation, declared), bug);
        assert_eq!(at("...b,bc->...c", Kind::LateError, &late), bug);
        assert_eq!(at("...b,bc->...c", Kind::UnclearError, unclear), bug);
        assert_eq!(at("ab,bc->ac", Kind::UnclearError, unclear), None);
        assert_ne!(at("...b,bc->...c", Kind::UnclearError, negative), bug);
    }

    /// A MultiHeadAttention with a 0 in `output_shape` is the kept bug, whether TF runs it or
    /// a later layer refuses its empty output unclearly; without the 0 (the same words about
    /// another argument), or at another class, it is not.
    #[test]
    fn a_zero_in_an_attention_output_shape_is_the_kept_bug() {
        let bug = Some("missing-validation-MultiHeadAttention-zero-output-shape");
        let at = |class: &str, output_shape: Value, kind: Kind, detail: &str| {
            let config = json!({"num_heads": 1, "key_dim": 1, "output_shape": output_shape});
            let case = one_layer_case(class, config, json!([null, 3, 2]), json!([]));
            let v = verdict_at_l(kind, &format!("x/{class}/y"), None, detail);
            framework_bug(&case, DType::Float64, &v, None)
        };
        let ran = "TensorFlow runs a model the reference calls invalid (semantic): \
                   MultiHeadAttention 'l': output_shape=[0] makes an empty output (expected \
                   positive sizes)";
        let unclear = "the error names neither layer 'l' nor `output_shape`: ValueError: \
                       Inputs have incompatible shapes. Received shapes (6, 0) and (6, 4)";
        let mha = "MultiHeadAttention";
        assert_eq!(at(mha, json!([0]), Kind::MissingValidation, ran), bug);
        assert_eq!(at(mha, json!([2, 0]), Kind::UnclearError, unclear), bug);
        assert_eq!(at(mha, json!([2]), Kind::UnclearError, unclear), None);
        assert_eq!(
            at(
                "GroupQueryAttention",
                json!([0]),
                Kind::MissingValidation,
                ran
            ),
            None
        );
    }

    /// A MultiHeadAttention refused late because its softmax has no axis is the kept bug;
    /// another late error there is not.
    #[test]
    fn a_rank_2_attention_whose_softmax_has_no_axis_is_the_kept_bug() {
        let at = |detail: &str| {
            let case = one_layer_case(
                "MultiHeadAttention",
                json!({"num_heads": 1, "key_dim": 1}),
                json!([null, 2]),
                json!([]),
            );
            let sig = "late-error/MultiHeadAttention/IndexError";
            let v = verdict_at_l(Kind::LateError, sig, None, detail);
            framework_bug(&case, DType::Float64, &v, None)
        };
        assert_eq!(
            at(
                "rejected only by an internal error (IndexError: Exception encountered when \
                calling Softmax.call().); the reference says: MultiHeadAttention 'l': \
                attention_axes=() leaves the softmax no axis (inputs of rank 2) (expected at \
                least one attention axis)"
            ),
            Some("late-error-MultiHeadAttention-rank-2-softmax-no-axis")
        );
        assert_eq!(
            at(
                "rejected only by an internal error (IndexError: ...); the reference says: \
                MultiHeadAttention 'l': attention_axes=5 is out of range"
            ),
            None
        );
    }

    /// An Embedding run under XLA on an index out of range is the kept bug; in another mode,
    /// or another layer on such values, it is not.
    #[test]
    fn an_xla_embedding_on_an_index_out_of_range_is_the_kept_bug() {
        let bug = Some("missing-validation-Embedding-xla-out-of-range-index-clamped");
        let at = |class: &str, mode: Mode| {
            let case = one_layer_case(class, json!({}), json!([null, 3]), json!([]));
            let detail = format!(
                "TensorFlow runs 'l' on values the reference refuses: {class} 'l': inputs=2 at \
                 [0, 2] is not a row of the embedding (expected indices in [-2, 2) (input_dim 2))"
            );
            let sig = format!("missing-validation/{class}/input-value");
            let v = verdict_at_l(Kind::MissingValidation, &sig, Some(mode), &detail);
            framework_bug(&case, DType::Float64, &v, None)
        };
        assert_eq!(at("Embedding", Mode::Xla), bug);
        assert_eq!(at("Embedding", Mode::Graph), None);
        assert_eq!(at("Embedding", Mode::Eager), None);
        assert_eq!(at("CategoryEncoding", Mode::Xla), None);
    }

    /// An out-of-range dropout that Attention or AdditiveAttention takes is the kept bug; the
    /// same at another class (MultiHeadAttention refuses it), or another argument of
    /// Attention, is not.
    #[test]
    fn an_attention_dropout_out_of_range_is_the_kept_bug() {
        let bug = Some("missing-validation-Attention-dropout-out-of-range");
        let at = |class: &str, argument: &str| {
            let case = one_layer_case(class, json!({}), json!([null, 2, 3]), json!([]));
            let detail = format!(
                "TensorFlow runs a model the reference calls invalid (keras-enforced): {class} \
                 'l': {argument}=1.5 is not a legal value (expected a rate in [0, 1])"
            );
            let sig = format!("missing-validation/{class}/illegal-argument");
            let v = verdict_at_l(Kind::MissingValidation, &sig, None, &detail);
            framework_bug(&case, DType::Float64, &v, None)
        };
        assert_eq!(at("Attention", "dropout"), bug);
        assert_eq!(at("AdditiveAttention", "dropout"), bug);
        assert_eq!(at("MultiHeadAttention", "dropout"), None);
        assert_eq!(at("Attention", "score_mode"), None);
    }

    /// A negative size reaching a variable's shape at the classes seen is the kept bug; the
    /// same message at another class, or another unclear message there, is not.
    #[test]
    fn a_negative_size_reaching_a_variable_shape_is_the_kept_bug() {
        let bug = Some("unclear-error-negative-sizes-reach-variable-shapes");
        let at = |class: &str, detail: &str| {
            let case = one_layer_case(class, json!({}), json!([null, 3]), json!([]));
            let sig = format!("unclear-error/{class}/ValueError");
            let v = verdict_at_l(Kind::UnclearError, &sig, None, detail);
            framework_bug(&case, DType::Float32, &v, None)
        };
        let negative = "the error names neither layer 'l' nor `output_shape`: ValueError: \
            Cannot convert '(3, -1)' to a shape. Negative dimensions are not allowed.";
        for class in ["EinsumDense", "MultiHeadAttention"] {
            assert_eq!(at(class, negative), bug, "{class}");
        }
        assert_eq!(at("Dense", negative), None);
        // ConvLSTM's `filters` is a bug of its own, whatever the message.
        let filters = "the error names neither layer 'l' nor `filters`: ValueError: Cannot \
            convert '(1, 1, -4)' to a shape. Negative dimensions are not allowed.";
        let convlstm = Some("late-error-ConvLSTM-unchecked-filters");
        assert_eq!(at("ConvLSTM1D", filters), convlstm);
        let empty = "the error names neither layer 'l' nor `filters`: ValueError: Exception \
            encountered when calling ConvLSTMCell.call().";
        assert_eq!(at("ConvLSTM3D", empty), convlstm);
        let case = one_layer_case("ConvLSTM2D", json!({}), json!([null, 3]), json!([]));
        let kernel = "rejected only inside a kernel (InvalidArgumentError: Exception encountered \
            when calling ConvLSTMCell.call().); the reference says: ConvLSTM2D 'l': filters=0 \
            is not positive (expected a positive integer)";
        let v = verdict_at_l(
            Kind::LateError,
            "late-error/ConvLSTM2D/InvalidArgumentError",
            Some(Mode::Eager),
            kernel,
        );
        assert_eq!(framework_bug(&case, DType::Float32, &v, None), convlstm);
        let strides = kernel.replace(": filters=0", ": strides[0]=0");
        let v = verdict_at_l(Kind::LateError, "late-error/ConvLSTM2D/x", None, &strides);
        assert_eq!(framework_bug(&case, DType::Float32, &v, None), None);
        let other = "the error names neither layer 'l' nor `output_shape`: ValueError: \
            something else";
        assert_eq!(at("EinsumDense", other), None);
    }

    /// An input rank other than the equation's, run or refused only in a kernel at an
    /// EinsumDense, is the kept bug; another EinsumDense precondition, or the same words at
    /// another class, is not.
    #[test]
    fn an_einsum_dense_input_rank_is_the_unchecked_rank_bug_only_there() {
        let bug = Some("missing-validation-EinsumDense-input-rank-runs-as-batched-matmul");
        let rank = "TensorFlow runs a model the reference calls invalid (keras-enforced): \
            EinsumDense 'l': input[0]=rank 3 has another rank than the equation's input \
            (expected rank 2 (the equation's input labels))";
        let at = |class: &str, kind: Kind, detail: &str| {
            let case = one_layer_case(
                class,
                json!({"equation": "ab,bc->ac"}),
                json!([null, 1, 1]),
                json!([]),
            );
            let v = verdict_at_l(kind, &format!("{}/{class}", kind.name()), None, detail);
            framework_bug(&case, DType::Float32, &v, None)
        };
        assert_eq!(at("EinsumDense", Kind::MissingValidation, rank), bug);
        assert_eq!(at("EinsumDense", Kind::LateError, rank), bug);
        assert_eq!(at("Dense", Kind::MissingValidation, rank), None);
        assert_eq!(at("EinsumDense", Kind::UnclearError, rank), None);
        let other = "TensorFlow runs a model the reference calls invalid: EinsumDense 'l': \
            output_shape has 2 entries where the equation's output has 1 free label";
        assert_eq!(at("EinsumDense", Kind::MissingValidation, other), None);
    }

    /// A rank mismatch TF runs (or refuses only in a kernel) at Attention or
    /// AdditiveAttention is the kept bug; at MultiHeadAttention it is that layer's own kept
    /// bug, and another attention precondition is neither.
    #[test]
    fn an_attention_rank_mismatch_is_the_unchecked_rank_bug_only_there() {
        let bug = Some("missing-validation-Attention-value-rank-broadcasts-across-batch");
        let rank = "TensorFlow runs a model the reference calls invalid (keras-enforced): \
            'l': input[1]=rank 2 has another rank than the query (expected rank 4, the query's)";
        let at = |class: &str, kind: Kind, detail: &str| {
            let case = one_layer_case(class, json!({}), json!([null, 1]), json!([]));
            let v = verdict_at_l(kind, &format!("{}/{class}", kind.name()), None, detail);
            framework_bug(&case, DType::Float64, &v, None)
        };
        assert_eq!(at("AdditiveAttention", Kind::MissingValidation, rank), bug);
        assert_eq!(at("Attention", Kind::LateError, rank), bug);
        assert_eq!(
            at("MultiHeadAttention", Kind::MissingValidation, rank),
            Some("late-error-MultiHeadAttention-unchecked-query-value-shapes")
        );
        let features = "rejected only inside a kernel (InvalidArgumentError: ...); the reference \
            says: 'l': inputs=[(None, 7, 10), (None, 7, 8)] have 10 query and 8 key features \
            (expected query and key features of one size)";
        assert_eq!(at("AdditiveAttention", Kind::LateError, features), bug);
        // Rank-4 inputs whose leading axes differ (a campaign's AdditiveAttention).
        let batch_axes = "rejected only inside a kernel (InvalidArgumentError: ...); the \
            reference says: AdditiveAttention 'l': inputs=[(None, 6, 4, 7), (None, 7, 6, 4)] \
            differ at batch axis 1: 6 (query) vs 7 (input[1]) (expected equal batch axes)";
        assert_eq!(at("AdditiveAttention", Kind::LateError, batch_axes), bug);
        assert_eq!(at("MultiHeadAttention", Kind::LateError, batch_axes), None);
        // A mask that does not fit the scores (campaign 6: an Embedding's rank-3 mask on
        // rank-4 inputs).
        let mask = "rejected only inside a kernel (InvalidArgumentError: ...); the reference \
            says: Attention 'l': mask the scores mask [1, 7, 3] does not broadcast (expected \
            a mask that fits (None, 7, 3, 3))";
        assert_eq!(at("Attention", Kind::LateError, mask), bug);
        assert_eq!(at("MultiHeadAttention", Kind::LateError, mask), None);
        let other = "TensorFlow runs a model the reference calls invalid: 'l': input[1] has \
            another batch size";
        assert_eq!(at("Attention", Kind::MissingValidation, other), None);
    }

    /// A repeated axis refused only by the reduction kernel is the kept bug at the three
    /// normalizations that reduce over `axis`; another late error there is not.
    #[test]
    fn a_repeated_normalization_axis_refused_late_is_the_kept_bug() {
        let bug = Some("late-error-UnitNormalization-duplicate-axes");
        let repeated = "rejected only inside a kernel (InvalidArgumentError: ...); the \
            reference says: 'l': axis[1]=2 repeats axis 2 (expected distinct axes)";
        let at = |class: &str, detail: &str| {
            let case = one_layer_case(class, json!({}), json!([null, 2, 3]), json!([]));
            let sig = format!("late-error/{class}/InvalidArgumentError");
            let v = verdict_at_l(Kind::LateError, &sig, Some(Mode::Eager), detail);
            framework_bug(&case, DType::Float64, &v, None)
        };
        for class in [
            "UnitNormalization",
            "LayerNormalization",
            "RMSNormalization",
        ] {
            assert_eq!(at(class, repeated), bug, "{class}");
        }
        assert_eq!(at("GroupNormalization", repeated), None);
        let other = "rejected only inside a kernel (...); the reference says: 'l': axis[0]=3 \
            is out of range";
        assert_eq!(at("LayerNormalization", other), None);
        // Built without complaint, and a later layer refused the model first (a campaign's
        // UnitNormalization, then a Conv3DTranspose).
        let case = one_layer_case(
            "UnitNormalization",
            json!({}),
            json!([null, 2, 3]),
            json!([]),
        );
        let later = "TensorFlow builds a layer the reference calls invalid (keras-enforced): \
            'l': axis[1]=1 repeats axis 1 (expected distinct axes); layer 'c', which consumes \
            its output, refused first: ValueError: ...";
        let v = verdict_at_l(
            Kind::MissingValidation,
            "missing-validation/UnitNormalization/axis",
            None,
            later,
        );
        assert_eq!(framework_bug(&case, DType::Float64, &v, None), bug);
    }

    /// TF's +inf where the reference is finite, at a layer whose activation (or recurrent
    /// activation) is squareplus, is its overflow, as is TF's NaN where the reference is 0
    /// (squareplus(-inf)); another activation, TF's NaN elsewhere or a non-finite reference
    /// is not.
    #[test]
    fn an_infinite_squareplus_is_its_overflow_only_there() {
        let bug = Some("unexpected-nan-Activation-squareplus-overflow");
        let layer = |config: Value| one_layer_case("Dense", config, json!([null, 1]), json!([]));
        let dense = layer(json!({"units": 1, "activation": "squareplus"}));
        let lstm = one_layer_case(
            "LSTM",
            json!({"units": 1, "activation": "tanh", "recurrent_activation": "squareplus"}),
            json!([null, 1, 1]),
            json!([]),
        );
        let relu = layer(json!({"units": 1, "activation": "relu"}));
        let inf = nan_verdict(
            "Dense",
            "'l' output 0 at [0, 0]: TensorFlow inf, reference 1e-20",
        );
        let explained = |c: &Case, v: &Verdict| framework_bug(c, DType::Float32, v, None);
        assert_eq!(explained(&dense, &inf), bug);
        assert_eq!(explained(&lstm, &inf), bug);
        assert_eq!(explained(&relu, &inf), None);
        let nan = nan_verdict(
            "Dense",
            "'l' output 0 at [0, 0]: TensorFlow NaN, reference 1e-20",
        );
        assert_eq!(explained(&dense, &nan), None);
        let reference_inf = nan_verdict(
            "Dense",
            "'l' output 0 at [0, 0]: TensorFlow inf, reference inf (x)",
        );
        assert_eq!(explained(&dense, &reference_inf), None);
        // A gate may be negative: -inf at a gated cell (a campaign's ConvLSTM1D, float64,
        // `recurrent_activation="log_sigmoid"`), never at a plain squareplus.
        let minus_inf = nan_verdict(
            "LSTM",
            "'l' output 0 at [1, 1, 0]: TensorFlow -inf, reference -1.9e-93",
        );
        let gated_squareplus = one_layer_case(
            "LSTM",
            json!({"units": 1, "activation": "squareplus", "recurrent_activation": "log_sigmoid"}),
            json!([null, 1, 1]),
            json!([]),
        );
        assert_eq!(explained(&gated_squareplus, &minus_inf), bug);
        // squareplus(-inf): NaN in TF, 0 (the limit) in the reference (a campaign's
        // float64 Conv1DTranspose on an infinite input); NaN where the reference is not 0 is
        // still reported.
        let at_minus_inf = nan_verdict(
            "Dense",
            "'l' output 0 at [0, 0, 5]: TensorFlow NaN, reference 0e0 (tolerance abs 1.1e-14 rel 3.6e-15)",
        );
        assert_eq!(explained(&dense, &at_minus_inf), bug);
        assert_eq!(explained(&relu, &at_minus_inf), None);
        assert_eq!(explained(&lstm, &minus_inf), bug);
        assert_eq!(explained(&dense, &minus_inf), None);
        // An infinite gate times the first step's zero state: NaN at a gated cell (campaign
        // 16's float32 ConvLSTM3D with `recurrent_activation="squareplus"`), never at a plain
        // squareplus, nor at a gated cell without one.
        let gate_nan = nan_verdict(
            "LSTM",
            "'l' output 0 at [0, 0, 0, 1, 0]: TensorFlow NaN, reference -5.46773617315921e-6",
        );
        assert_eq!(explained(&lstm, &gate_nan), bug);
        assert_eq!(explained(&dense, &gate_nan), None);
        let plain_lstm = one_layer_case(
            "LSTM",
            json!({"units": 1, "activation": "tanh", "recurrent_activation": "sigmoid"}),
            json!([null, 1, 1]),
            json!([]),
        );
        assert_eq!(explained(&plain_lstm, &gate_nan), None);
    }

    /// Eager max pooling drops a NaN that XLA's keeps: the modes differ on such inputs, and
    /// only there is it the kept bug.
    #[test]
    fn max_pooling_modes_differing_on_nan_is_the_max_pooling_bug() {
        let case = one_layer_case(
            "MaxPooling1D",
            json!({"pool_size": 1}),
            json!([null, 2, 2]),
            json!([]),
        );
        let differ = |detail: String| {
            verdict_at_l(
                Kind::ModeMismatch,
                "mode-mismatch/MaxPooling1D/xla",
                Some(Mode::Xla),
                &detail,
            )
        };
        let plain = "'l' differs between eager and xla on identical inputs".to_owned();
        let on_nan = differ(format!("{plain}{}", crate::verdict::NONFINITE_INPUTS));
        assert_eq!(
            framework_bug(&case, DType::Float32, &on_nan, None),
            Some("unexpected-nan-MaxPooling1D-nan-and-neg-inf")
        );
        assert_eq!(
            framework_bug(&case, DType::Float32, &differ(plain.clone()), None),
            None
        );
        // The same pooling inside TimeDistributed (campaign 24): the verdict names the
        // wrapper. A wrapped Dense is not it.
        let wrapping = |class: &str| {
            one_layer_case(
                "TimeDistributed",
                json!({"layer": {"module": "keras.layers", "class_name": class,
                                 "config": {"pool_size": 2, "units": 2}}}),
                json!([null, 2, 4, 3]),
                json!([]),
            )
        };
        assert_eq!(
            framework_bug(&wrapping("MaxPooling1D"), DType::Float32, &on_nan, None),
            Some("unexpected-nan-MaxPooling1D-nan-and-neg-inf")
        );
        assert_eq!(
            framework_bug(
                &wrapping("MaxPooling1D"),
                DType::Float32,
                &differ(plain),
                None
            ),
            None
        );
        assert_eq!(
            framework_bug(&wrapping("Dense"), DType::Float32, &on_nan, None),
            None
        );
    }

    /// XLA's NaN at a float32 Attention is the fused-softmax bug; in eager mode, or in
    /// float64, it is not.
    #[test]
    fn an_xla_nan_at_a_float32_attention_is_the_fused_softmax_bug() {
        let case = one_layer_case(
            "Attention",
            json!({"use_scale": true}),
            json!([null, 11]),
            json!([]),
        );
        let nan = |mode| {
            verdict_at_l(
                Kind::UnexpectedNan,
                "unexpected-nan/Attention",
                Some(mode),
                "'l' output 0 at [0, 0]: TensorFlow NaN, reference 4.3e2 (tolerance abs 2.1e9 rel 2.1e-6)",
            )
        };
        assert_eq!(
            framework_bug(&case, DType::Float32, &nan(Mode::Xla), None),
            Some("unexpected-nan-Attention-xla-float32-fused-softmax-large-scores")
        );
        assert_eq!(
            framework_bug(&case, DType::Float32, &nan(Mode::Eager), None),
            None
        );
        assert_eq!(
            framework_bug(&case, DType::Float64, &nan(Mode::Xla), None),
            None
        );
    }

    /// XLA's finite but wrong output at a float32 MultiHeadAttention (weights that do not sum
    /// to 1) is the fused-softmax bug too; the same at another class, in eager mode or in
    /// float64, is not.
    #[test]
    fn an_xla_mismatch_at_a_float32_multi_head_attention_is_the_fused_softmax_bug() {
        let mha = one_layer_case(
            "MultiHeadAttention",
            json!({"num_heads": 3, "key_dim": 1, "use_gate": true, "output_shape": 6}),
            json!([null, 2, 5]),
            json!([]),
        );
        let dense = one_layer_case("Dense", json!({"units": 6}), json!([null, 5]), json!([]));
        let off = |mode| {
            verdict_at_l(
                Kind::Mismatch,
                "mismatch/MultiHeadAttention",
                Some(mode),
                "'l' output 0 at [0, 0, 0, 0]: TensorFlow -4.56112004399104e14, reference \
                 6.578523125e5 (tolerance abs 6.2e13 rel 2.1e-6)",
            )
        };
        assert_eq!(
            framework_bug(&mha, DType::Float32, &off(Mode::Xla), None),
            Some("unexpected-nan-Attention-xla-float32-fused-softmax-large-scores")
        );
        assert_eq!(
            framework_bug(&mha, DType::Float32, &off(Mode::Eager), None),
            None
        );
        assert_eq!(
            framework_bug(&mha, DType::Float64, &off(Mode::Xla), None),
            None
        );
        assert_eq!(
            framework_bug(&dense, DType::Float32, &off(Mode::Xla), None),
            None
        );
    }

    /// A late error at a MultiHeadAttention whose value has another rank than the query, or
    /// another size on an axis it does not attend over, is the unchecked-shapes bug; another
    /// late error there, or the same rule at a GroupQueryAttention, is not.
    #[test]
    fn a_late_error_at_an_attention_of_mismatched_inputs_is_the_unchecked_shapes_bug() {
        let rule = "rejected only inside a kernel (InvalidArgumentError: Exception encountered \
                    when calling MultiHeadAttention.call().); the reference says: \
                    MultiHeadAttention 'l': input[1]=rank 3 has another rank than the query \
                    (expected rank 4, the query's)";
        let late = |detail: &str| {
            verdict_at_l(
                Kind::LateError,
                "late-error/MultiHeadAttention/InvalidArgumentError",
                Some(Mode::Eager),
                detail,
            )
        };
        let case = |class: &str| {
            one_layer_case(
                class,
                json!({"num_heads": 1, "key_dim": 1}),
                json!([null, 2, 3, 4]),
                json!([]),
            )
        };
        assert_eq!(
            framework_bug(
                &case("MultiHeadAttention"),
                DType::Float32,
                &late(rule),
                None
            ),
            Some("late-error-MultiHeadAttention-unchecked-query-value-shapes")
        );
        let other = rule.replace(
            "input[1]=rank 3 has another rank than the query (expected rank 4, the query's)",
            "input[1]=(None, 3, 5) has another last axis than the query",
        );
        assert_eq!(
            framework_bug(
                &case("MultiHeadAttention"),
                DType::Float32,
                &late(&other),
                None
            ),
            None
        );
        // Campaign 9: query and key of one rank whose sizes differ on an axis the layer does
        // not attend over (attention_axes=[0, 3]).
        let axis = rule.replace(
            "input[1]=rank 3 has another rank than the query (expected rank 4, the query's)",
            "inputs=[(None, 1, 3, 4), (None, 1, 1, 4)] differ in query and key axis 2: 3 vs 1 \
             (expected equal sizes of query and key axis 2)",
        );
        assert_eq!(
            framework_bug(
                &case("MultiHeadAttention"),
                DType::Float32,
                &late(&axis),
                None
            ),
            Some("late-error-MultiHeadAttention-unchecked-query-value-shapes")
        );
        assert_eq!(
            framework_bug(
                &case("GroupQueryAttention"),
                DType::Float32,
                &late(rule),
                None
            ),
            None
        );
    }

    /// Campaign 12's findings: an RNN inside a Bidirectional on a rank-4 input, a zero-size
    /// adaptive pooling whose empty axis a later layer refuses unclearly, and a 1-D adaptive
    /// pooling on a rank-4 input.
    #[test]
    fn campaign_12_findings_are_the_rnn_rank_and_adaptive_pooling_bugs() {
        let rnn = json!({"layer": {"module": "keras.layers", "class_name": "RNN", "config": {}}});
        let lstm = json!({"layer": {"module": "keras.layers", "class_name": "LSTM", "config": {}}});
        let rank = "rejected only inside a kernel (InvalidArgumentError: Exception encountered \
            when calling LSTMCell.call().); the reference says: Bidirectional 'l': \
            input[0]=rank 4 has the wrong rank (expected rank 3 (batch, time, features))";
        let late = |signature: &str, detail: &str| {
            verdict_at_l(Kind::LateError, signature, Some(Mode::Eager), detail)
        };
        let bi = |config: Value| {
            one_layer_case("Bidirectional", config, json!([null, 2, 3, 4]), json!([]))
        };
        let v = late("late-error/Bidirectional/InvalidArgumentError", rank);
        assert_eq!(
            framework_bug(&bi(rnn), DType::Float32, &v, None),
            Some("missing-validation-RNN-rank-4-input")
        );
        assert_eq!(framework_bug(&bi(lstm), DType::Float32, &v, None), None);

        let unclear = verdict_at_l(
            Kind::UnclearError,
            "unclear-error/AdaptiveAveragePooling2D/ValueError",
            Some(Mode::Eager),
            "the error names neither layer 'l' nor `output_size[1]`: ValueError: Exception \
             encountered when calling Reshape.call().",
        );
        let pool = |size: Value| {
            one_layer_case(
                "AdaptiveAveragePooling2D",
                json!({"output_size": size}),
                json!([null, 4, 2, 3]),
                json!([]),
            )
        };
        assert_eq!(
            framework_bug(&pool(json!([2, 0])), DType::Float64, &unclear, None),
            Some("late-error-Pooling-zero-size-division-by-zero")
        );
        assert_eq!(
            framework_bug(&pool(json!([2, 1])), DType::Float64, &unclear, None),
            None
        );

        let wrong_rank = "TensorFlow builds a layer the reference calls invalid (keras-enforced): \
            AdaptiveMaxPooling1D 'l': input[0]=rank 4 has the wrong rank (expected rank 3); \
            layer 'reshape', which consumes its output, refused first: ValueError: Exception \
            encountered when calling Reshape.call().";
        let missing = verdict_at_l(
            Kind::MissingValidation,
            "missing-validation/AdaptiveMaxPooling1D/rank",
            None,
            wrong_rank,
        );
        let one_d = |class: &str| {
            one_layer_case(
                class,
                json!({"output_size": 3}),
                json!([null, 1, 1, 1]),
                json!([]),
            )
        };
        let id = Some("missing-validation-AdaptivePooling2D-rank-3-runs-1d");
        assert_eq!(
            framework_bug(
                &one_d("AdaptiveMaxPooling1D"),
                DType::Float64,
                &missing,
                None
            ),
            id
        );
        assert_eq!(
            framework_bug(
                &one_d("AdaptiveAveragePooling1D"),
                DType::Float64,
                &missing,
                None
            ),
            id
        );
        assert_eq!(
            framework_bug(&one_d("MaxPooling1D"), DType::Float64, &missing, None),
            None
        );
        // A 2-D one on a rank-2 input (campaign 16), and the same rule quoted at the wrong
        // class (a 1-D pooling's expected rank at a 2-D one).
        let rank_2 = |expected: usize| {
            let detail = wrong_rank
                .replace("AdaptiveMaxPooling1D", "AdaptiveAveragePooling2D")
                .replace("rank 4 has", "rank 2 has")
                .replace("(expected rank 3)", &format!("(expected rank {expected})"));
            verdict_at_l(
                Kind::MissingValidation,
                "missing-validation/AdaptiveAveragePooling2D/rank",
                None,
                &detail,
            )
        };
        let two_d = one_layer_case(
            "AdaptiveAveragePooling2D",
            json!({"output_size": [2, 2]}),
            json!([null, 4]),
            json!([]),
        );
        assert_eq!(framework_bug(&two_d, DType::Float32, &rank_2(4), None), id);
        assert_eq!(
            framework_bug(&two_d, DType::Float32, &rank_2(3), None),
            None
        );
    }

    /// The transposed-conv output length a later layer refuses before the kernel runs is the
    /// output-length bug (campaign 12's Conv3DTranspose then Cropping3D); TF running it
    /// silently would not be.
    #[test]
    fn a_transposed_conv_length_refused_by_a_later_layer_is_the_output_length_bug() {
        let case = one_layer_case(
            "Conv3DTranspose",
            json!({"filters": 1, "kernel_size": 2, "padding": "same"}),
            json!([null, 2, 2, 2, 1]),
            json!([]),
        );
        let rule = "TensorFlow builds a layer the reference calls invalid (keras-enforced): \
            Conv3DTranspose 'l': output_padding[1]=0 gives an output length 1 from which TF \
            derives another input length than 2 (expected output_padding >= 1 with an even \
            dilated kernel and padding \"same\")";
        let missing = |detail: String| {
            verdict_at_l(
                Kind::MissingValidation,
                "missing-validation/Conv3DTranspose/improper-argument",
                None,
                &detail,
            )
        };
        let refused = missing(format!(
            "{rule}; layer 'cropping3d', which consumes its output, refused first: \
             ValueError: Exception encountered when calling Cropping3D.call()."
        ));
        assert_eq!(
            framework_bug(&case, DType::Float64, &refused, None),
            Some("late-error-Conv1DTranspose-same-even-kernel-output-length")
        );
        assert_eq!(
            framework_bug(&case, DType::Float64, &missing(rule.to_owned()), None),
            None
        );
    }

    /// XLA's NaN or inf at a Softmax, in either dtype, is the same fused-softmax bug (campaign
    /// 8: a Multiply of a GRU's 5e14 output with itself feeding a Softmax); in eager mode it
    /// is not, nor is an XLA mismatch of finite values.
    #[test]
    fn an_xla_nan_at_a_softmax_is_the_fused_softmax_bug() {
        let case = one_layer_case("Softmax", json!({}), json!([null, 3]), json!([]));
        let bad = |mode, tf: &str| {
            verdict_at_l(
                Kind::UnexpectedNan,
                "unexpected-nan/Softmax",
                Some(mode),
                &format!(
                    "'l' output 0 at [0, 2]: TensorFlow {tf}, reference 0e0 (tolerance abs 4.4e-16 rel 8.4e-15)"
                ),
            )
        };
        let id = Some("unexpected-nan-Attention-xla-float32-fused-softmax-large-scores");
        for dtype in [DType::Float32, DType::Float64] {
            assert_eq!(
                framework_bug(&case, dtype, &bad(Mode::Xla, "NaN"), None),
                id
            );
            assert_eq!(
                framework_bug(&case, dtype, &bad(Mode::Xla, "inf"), None),
                id
            );
            assert_eq!(
                framework_bug(&case, dtype, &bad(Mode::Eager, "NaN"), None),
                None
            );
        }
        let finite = verdict_at_l(
            Kind::Mismatch,
            "mismatch/Softmax",
            Some(Mode::Xla),
            "'l' output 0 at [0, 2]: TensorFlow 5e-1, reference 0e0 (tolerance abs 4.4e-16 rel 8.4e-15)",
        );
        assert_eq!(framework_bug(&case, DType::Float64, &finite, None), None);
    }

    /// oneDNN's reorder failure in graph mode is the kept bug at a SeparableConv2D only.
    #[test]
    fn a_graph_reorder_failure_is_the_separable_conv_bug_only_there() {
        let detail = format!(
            "graph raises where the reference (and other modes) do not: AbortedError: \
             Operation received an exception:Status: 2, message: {ONEDNN_REORDER}."
        );
        let v = verdict_at_l(
            Kind::ModeMismatch,
            "mode-mismatch/SeparableConv2D/graph:AbortedError",
            Some(Mode::Graph),
            &detail,
        );
        let case = |class: &str| {
            one_layer_case(
                class,
                json!({"filters": 1, "kernel_size": 1}),
                json!([null, 1, 1, 1]),
                json!([]),
            )
        };
        assert_eq!(
            framework_bug(&case("SeparableConv2D"), DType::Float32, &v, None),
            Some("mode-mismatch-SeparableConv2D-graph-onednn-one-channel-pointwise")
        );
        assert_eq!(
            framework_bug(&case("Conv2D"), DType::Float32, &v, None),
            None
        );
        // Graph mode run alone: the same raise is an unexpected rejection.
        let alone = verdict_at_l(
            Kind::UnexpectedRejection,
            "unexpected-rejection/SeparableConv2D/graph:AbortedError",
            Some(Mode::Graph),
            &detail,
        );
        assert_eq!(
            framework_bug(&case("SeparableConv2D"), DType::Float32, &alone, None),
            Some("mode-mismatch-SeparableConv2D-graph-onednn-one-channel-pointwise")
        );
        let other = verdict_at_l(
            Kind::ModeMismatch,
            "mode-mismatch/SeparableConv2D/graph:AbortedError",
            Some(Mode::Graph),
            "graph raises where the reference (and other modes) do not: AbortedError: other",
        );
        assert_eq!(
            framework_bug(&case("SeparableConv2D"), DType::Float32, &other, None),
            None
        );
    }

    /// Only the generic RNN lacks the rank check; the same violation at an LSTM is not it.
    #[test]
    fn an_rnn_of_the_wrong_rank_is_the_rnn_bug_only_for_the_generic_layer() {
        let detail = "TensorFlow runs a model the reference calls invalid (semantic): RNN 'l': \
                      input[0]=rank 4 has the wrong rank (expected rank 3 (batch, time, features))";
        let v = |class: &str| {
            verdict_at_l(
                Kind::MissingValidation,
                &format!("missing-validation/{class}/rank"),
                None,
                detail,
            )
        };
        let case = |class: &str| {
            one_layer_case(
                class,
                json!({"units": 2}),
                json!([null, 1, 1, 1]),
                json!([]),
            )
        };
        assert_eq!(
            framework_bug(&case("RNN"), DType::Float64, &v("RNN"), None),
            Some("missing-validation-RNN-rank-4-input")
        );
        assert_eq!(
            framework_bug(&case("LSTM"), DType::Float64, &v("LSTM"), None),
            None
        );
    }

    #[test]
    fn time_distributed_max_pooling_is_the_max_pooling_bug() {
        let wrapping = |inner: &str| {
            one_layer_case(
                "TimeDistributed",
                json!({"layer": {"module": "keras.layers", "class_name": inner,
                                 "config": {"pool_size": 2}}}),
                json!([null, 1, 3, 1]),
                json!([]),
            )
        };
        let dropped_nan = nan_verdict(
            "TimeDistributed",
            "'l' output 0 at [1, 0, 0, 0]: TensorFlow -1.7976931348623157e308, reference NaN (tolerance abs 0.0e0 rel 0.0e0)",
        );
        assert_eq!(
            framework_bug(
                &wrapping("MaxPooling1D"),
                DType::Float64,
                &dropped_nan,
                None
            ),
            Some("unexpected-nan-MaxPooling1D-nan-and-neg-inf")
        );
        // Average pooling has no such bug; nor is TF's NaN where the reference is finite.
        assert_eq!(
            framework_bug(
                &wrapping("AveragePooling1D"),
                DType::Float64,
                &dropped_nan,
                None
            ),
            None
        );
        let tf_nan = nan_verdict(
            "TimeDistributed",
            "'l' output 0 at [1, 0, 0, 0]: TensorFlow NaN, reference 1e0 (tolerance abs 0.0e0 rel 0.0e0)",
        );
        assert_eq!(
            framework_bug(&wrapping("MaxPooling1D"), DType::Float64, &tf_nan, None),
            None
        );
    }

    #[test]
    fn normalization_nonfinite_weights_meet_the_stale_statistics() {
        let norm = |mean: Value| {
            one_layer_case(
                "Normalization",
                json!({"invert": true}),
                json!([null, 1]),
                json!([{"shape": [1], "data": [mean]},
                       {"shape": [1], "data": ["inf"]},
                       {"shape": [], "data": [0.0]}]),
            )
        };
        let finite_tf = nan_verdict(
            "Normalization",
            "'l' output 0 at [0, 0]: TensorFlow 0e0, reference NaN (tolerance abs 5.9e-323 rel 1.8e-15)",
        );
        assert_eq!(
            framework_bug(&norm(json!(-1.0)), DType::Float64, &finite_tf, None),
            Some("mismatch-Normalization-set-weights-stale-statistics")
        );
        let minus_inf = nan_verdict(
            "Normalization",
            "'l' output 0 at [0, 0, 0]: TensorFlow 1.668509190019085e-2, reference -inf (tolerance abs 5.9e-323 rel 1.8e-15)",
        );
        assert_eq!(
            framework_bug(&norm(json!("-inf")), DType::Float64, &minus_inf, None),
            Some("mismatch-Normalization-set-weights-stale-statistics")
        );
        // TF non-finite where the reference is finite is something else.
        let tf_inf = nan_verdict(
            "Normalization",
            "'l' output 0 at [0, 0]: TensorFlow inf, reference 1e0 (tolerance abs 5.9e-323 rel 1.8e-15)",
        );
        assert_eq!(
            framework_bug(&norm(json!(-1.0)), DType::Float64, &tf_inf, None),
            None
        );
        // Finite weights cannot make the reference non-finite this way.
        let finite = one_layer_case(
            "Normalization",
            json!({}),
            json!([null, 1]),
            json!([{"shape": [1], "data": [1.0]}, {"shape": [1], "data": [4.0]},
                   {"shape": [], "data": [0.0]}]),
        );
        assert_eq!(
            framework_bug(&finite, DType::Float64, &finite_tf, None),
            None
        );
    }
}

#[cfg(test)]
mod rms_normalization_tests {
    use super::tests::{explained_with_shapes, one_layer_case, verdict_at_l};
    use super::*;
    use serde_json::json;

    fn rms(axis: Value) -> Case {
        one_layer_case(
            "RMSNormalization",
            json!({"axis": axis}),
            json!([null, 3, 4]),
            json!([]),
        )
    }

    fn verdict(kind: Kind, detail: &str) -> Verdict {
        verdict_at_l(kind, "RMSNormalization", Some(Mode::Eager), detail)
    }

    #[test]
    fn any_axis_but_minus_one_counts_as_the_scale_bug() {
        let raised = verdict(
            Kind::UnexpectedRejection,
            "'l': InvalidArgumentError: Incompatible shapes: [2,3,4] vs. [3] [Op:Mul]",
        );
        let wrong = verdict(
            Kind::Mismatch,
            "'l' output 0 at [0, 0, 0]: TensorFlow 1e0, reference 2e0 (tolerance abs 0.0e0 rel 0.0e0)",
        );
        for v in [&raised, &wrong] {
            for axis in [json!(1), json!([1]), json!([1, 2]), json!(2)] {
                assert_eq!(
                    framework_bug(&rms(axis.clone()), DType::Float64, v, None),
                    Some("mismatch-RMSNormalization-axis-scale"),
                    "axis {axis}"
                );
            }
            for axis in [json!(-1), json!([-1])] {
                assert_eq!(
                    framework_bug(&rms(axis.clone()), DType::Float64, v, None),
                    None,
                    "axis {axis}"
                );
            }
        }
    }

    #[test]
    fn with_the_shapes_only_real_triggers_count() {
        // On (b, 3, 4) the axes 2 and [1, 2] are the trailing ones: the scale lies where Keras
        // puts it, and an error or a wrong value there is not this bug. Axis 1 is.
        let raised = verdict(Kind::UnexpectedRejection, "'l': ValueError: something else");
        for (axis, bug) in [
            (json!(2), None),
            (json!([1, 2]), None),
            (json!([-2, -1]), None),
            (json!(1), Some("mismatch-RMSNormalization-axis-scale")),
            (json!([1, -1]), Some("mismatch-RMSNormalization-axis-scale")),
        ] {
            assert_eq!(
                explained_with_shapes(&rms(axis.clone()), &raised),
                bug,
                "axis {axis}"
            );
        }
    }
}

#[cfg(test)]
mod merge_tests {
    use super::tests::{explained_with_shapes, keras_tensor, verdict_at_l};
    use super::*;
    use serde_json::json;

    /// `Average` of a `(2, 2, 1)` and a `(2, 1, 1)` input, these values in the second one.
    fn average(second: Value) -> Case {
        let input = |name: &str, shape: Value| {
            json!({"module": "keras.layers", "class_name": "InputLayer", "name": name,
                   "config": {"batch_shape": shape, "name": name}, "inbound_nodes": []})
        };
        let text = json!({
            "format": "semfuzz-case/1",
            "dtype": "float64",
            "model": {
                "name": "functional",
                "layers": [
                    input("a", json!([null, 2, 1])),
                    input("b", json!([null, 1, 1])),
                    {"module": "keras.layers", "class_name": "Average", "name": "l",
                     "config": {"name": "l"},
                     "inbound_nodes": [{"args": [[keras_tensor("a"), keras_tensor("b")]], "kwargs": {}}]}
                ],
                "input_layers": [["a", 0, 0], ["b", 0, 0]],
                "output_layers": [["l", 0, 0]]
            },
            "inputs": [
                {"shape": [2, 2, 1], "data": [0.5, 0.25, 1.0, 2.0]},
                {"shape": [2, 1, 1], "data": second}
            ]
        });
        Case::from_json_str(&text.to_string(), "average.case.json").unwrap()
    }

    #[test]
    fn a_broadcasting_average_moves_a_non_finite_value_between_samples() {
        // Measured (TF 2.21, generated model gen-006980 of seed 2026): sample 1's -inf came
        // out in sample 0, where every input is finite and the reference is 0.164.
        let v = verdict_at_l(
            Kind::UnexpectedNan,
            "unexpected-nan/Average",
            Some(Mode::Eager),
            "'l' output 0 at [0, 1, 0]: TensorFlow -inf, reference 1.6e-1",
        );
        let judged = |case: &Case| explained_with_shapes(case, &v);
        let with_inf = average(json!([0.125, "-inf"]));
        assert_eq!(
            judged(&with_inf),
            Some("mismatch-Average-ops-add-broadcast")
        );
        // Every value finite: the bug cannot make a NaN or an infinity, so this one is reported.
        assert_eq!(judged(&average(json!([0.125, -0.75]))), None);
    }
}

#[cfg(test)]
mod masked_pooling_tests {
    use super::tests::{explained_with_shapes, keras_tensor, one_layer_case, verdict_at_l};
    use super::*;
    use serde_json::json;

    /// `Masking` then `GlobalAveragePooling1D(data_format)` on `(b, 1, 2)`: the mask is
    /// `(b, 1)`, one entry for two steps under channels_first, for the one step under
    /// channels_last.
    fn pooled(data_format: &str) -> Case {
        let text = json!({
            "format": "semfuzz-case/1",
            "dtype": "float64",
            "model": {
                "name": "functional",
                "layers": [
                    {"module": "keras.layers", "class_name": "InputLayer", "name": "x",
                     "config": {"batch_shape": [null, 1, 2], "name": "x"}, "inbound_nodes": []},
                    {"module": "keras.layers", "class_name": "Masking", "name": "m",
                     "config": {"name": "m"},
                     "inbound_nodes": [{"args": [keras_tensor("x")], "kwargs": {}}]},
                    {"module": "keras.layers", "class_name": "GlobalAveragePooling1D", "name": "l",
                     "config": {"name": "l", "data_format": data_format},
                     "inbound_nodes": [{"args": [keras_tensor("m")], "kwargs": {}}]}
                ],
                "input_layers": [["x", 0, 0]],
                "output_layers": [["l", 0, 0]]
            },
            "inputs": [{"shape": [1, 1, 2], "data": [1.0, 0.0]}]
        });
        Case::from_json_str(&text.to_string(), "pooled.case.json").unwrap()
    }

    /// The same mask of the wrong axis, of a length that does not broadcast, refused in a
    /// kernel (campaign 7: `Masking` on `(None, 2, 5)` before a channels-first pooling).
    #[test]
    fn a_channels_first_mask_that_does_not_broadcast_is_the_mask_sum_bug() {
        let detail = "rejected only inside a kernel (InvalidArgumentError: ...); the reference \
            says: GlobalAveragePooling1D 'l': mask=[1, 1, 2] does not broadcast to the input \
            (expected a mask that broadcasts to the input (None, 2, 5))";
        let at = |format: &str| {
            let case = one_layer_case(
                "GlobalAveragePooling1D",
                json!({"data_format": format}),
                json!([null, 2, 5]),
                json!([]),
            );
            let sig = "late-error/GlobalAveragePooling1D/InvalidArgumentError";
            let v = verdict_at_l(Kind::LateError, sig, Some(Mode::Eager), detail);
            framework_bug(&case, DType::Float32, &v, None)
        };
        assert_eq!(
            at("channels_first"),
            Some("mismatch-GlobalAveragePooling1D-channels-first-mask-sum")
        );
        assert_eq!(at("channels_last"), None);
    }

    #[test]
    fn a_mask_broadcast_over_the_steps_makes_the_average_a_sum() {
        let v = verdict_at_l(
            Kind::Mismatch,
            "mismatch/GlobalAveragePooling1D",
            Some(Mode::Eager),
            "'l' output 0 at [0, 0]: TensorFlow 1e0, reference 5e-1",
        );
        let judged = |case: &Case| explained_with_shapes(case, &v);
        assert_eq!(
            judged(&pooled("channels_first")),
            Some("mismatch-GlobalAveragePooling1D-channels-first-mask-sum")
        );
        // One step and a one-entry mask: nothing broadcasts, a mismatch there is not this.
        assert_eq!(judged(&pooled("channels_last")), None);
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
mod limitation_tests {
    use super::*;

    #[test]
    fn broadcasting_above_rank_8_is_a_known_limitation() {
        let e = PyError {
            kind: "UnimplementedError".into(),
            message: "{{function_node __wrapped__SelectV2_device_/job:localhost/replica:0/task:0/device:CPU:0}} Broadcast between [2,1,1,6,1,1,1,6,1] and [2,1,1,6,1,1,1,6,1] is not supported yet. [Op:SelectV2] name: ".into(),
            phase: "call".into(),
            traceback: String::new(),
            layer: None,
        };
        assert_eq!(limitation(&e), Some("broadcast-above-rank-8"));
        let minimum = PyError {
            message: "{{function_node __wrapped__Minimum_device_/job:localhost/replica:0/task:0/device:CPU:0}} Broadcast between [2,1,2,2,2,1] and [2,2,2,1,2,23] is not supported yet. [Op:Minimum] name: ".into(),
            ..e.clone()
        };
        assert_eq!(limitation(&minimum), Some("broadcast-above-rank-5"));
        let other = PyError {
            message: "something else".into(),
            ..e
        };
        assert_eq!(limitation(&other), None);
    }

    /// TF's CPU slicing kernels stop at rank 8 (campaign 14: a `TimeDistributed(Softmax)` on
    /// a rank-9 `Dot` output): a kernel limitation, counted as an item.
    #[test]
    fn slicing_above_rank_8_is_a_known_limitation() {
        let e = |kind: &str, message: &str| PyError {
            kind: kind.into(),
            message: message.into(),
            phase: "call".into(),
            traceback: String::new(),
            layer: None,
        };
        let strided = "Exception encountered when calling TimeDistributed.call().\n\n\
            {{function_node __wrapped__StridedSlice_device_/job:localhost/replica:0/task:0/\
            device:CPU:0}} Unhandled input dimensions 9 [Op:StridedSlice] name: \
            functional/time_distributed/strided_slice/";
        assert_eq!(
            limitation(&e("UnimplementedError", strided)),
            Some("slice-above-rank-8")
        );
        let slice = "{{function_node __inference_f_12}} SliceOp : Unhandled input dimensions";
        assert_eq!(
            limitation(&e("UnimplementedError", slice)),
            Some("slice-above-rank-8")
        );
        // Other kernels word rank limits otherwise; the same words as another error kind
        // (WhereOp's InvalidArgumentError) are not this item.
        let where_op = "WhereOp : Unhandled input dimensions: 9";
        assert_eq!(limitation(&e("InvalidArgumentError", where_op)), None);
    }

    /// TF's float64/float16 CPU kernels for transposed convolutions refuse channels-first
    /// data and dilation (as the reference knows): kernel limitations, counted as items.
    #[test]
    fn a_channels_first_transposed_conv_kernel_is_a_known_limitation() {
        let e = |message: &str| PyError {
            kind: "InvalidArgumentError".into(),
            message: message.into(),
            phase: "call".into(),
            traceback: String::new(),
            layer: None,
        };
        for message in [
            "Exception encountered when calling Conv3DTranspose.call().\n\n{{function_node \
             __wrapped__Conv3DBackpropInputV2_device_/job:localhost/replica:0/task:0/device:CPU:0}} \
             Conv3DBackpropInputOpV2 only supports NDHWC on the CPU. [Op:Conv3DBackpropInputV2]",
            "{{function_node __wrapped__Conv2DBackpropInput_device_/job:localhost/replica:0/task:0/\
             device:CPU:0}} Conv2DCustomBackpropInputOp only supports NHWC. [Op:Conv2DBackpropInput]",
        ] {
            assert_eq!(
                limitation(&e(message)),
                Some("cpu-transposed-conv-channels-last-only")
            );
        }
        let dilated = "Exception encountered when calling Conv3DTranspose.call().\n\n\
            {{function_node __wrapped__Conv3DBackpropInputV2_device_/job:localhost/replica:0/\
            task:0/device:CPU:0}} Current CPU implementation does not yet support dilation \
            rates larger than 1. [Op:Conv3DBackpropInputV2]";
        assert_eq!(
            limitation(&e(dilated)),
            Some("cpu-transposed-conv-no-dilation")
        );
        // The 2-D kernel's wording (a campaign's float64 Conv2DTranspose with dilation 2).
        let dilated_2d = "Exception encountered when calling Conv2DTranspose.call().\n\n\
            {{function_node __wrapped__Conv2DBackpropInput_device_/job:localhost/replica:0/\
            task:0/device:CPU:0}} Current CPU implementations do not yet support dilation \
            rates larger than 1. [Op:Conv2DBackpropInput]";
        assert_eq!(
            limitation(&e(dilated_2d)),
            Some("cpu-transposed-conv-no-dilation")
        );
    }
}
