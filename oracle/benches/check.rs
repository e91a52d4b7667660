//! `check` on a ResNet50-size config (177 layers, from `keras.applications.ResNet50`, made by
//! scripts/make_bench_configs.py): target under 20 ms. Run with `make bench`; results are
//! appended to `target/bench-results/check.txt`.

use std::io::Write as _;
use std::time::Instant;

use oracle::Case;
use oracle::check::{CheckedShapes, check, check_all};

fn main() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/data/resnet50.case.json"
    );
    let text = std::fs::read_to_string(path).expect("the bench config");
    let runs = 50;

    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(Case::from_json_str(&text, path).expect("reads"));
    }
    let parse = start.elapsed().as_secs_f64() / runs as f64;
    let case = Case::from_json_str(&text, path).expect("reads");

    let start = Instant::now();
    for _ in 0..runs {
        let analysis = check(&case).expect("ResNet50 is valid");
        std::hint::black_box(analysis);
    }
    let first = start.elapsed().as_secs_f64() / runs as f64;

    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(check_all(&case).expect("supported"));
    }
    let all = start.elapsed().as_secs_f64() / runs as f64;

    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(case.to_json(&CheckedShapes::of(&case)));
    }
    let write = start.elapsed().as_secs_f64() / runs as f64;

    let lines = [format!(
        "ResNet50 ({} layers): read {:.2} ms, check {:.2} ms, check_all {:.2} ms, write with derived shapes {:.2} ms (target: check < 20 ms)",
        case.model.layers.len(),
        parse * 1e3,
        first * 1e3,
        all * 1e3,
        write * 1e3
    )];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/bench-results");
    std::fs::create_dir_all(dir).expect("results dir");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(format!("{dir}/check.txt"))
        .expect("results file");
    for l in lines {
        println!("{l}");
        writeln!(f, "{l}").expect("results file");
    }
}
