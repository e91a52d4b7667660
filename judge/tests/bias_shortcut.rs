//! The kept bug of `ops.add`'s bias shortcut (a `channels_first` convolution's bias added along
//! the last axis) explains a convolution's mismatch only where that is the whole difference:
//! the framework's output must equal the reference's with the bias moved. Anything more at the
//! same layer, such as a planted error of one element, is a new finding.

mod common;

use judge::{Judge, Kind, Verdict};
use ndarray::{ArrayD, Axis, IxDyn};
use oracle::{Case, DType};

const FOLDER: &str = "mismatch-DepthwiseConv2D-channels-first-bias";

fn kept_case() -> Case {
    Case::read(format!(
        "{}/../crashes/{FOLDER}/case.case.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The reference's output of the case's one convolution (channels first), with its bias
/// taken off the channels axis and added along the last axis instead.
fn shortcut_output(case: &Case) -> ArrayD<f64> {
    let analysis = oracle::check(case).unwrap();
    let eval = oracle::eval(case, &analysis).unwrap();
    let at = case
        .model
        .layers
        .iter()
        .position(|l| l.class_name == "DepthwiseConv2D")
        .unwrap();
    let mut out = eval.outputs[&(at, 0)][0].clone();
    let bias = &case.weights["depthwise_conv2d"].last().unwrap().data;
    let channels = bias.len();
    assert_eq!(out.shape()[1], channels);
    assert_eq!(out.shape()[out.ndim() - 1], channels);
    for (c, mut lane) in out.axis_iter_mut(Axis(1)).enumerate() {
        lane -= bias[IxDyn(&[c])];
    }
    out + bias
}

fn judge(case: &Case, conv_out: ArrayD<f64>) -> Vec<Verdict> {
    let tf = common::eager_outputs(vec![
        ("input_layer", case.inputs[0].data.clone()),
        ("depthwise_conv2d", conv_out),
    ]);
    Judge::builtin()
        .unwrap()
        .judge(case, DType::Float64, &oracle::check(case), &tf)
}

#[test]
fn the_bias_shortcut_alone_is_the_kept_bug() {
    let case = kept_case();
    let verdicts = judge(&case, shortcut_output(&case));
    assert_eq!(verdicts.len(), 1, "{verdicts:#?}");
    assert_eq!(verdicts[0].kind, Kind::Mismatch);
    assert!(verdicts[0].evidence.bias_on_last_axis, "{verdicts:#?}");
    assert_eq!(verdicts[0].known.as_deref(), Some(FOLDER));
}

#[test]
fn more_than_the_bias_shortcut_at_the_same_layer_is_a_finding() {
    let case = kept_case();
    let mut out = shortcut_output(&case);
    out[[0, 0, 0, 0]] += 0.5;
    let verdicts = judge(&case, out);
    assert_eq!(verdicts.len(), 1, "{verdicts:#?}");
    assert_eq!(verdicts[0].kind, Kind::Mismatch);
    assert!(!verdicts[0].evidence.bias_on_last_axis, "{verdicts:#?}");
    assert_eq!(verdicts[0].known, None, "{verdicts:#?}");
}
