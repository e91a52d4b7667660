//! Generation benchmark (oracle only): 10,000 models of ~10 layers, generated and repaired on
//! one core. Writes validity, diversity and speed to `target/bench-results/generate.txt`, with
//! partial results every 1,000 models.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use generators::stats::Summary;
use generators::{GenOptions, generate};

fn main() {
    let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-results");
    std::fs::create_dir_all(&out_dir).expect("results dir");
    let path = out_dir.join("generate.txt");
    let total: usize = std::env::var("SEMFUZZ_BENCH_MODELS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let opts = GenOptions::default();
    let mut rng = generators::rng(2026);
    let mut all = Summary::default();
    let mut per_thousand = Summary::default();
    let mut fewest_classes_per_thousand = usize::MAX;
    let mut seconds = 0.0;
    let mut lines = Vec::new();
    for i in 1..=total {
        let t = Instant::now();
        let g = generate(&opts, &mut rng);
        seconds += t.elapsed().as_secs_f64();
        all.add(&g.case, &g.repair);
        per_thousand.add(&g.case, &g.repair);
        if i % 1000 == 0 || i == total {
            fewest_classes_per_thousand =
                fewest_classes_per_thousand.min(per_thousand.classes.len());
            per_thousand = Summary::default();
            lines = vec![
                format!(
                    "# generation bench: {i} of {total} models (seed 2026, ~10 layers, one core)"
                ),
                format!(
                    "valid models per second (generation + repair + arrays): {:.0}",
                    all.valid as f64 / seconds
                ),
                format!(
                    "fewest distinct classes in a block of 1000 models: {fewest_classes_per_thousand}"
                ),
            ];
            lines.extend(all.to_text().lines().map(str::to_owned));
            let mut f = std::fs::File::create(&path).expect("results file");
            for l in &lines {
                writeln!(f, "{l}").expect("write results");
            }
        }
    }
    for l in &lines {
        println!("{l}");
    }
}
