//! The triage report's HTML page as a browser shows it, on a machine without Graphviz: a
//! real triage (TensorFlow, a planted fault) writes the page, headless Chromium loads it, and
//! the test reads what Chromium laid out and painted: each row's model is an inline SVG with
//! a box per layer and output, none overlapping, its pixels not blank, the finding's layer
//! highlighted. Needs Chromium (`make setup` installs it); without it the test fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use common::{RELU_CASE, data};

/// Chromium on `PATH`, or a failure that says how to get it.
fn chromium() -> PathBuf {
    ["chromium", "chromium-browser"]
        .iter()
        .find_map(|name| on_path(name, &std::env::var_os("PATH").unwrap_or_default()))
        .unwrap_or_else(|| {
            panic!(
                "no chromium (or chromium-browser) on PATH: this test loads the triage page in a \
                 headless browser. Run `make setup` (scripts/setup.sh installs Chromium), or \
                 install it yourself (Debian: apt-get install chromium)."
            )
        })
}

fn on_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// `PATH` without any folder that holds Graphviz's `dot`.
fn path_without_dot() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| !d.join("dot").exists())
        .collect();
    let kept = std::env::join_paths(kept).unwrap();
    assert_eq!(on_path("dot", &kept), None);
    kept
}

/// Appended to a copy of the page: once it has loaded, what the browser made of each row's
/// picture, as JSON in `<pre id="probe">`: the element's namespace and size, each node box's
/// rendered rectangle and texts, the highlighted node's texts, the edges, and how many pixels
/// of the picture drawn on a white canvas are not white.
const PROBE: &str = r#"<script>
window.addEventListener('load', async () => {
  const rows = [...document.querySelectorAll('tr.group')].map(async tr => {
    const example = tr.cells[7].querySelector('code').textContent;
    const svg = tr.querySelector('figure > svg');
    if (!svg) return {example, svg: null};
    const r = svg.getBoundingClientRect();
    const nodes = [...svg.querySelectorAll('g.node')].map(g => {
      const b = g.querySelector('rect').getBoundingClientRect();
      return {texts: [...g.querySelectorAll('text')].map(t => t.textContent),
              box: [b.left - r.left, b.top - r.top, b.width, b.height]};
    });
    const finding = [...svg.querySelectorAll('g.node.finding text')].map(t => t.textContent);
    const edges = svg.querySelectorAll('g.edge path').length;
    let ink = -1, error = null;
    try {
      const img = new Image();
      img.src = 'data:image/svg+xml;charset=utf-8,' +
        encodeURIComponent(new XMLSerializer().serializeToString(svg));
      await img.decode();
      const c = document.createElement('canvas');
      c.width = Math.ceil(r.width); c.height = Math.ceil(r.height);
      const ctx = c.getContext('2d');
      ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, c.width, c.height);
      ctx.drawImage(img, 0, 0);
      const d = ctx.getImageData(0, 0, c.width, c.height).data;
      ink = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200) ink++;
    } catch (e) { error = String(e); }
    return {example, svg: svg.namespaceURI, width: r.width, height: r.height, nodes, finding,
            edges, ink, error};
  });
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify(await Promise.all(rows));
  document.body.appendChild(out);
});
</script>
"#;

fn headless(chromium: &Path, args: &[&str], page: &Path) -> std::process::Output {
    Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--virtual-time-budget=10000",
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .output()
        .expect("chromium runs")
}

/// The layer names of a case file and its number of outputs.
fn layers_and_outputs(case: &Path) -> (Vec<String>, usize) {
    let case: Value = serde_json::from_str(&std::fs::read_to_string(case).unwrap()).unwrap();
    let names = case["model"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_owned())
        .collect();
    let outputs = &case["model"]["output_layers"];
    let outputs = if outputs[0].is_array() {
        outputs.as_array().unwrap().len()
    } else {
        1
    };
    (names, outputs)
}

/// Width and height from a PNG's header.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap());
    (be(&png[16..20]), be(&png[20..24]))
}

