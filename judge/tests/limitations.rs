//! The known TensorFlow limitations of `crashes/limitations.json`, on TensorFlow's own
//! messages (as the campaigns that found them recorded them).

use judge::entries::{Facts, Suppressions, Target};
use judge::evidence::Evidence;
use judge::{Kind, Mode, PyError, Verdict};
use oracle::{Case, DType};

fn case() -> Case {
    Case::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../seeds/hand-mlp.case.json"
    ))
    .unwrap()
}

/// A late error in eager mode with this exception.
fn late_error(kind: &str, message: &str) -> Verdict {
    let e = PyError {
        kind: kind.into(),
        message: message.into(),
        phase: "call".into(),
        traceback: String::new(),
        layer: None,
        constructor: false,
    };
    Verdict {
        kind: Kind::LateError,
        signature: format!("late-error/X/{kind}"),
        layer: None,
        mode: Some(Mode::Eager),
        detail: String::new(),
        evidence: Evidence::refusal(&e),
        tier: None,
        known: None,
    }
}

/// The entry that explains `v` on Keras `keras` (TF 2.21.0), if any.
fn explained(v: &Verdict, dtype: DType, keras: &str) -> Option<String> {
    let case = case();
    let s = Suppressions::builtin().unwrap();
    let target = Target::tensorflow(keras, "2.21.0");
    s.explain(&Facts {
        case: &case,
        dtype,
        verdict: v,
        analysis: None,
        target: &target,
    })
    .map(|id| id.to_string())
}

/// The entry that explains a late error with this exception on the pinned release, if any.
fn limitation(kind: &str, message: &str) -> Option<String> {
    explained(&late_error(kind, message), DType::Float32, "3.15.1")
}

#[test]
fn broadcasting_above_rank_8_is_a_known_limitation() {
    let select = "{{function_node __wrapped__SelectV2_device_/job:localhost/replica:0/task:0/device:CPU:0}} Broadcast between [2,1,1,6,1,1,1,6,1] and [2,1,1,6,1,1,1,6,1] is not supported yet. [Op:SelectV2] name: ";
    assert_eq!(
        limitation("UnimplementedError", select).as_deref(),
        Some("broadcast-above-rank-8")
    );
    let minimum = "{{function_node __wrapped__Minimum_device_/job:localhost/replica:0/task:0/device:CPU:0}} Broadcast between [2,1,2,2,2,1] and [2,2,2,1,2,23] is not supported yet. [Op:Minimum] name: ";
    assert_eq!(
        limitation("UnimplementedError", minimum).as_deref(),
        Some("broadcast-above-rank-5")
    );
    assert_eq!(limitation("UnimplementedError", "something else"), None);
}

/// TF's CPU slicing kernels stop at rank 8 (campaign 14: a `TimeDistributed(Softmax)` on a
/// rank-9 `Dot` output).
#[test]
fn slicing_above_rank_8_is_a_known_limitation() {
    let strided = "Exception encountered when calling TimeDistributed.call().\n\n\
        {{function_node __wrapped__StridedSlice_device_/job:localhost/replica:0/task:0/\
        device:CPU:0}} Unhandled input dimensions 9 [Op:StridedSlice] name: \
        functional/time_distributed/strided_slice/";
    assert_eq!(
        limitation("UnimplementedError", strided).as_deref(),
        Some("slice-above-rank-8")
    );
    let slice = "{{function_node __inference_f_12}} SliceOp : Unhandled input dimensions";
    assert_eq!(
        limitation("UnimplementedError", slice).as_deref(),
        Some("slice-above-rank-8")
    );
    // The same words as another error kind (WhereOp's InvalidArgumentError) are not it.
    let where_op = "WhereOp : Unhandled input dimensions: 9";
    assert_eq!(limitation("InvalidArgumentError", where_op), None);
}

/// TF's float64/float16 CPU kernels for transposed convolutions refuse channels-first data
/// and dilation.
#[test]
fn a_channels_first_transposed_conv_kernel_is_a_known_limitation() {
    for message in [
        "Exception encountered when calling Conv3DTranspose.call().\n\n{{function_node \
         __wrapped__Conv3DBackpropInputV2_device_/job:localhost/replica:0/task:0/device:CPU:0}} \
         Conv3DBackpropInputOpV2 only supports NDHWC on the CPU. [Op:Conv3DBackpropInputV2]",
        "{{function_node __wrapped__Conv2DBackpropInput_device_/job:localhost/replica:0/task:0/\
         device:CPU:0}} Conv2DCustomBackpropInputOp only supports NHWC. [Op:Conv2DBackpropInput]",
    ] {
        assert_eq!(
            limitation("InvalidArgumentError", message).as_deref(),
            Some("cpu-transposed-conv-channels-last-only")
        );
    }
    for dilated in [
        "{{function_node __wrapped__Conv3DBackpropInputV2_device_/job:localhost/replica:0/\
         task:0/device:CPU:0}} Current CPU implementation does not yet support dilation \
         rates larger than 1. [Op:Conv3DBackpropInputV2]",
        "{{function_node __wrapped__Conv2DBackpropInput_device_/job:localhost/replica:0/\
         task:0/device:CPU:0}} Current CPU implementations do not yet support dilation \
         rates larger than 1. [Op:Conv2DBackpropInput]",
    ] {
        assert_eq!(
            limitation("InvalidArgumentError", dilated).as_deref(),
            Some("cpu-transposed-conv-no-dilation")
        );
    }
}

/// A limitation is scoped by release: a Keras release older than those it was measured on
/// (3.0.5 to 3.3.3 with TensorFlow 2.16.2, and the pinned one) is not covered.
#[test]
fn a_limitation_holds_only_in_the_releases_it_was_measured_on() {
    let v = late_error(
        "NotFoundError",
        "No OpKernel was registered to support Op 'MaxPool3D'",
    );
    let at = |keras: &str| explained(&v, DType::Float64, keras);
    assert_eq!(at("3.15.1").as_deref(), Some("no-cpu-kernel-for-dtype"));
    assert_eq!(at("3.3.3").as_deref(), Some("no-cpu-kernel-for-dtype"));
    assert_eq!(at("3.2.1").as_deref(), Some("no-cpu-kernel-for-dtype"));
    assert_eq!(at("3.0.0"), None);
}
