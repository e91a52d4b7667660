//! An entry scoped to TensorFlow's oneDNN kernels on or off holds only where the worker
//! reports that state (and where it is not known), as kept bugs of the other kernels need.

use judge::entries::{Facts, Suppressions, Target};
use judge::evidence::Evidence;
use judge::{Kind, Mode, Verdict};
use oracle::{Case, DType};

const FOLDER: &str = "mismatch-MaxPooling3D-onednn-off-same-padding-shifted-window";

fn mismatch(layer: &str) -> Verdict {
    Verdict {
        kind: Kind::Mismatch,
        signature: "mismatch/MaxPooling3D".into(),
        layer: Some(layer.into()),
        mode: Some(Mode::Eager),
        detail: String::new(),
        evidence: Evidence {
            max_abs_error: Some(8.0),
            finite_error: true,
            ..Evidence::default()
        },
        tier: None,
        known: None,
    }
}

fn explained(case: &Case, onednn: Option<bool>) -> Option<String> {
    let s = Suppressions::builtin().unwrap();
    let analysis = oracle::check::check(case).unwrap();
    let target = Target {
        onednn,
        ..Target::tensorflow("3.15.1", "2.21.0")
    };
    s.explain(&Facts {
        case,
        dtype: DType::Float32,
        verdict: &mismatch("max_pooling3d"),
        analysis: Some(&analysis),
        target: &target,
    })
    .map(|id| id.to_string())
}

fn kept_case() -> Case {
    Case::read(format!(
        "{}/../crashes/{FOLDER}/case.case.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn an_entry_of_the_kernels_without_onednn_holds_only_where_they_run() {
    let case = kept_case();
    assert_eq!(explained(&case, Some(false)).as_deref(), Some(FOLDER));
    assert_eq!(explained(&case, None).as_deref(), Some(FOLDER));
    assert_eq!(explained(&case, Some(true)), None);
}

#[test]
fn a_pooling_window_that_does_not_shift_is_not_explained() {
    // Strides of 1: no window can shift, so a mismatch there is a new finding.
    let mut case = kept_case();
    let layer = case
        .model
        .layers
        .iter_mut()
        .find(|l| l.class_name == "MaxPooling3D")
        .unwrap();
    layer
        .config
        .insert("strides".into(), serde_json::json!([1, 1, 1]));
    assert_eq!(explained(&case, Some(false)), None);
}

/// oneDNN's float32 softmax refuses inputs above rank 5; TF's own kernel (oneDNN off) takes
/// them, so the limitation explains the refusal only where oneDNN runs.
#[test]
fn the_onednn_softmax_rank_limit_holds_only_with_onednn() {
    let case = kept_case();
    let verdict = Verdict {
        kind: Kind::LateError,
        signature: "late-error/MaxPooling3D/AbortedError".into(),
        layer: Some("max_pooling3d".into()),
        mode: Some(Mode::Eager),
        detail: String::new(),
        evidence: Evidence {
            error: Some(judge::evidence::ErrorFacts {
                kind: "AbortedError".into(),
                message: "Input dims must be <= 5".into(),
            }),
            ..Evidence::default()
        },
        tier: None,
        known: None,
    };
    let s = Suppressions::builtin().unwrap();
    let analysis = oracle::check::check(&case).unwrap();
    let explained = |onednn| {
        let target = Target {
            onednn,
            ..Target::tensorflow("3.15.1", "2.21.0")
        };
        s.explain(&Facts {
            case: &case,
            dtype: DType::Float32,
            verdict: &verdict,
            analysis: Some(&analysis),
            target: &target,
        })
        .map(|id| id.to_string())
    };
    let id = "onednn-softmax-above-rank-5";
    assert_eq!(explained(Some(true)).as_deref(), Some(id));
    assert_eq!(explained(None).as_deref(), Some(id));
    assert_eq!(explained(Some(false)), None);
}