#[test]
fn the_triage_page_shows_every_rows_model_as_a_picture_without_graphviz() {
    let chromium = chromium();
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::write(cases.join("relu.case.json"), RELU_CASE).unwrap();
    // Merges and three outputs (a kept rejection); stacked RNNs (agrees).
    for name in [
        "xla_recomputed_merge.case.json",
        "rnn_stacked_cells.case.json",
    ] {
        std::fs::copy(data(name), cases.join(name)).unwrap();
    }
    let page = dir.path().join("triage.html");
    let out = Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args(["triage", "--html", page.to_str().unwrap()])
        .arg(&cases)
        .env("PATH", path_without_dot())
        .env("SEMFUZZ_WORKER_PLANT", data("plant_fuzz.py"))
        .env_remove("SEMFUZZ_PYTHON")
        .env_remove("SEMFUZZ_PLANT_CRASH_ONCE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let show = || {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    assert_eq!(out.status.code(), Some(1), "{}", show());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("digraph"), "{html}");

    // What the browser made of the page.
    let probed = dir.path().join("probed.html");
    std::fs::write(&probed, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let dump = headless(&chromium, &["--dump-dom"], &probed);
    let dom = String::from_utf8_lossy(&dump.stdout);
    let probe = dom
        .split_once("<pre id=\"probe\">")
        .and_then(|(_, p)| p.split_once("</pre>"))
        .map(|(p, _)| {
            p.replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        })
        .unwrap_or_else(|| {
            panic!(
                "no probe in the DOM Chromium dumped: {dom}\n{}",
                String::from_utf8_lossy(&dump.stderr)
            )
        });
    let rows: Vec<Value> = serde_json::from_str(&probe).unwrap();
    assert_eq!(rows.len(), 3, "{probe}");
    for row in &rows {
        let example = Path::new(row["example"].as_str().unwrap());
        assert_eq!(row["svg"], "http://www.w3.org/2000/svg", "{row}");
        assert_eq!(row["error"], Value::Null, "{row}");
        let (width, height) = (
            row["width"].as_f64().unwrap(),
            row["height"].as_f64().unwrap(),
        );
        assert!(width > 20.0 && height > 20.0, "{row}");
        // A box per layer and per output, each once, by its texts.
        let (layers, outputs) = layers_and_outputs(example);
        let nodes = row["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), layers.len() + outputs, "{row}");
        let texts: Vec<String> = nodes.iter().map(|n| n["texts"].to_string()).collect();
        for name in &layers {
            let quoted = format!("\"{name}\"");
            assert_eq!(
                texts.iter().filter(|t| t.contains(&quoted)).count(),
                1,
                "{name}: {row}"
            );
        }
        for k in 0..outputs {
            assert!(
                texts.contains(&format!("[\"output {k}\"]")),
                "output {k}: {row}"
            );
        }
        assert!(
            row["edges"].as_u64().unwrap() >= layers.len() as u64,
            "{row}"
        );
        // Laid out inside the picture, apart from each other.
        let boxes: Vec<[f64; 4]> = nodes
            .iter()
            .map(|n| serde_json::from_value(n["box"].clone()).unwrap())
            .collect();
        for (i, a) in boxes.iter().enumerate() {
            assert!(a[2] > 10.0 && a[3] > 10.0, "{a:?}: {row}");
            assert!(
                a[0] >= -0.5
                    && a[1] >= -0.5
                    && a[0] + a[2] <= width + 0.5
                    && a[1] + a[3] <= height + 0.5,
                "{a:?}: {row}"
            );
            for b in &boxes[i + 1..] {
                let apart = a[0] + a[2] <= b[0]
                    || b[0] + b[2] <= a[0]
                    || a[1] + a[3] <= b[1]
                    || b[1] + b[3] <= a[1];
                assert!(apart, "{a:?} overlaps {b:?}: {row}");
            }
        }
        // Painted: boxes, text and edges cover part of it, not all.
        let ink = row["ink"].as_f64().unwrap() / (width.ceil() * height.ceil());
        assert!(ink > 0.01 && ink < 0.5, "ink {ink}: {row}");
    }
    let relu = rows
        .iter()
        .find(|r| r["example"].as_str().unwrap().ends_with("relu.case.json"))
        .unwrap();
    assert_eq!(
        relu["finding"],
        serde_json::json!(["ReLU", "re_lu"]),
        "{relu}"
    );

    // A screenshot of the page: a PNG of the window's size, far from blank (a blank page of
    // the same size compresses to a small fraction of it).
    let shot = |page: &Path, png: &Path| {
        let arg = format!("--screenshot={}", png.display());
        let o = headless(&chromium, &[&arg, "--window-size=1600,2400"], page);
        std::fs::read(png).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
    };
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let report = shot(&page, &dir.path().join("page.png"));
    let empty = shot(&blank, &dir.path().join("blank.png"));
    assert_eq!(png_size(&report), (1600, 2400));
    assert!(
        report.len() > 10 * empty.len(),
        "{} vs {} bytes",
        report.len(),
        empty.len()
    );
}
