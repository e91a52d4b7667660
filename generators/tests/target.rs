//! Generation for another Keras release draws only the classes and arguments it has. (A
//! test binary of its own: the restriction holds for the whole process.)

use generators::target::{TargetFilter, restrict};
use oracle::DType;

#[test]
fn generation_draws_only_what_the_target_offers() {
    let all = generators::generate::classes_for(DType::Float32);
    assert!(all.iter().any(|k| k.class_name() == "RMSNormalization"));
    let classes = all
        .iter()
        .map(|k| k.class_name().to_owned())
        .filter(|c| c != "RMSNormalization")
        .collect();
    let lacking = [("Conv2D".to_owned(), ["groups".to_owned()].into())].into();
    let activations = oracle::activations::Activation::all()
        .map(|a| a.0.to_owned())
        .filter(|a| a != "hard_tanh")
        .collect();
    assert!(restrict(TargetFilter {
        classes,
        lacking,
        activations
    }));

    let offered = generators::generate::classes_for(DType::Float32);
    assert!(!offered.iter().any(|k| k.class_name() == "RMSNormalization"));
    assert_eq!(offered.len() + 1, all.len());

    let conv = oracle::layers::lookup("Conv2D", None).unwrap();
    let mut rng = generators::rng(4);
    for _ in 0..200 {
        let config = generators::sample::sample_config(conv, None, 1.0, &mut rng);
        assert!(!config.contains_key("groups"), "{config:?}");
        assert!(config.contains_key("strides"));
        assert_ne!(config["activation"], "hard_tanh");
    }
    // Generated and mutated models hold neither.
    let opts = generators::generate::GenOptions::default();
    for _ in 0..40 {
        let mut case = generators::generate::generate(&opts, &mut rng).case;
        for _ in 0..5 {
            let _ = generators::mutate::mutate(&mut case, &mut rng, None);
        }
        for layer in &case.model.layers {
            assert_ne!(layer.class_name, "RMSNormalization");
            if layer.class_name == "Conv2D" {
                assert!(!layer.config.contains_key("groups"), "{:?}", layer.config);
            }
        }
    }
}
