//! The triage report. One set of rows is built from the groups, and both renderings read
//! only those rows: the Markdown report (always written) and a self-contained HTML page
//! (`--html`), which also shows a picture of each row's model, drawn by [`super::picture`]
//! (no Graphviz needed).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use generators::minimize::inner_layers;
use harness_py::Versions;
use judge::Tier;

use super::matrix::Matrix;
use super::picture;
use super::{Group, Status};

/// What the report says about one group.
pub(super) struct Row {
    pub class: String,
    pub signature: String,
    pub status: Status,
    /// What is wrong, in one line (`-` where no replay showed it).
    pub what: String,
    pub count: u64,
    pub first_seen: String,
    pub last_seen: String,
    /// The smallest example's case file, and its layers.
    pub example: (String, usize),
    pub minimal: Option<MinimalCase>,
    /// The minimal model (or, unminimised, the smallest example) as an `<svg>` element, the
    /// layer the finding names highlighted.
    pub picture: String,
}

pub(super) struct MinimalCase {
    pub case: String,
    pub layers: usize,
    pub elements: usize,
    /// The picture's file, `model.svg`.
    pub picture_file: String,
}

/// The groups of one verdict and tier, by layer class.
pub(super) struct Section {
    pub verdict: String,
    /// How a maintainer would rank its findings (`None`: no replay showed one).
    pub tier: Option<Tier>,
    pub rows: Vec<Row>,
}

impl Section {
    /// `wrong-result · mismatch`, or the verdict alone where no tier is known.
    fn heading(&self) -> String {
        match self.tier {
            Some(Tier::Ieee) => format!(
                "ieee · {} (only from NaN/Inf, or float32 rounding of a constant)",
                self.verdict
            ),
            Some(t) => format!("{} · {}", t.name(), self.verdict),
            None => self.verdict.clone(),
        }
    }
}

pub(super) struct Report {
    pub entries: usize,
    pub dirs: Vec<String>,
    pub replays: u32,
    pub tensorflow: String,
    pub keras: String,
    pub sections: Vec<Section>,
    pub skipped: Vec<String>,
    /// With several environments: every finding's status in each.
    pub matrix: Option<Matrix>,
}

fn row(g: &Group) -> Row {
    let best = g.best();
    let first_seen = g
        .seen(|r| r.first_seen)
        .into_iter()
        .min()
        .map_or("-".into(), date);
    let last_seen = g
        .seen(|r| r.last_seen)
        .into_iter()
        .max()
        .map_or("-".into(), date);
    let (minimal, picture) = match &g.minimized {
        Some(m) => {
            let minimal = MinimalCase {
                case: m.dir.join("case.case.json").display().to_string(),
                layers: m.after.0,
                elements: m.after.1,
                picture_file: m.dir.join("model.svg").display().to_string(),
            };
            (Some(minimal), picture::svg(&m.case, m.layer.as_deref()))
        }
        None => {
            let layer = g.shown().and_then(|v| v.layer.as_deref());
            (None, picture::svg(&best.entry.case, layer))
        }
    };
    Row {
        class: g.class().to_owned(),
        signature: g.signature.clone(),
        status: g.status(),
        what: g.what().unwrap_or_else(|| "-".to_owned()),
        count: g.count(),
        first_seen,
        last_seen,
        example: (
            best.entry.source.case_path().display().to_string(),
            inner_layers(&best.entry.case),
        ),
        minimal,
        picture,
    }
}

impl Report {
    pub fn new(
        groups: &BTreeMap<String, Group>,
        dirs: &[PathBuf],
        replays: u32,
        skipped: &[String],
        versions: &Versions,
    ) -> Self {
        // By tier, first to last (ieee last, apart; no tier after all), then by verdict.
        let mut by_tier: BTreeMap<(usize, &str), Section> = BTreeMap::new();
        for g in groups.values() {
            let tier = g.tier();
            let rank = tier.map_or(Tier::ALL.len(), |t| t as usize);
            by_tier
                .entry((rank, g.verdict()))
                .or_insert_with(|| Section {
                    verdict: g.verdict().to_owned(),
                    tier,
                    rows: Vec::new(),
                })
                .rows
                .push(row(g));
        }
        let sections = by_tier
            .into_values()
            .map(|mut section| {
                section
                    .rows
                    .sort_by(|a, b| (&a.class, &a.signature).cmp(&(&b.class, &b.signature)));
                section
            })
            .collect();
        Report {
            entries: groups.values().map(|g| g.members.len()).sum(),
            dirs: dirs.iter().map(|d| d.display().to_string()).collect(),
            replays,
            tensorflow: versions.tensorflow.clone(),
            keras: versions.keras.clone(),
            sections,
            skipped: skipped.to_vec(),
            matrix: None,
        }
    }

    fn rows(&self) -> impl Iterator<Item = &Row> {
        self.sections.iter().flat_map(|s| s.rows.iter())
    }

    /// The opening sentence of both renderings.
    fn summary(&self) -> String {
        format!(
            "{} finding(s) or case(s) from {}, replayed {} time(s) each with TensorFlow {}, Keras {}: {} signature(s).",
            self.entries,
            self.dirs.join(", "),
            self.replays,
            self.tensorflow,
            self.keras,
            self.rows().count()
        )
    }

    /// Signatures per status, reproducing ones first; statuses no group has are left out.
    fn tally(&self) -> Vec<(&'static str, usize)> {
        Status::NAMES
            .iter()
            .map(|&name| {
                (
                    name,
                    self.rows().filter(|r| r.status.name() == name).count(),
                )
            })
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    fn tally_text(&self) -> String {
        self.tally()
            .iter()
            .map(|(name, n)| format!("{name}: {n}"))
            .collect::<Vec<_>>()
            .join(" · ")
    }

    pub fn markdown(&self) -> String {
        let cell = |s: &str| s.replace('|', "\\|");
        let mut s = String::from("# semfuzz triage\n\n");
        let _ = writeln!(s, "{}\n\n{}\n", cell(&self.summary()), self.tally_text());
        if let Some(m) = &self.matrix {
            s += &m.markdown();
        }
        for section in &self.sections {
            let _ = writeln!(s, "## {}\n", section.heading());
            s += "| class | signature | status | what is wrong | count | first seen | last seen | smallest example | minimal case | picture |\n";
            s += "|---|---|---|---|---|---|---|---|---|---|\n";
            for r in &section.rows {
                let (minimal, picture) = r.minimal.as_ref().map_or(("-".into(), "-".into()), |m| {
                    (
                        format!(
                            "`{}` ({} layers, {} elements per input)",
                            cell(&m.case),
                            m.layers,
                            m.elements
                        ),
                        format!("`{}`", cell(&m.picture_file)),
                    )
                });
                let _ = writeln!(
                    s,
                    "| {} | `{}` | {} | {} | {} | {} | {} | `{}` ({} layers) | {minimal} | {picture} |",
                    cell(&r.class),
                    cell(&r.signature),
                    cell(&r.status.to_string()),
                    cell(&r.what),
                    r.count,
                    r.first_seen,
                    r.last_seen,
                    cell(&r.example.0),
                    r.example.1,
                );
            }
            s.push('\n');
        }
        if !self.skipped.is_empty() {
            s += "## Skipped\n\n";
            for k in &self.skipped {
                let _ = writeln!(s, "- {k}");
            }
        }
        s
    }

    /// A self-contained page: every text escaped, each row's model inlined as SVG.
    pub fn html(&self) -> String {
        let mut s = String::from(HTML_HEAD);
        let _ = writeln!(
            s,
            "<h1>semfuzz triage</h1>\n<p class=\"summary\">{}</p>\n<p class=\"tally\">{}</p>",
            escape(&self.summary()),
            escape(&self.tally_text())
        );
        if let Some(m) = &self.matrix {
            s += &m.html();
        }
        for section in &self.sections {
            let _ = writeln!(
                s,
                "<section class=\"verdict\" id=\"{0}\">\n<h2>{0}</h2>\n<table>\n<thead><tr><th>class</th><th>signature</th><th>status</th><th>what is wrong</th><th>count</th><th>first seen</th><th>last seen</th><th>smallest example</th><th>minimal case</th><th>picture</th></tr></thead>\n<tbody>",
                escape(&section.heading())
            );
            for r in &section.rows {
                html_row(&mut s, r);
            }
            s += "</tbody>\n</table>\n</section>\n";
        }
        if !self.skipped.is_empty() {
            s += "<section class=\"skipped\">\n<h2>Skipped</h2>\n<ul>\n";
            for k in &self.skipped {
                let _ = writeln!(s, "<li>{}</li>", escape(k));
            }
            s += "</ul>\n</section>\n";
        }
        s += "</body>\n</html>\n";
        s
    }
}

const HTML_HEAD: &str = "<!DOCTYPE html>
<html lang=\"en\">
<head>
<meta charset=\"utf-8\">
<title>semfuzz triage</title>
<style>
body { font-family: sans-serif; margin: 2em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; vertical-align: top; text-align: left; }
td.status-reproduces { color: #a00; font-weight: bold; }
td.status-flaky { color: #a60; }
td.status-agrees, td.status-no-longer-reproduces { color: #070; }
td.status-unsupported, td.status-skipped { color: #777; }
figure { margin: 0; max-width: 30em; overflow: auto; }
td code { overflow-wrap: anywhere; }
</style>
</head>
<body>
";

fn html_row(s: &mut String, r: &Row) {
    let minimal = r.minimal.as_ref().map_or("-".into(), |m| {
        // The repro and the ready-to-file issue beside the minimal case.
        let beside = |name: &str| {
            Path::new(&m.case)
                .with_file_name(name)
                .display()
                .to_string()
        };
        format!(
            "<code>{}</code> ({} layers, {} elements per input) <a href=\"file://{}\">repro.py</a> <a href=\"file://{}\">issue.md</a>",
            escape(&m.case),
            m.layers,
            m.elements,
            escape(&beside("repro.py")),
            escape(&beside("issue.md")),
        )
    });
    let _ = writeln!(
        s,
        "<tr class=\"group\"><td>{}</td><td><code>{}</code></td><td class=\"status-{}\">{}</td><td class=\"what\">{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code> ({} layers)</td><td>{minimal}</td><td><figure>{}</figure></td></tr>",
        escape(&r.class),
        escape(&r.signature),
        r.status.name().replace(' ', "-"),
        escape(&r.status.to_string()),
        escape(&r.what),
        r.count,
        escape(&r.first_seen),
        escape(&r.last_seen),
        escape(&r.example.0),
        r.example.1,
        r.picture.trim_end(),
    );
}

/// Text made safe for HTML content and attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `YYYY-MM-DD HH:MM UTC` of a Unix time.
fn date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(date(0), "1970-01-01 00:00 UTC");
        assert_eq!(date(1_700_000_000), "2023-11-14 22:13 UTC");
    }

    fn row(signature: &str, status: Status, picture: &str) -> Row {
        Row {
            class: signature.split('/').nth(1).unwrap_or("model").to_owned(),
            signature: signature.to_owned(),
            status,
            what: "'re_lu' output 0 at [0, 0]: TensorFlow 7e0, reference 6e0 <b>".to_owned(),
            count: 3,
            first_seen: date(0),
            last_seen: date(1_700_000_000),
            example: ("/f/case.case.json".to_owned(), 7),
            minimal: None,
            picture: picture.to_owned(),
        }
    }

    fn report(sections: Vec<Section>) -> Report {
        Report {
            entries: 4,
            dirs: vec!["/f".to_owned()],
            replays: 2,
            tensorflow: "2.21.0".to_owned(),
            keras: "3.15.1".to_owned(),
            sections,
            skipped: vec!["/f/bad.case.json: <not a case>".to_owned()],
            matrix: None,
        }
    }

    #[test]
    fn a_section_heading_carries_its_tier_with_ieee_set_apart() {
        let section = |tier| Section {
            verdict: "mismatch".to_owned(),
            tier,
            rows: vec![],
        };
        assert_eq!(
            section(Some(Tier::WrongResult)).heading(),
            "wrong-result · mismatch"
        );
        assert!(
            section(Some(Tier::Ieee))
                .heading()
                .starts_with("ieee · mismatch (only from NaN/Inf")
        );
        assert_eq!(section(None).heading(), "mismatch");
        let md = report(vec![section(Some(Tier::WrongResult))]).markdown();
        assert!(md.contains("## wrong-result · mismatch"), "{md}");
    }

    #[test]
    fn html_escapes_every_text_and_inlines_each_picture() {
        let r = report(vec![Section {
            verdict: "mismatch".to_owned(),
            tier: None,
            rows: vec![
                row(
                    "mismatch/<script>alert(1)</script>",
                    Status::Reproduces,
                    "<svg class=\"model\"><text>a</text></svg>\n",
                ),
                row(
                    "mismatch/ReLU",
                    Status::Flaky,
                    "<svg class=\"model\"><text>ReLU</text></svg>\n",
                ),
            ],
        }]);
        let html = r.html();
        assert!(html.starts_with("<!DOCTYPE html>\n<html"), "{html}");
        assert!(html.trim_end().ends_with("</html>"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("mismatch/&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("<figure><svg class=\"model\"><text>a</text></svg></figure>"));
        assert!(html.contains("<figure><svg class=\"model\"><text>ReLU</text></svg></figure>"));
        assert!(html.contains("<li>/f/bad.case.json: &lt;not a case&gt;</li>"));
        assert!(html.contains("<td class=\"status-flaky\">flaky</td>"));
        assert!(html.contains("<p class=\"tally\">reproduces: 1 · flaky: 1</p>"));
        assert_eq!(html.matches("<tr class=\"group\">").count(), 2);
    }

    #[test]
    fn markdown_and_html_show_the_same_rows() {
        let r = report(vec![
            Section {
                verdict: "crash".to_owned(),
                tier: None,
                rows: vec![row(
                    "crash/MaxPooling1D/SIGFPE",
                    Status::Known("crash-MaxPooling1D-sigfpe".to_owned()),
                    "<svg></svg>",
                )],
            },
            Section {
                verdict: "mismatch".to_owned(),
                tier: None,
                rows: vec![row(
                    "mismatch/A|B",
                    Status::NoLongerReproduces,
                    "<svg></svg>",
                )],
            },
            Section {
                verdict: "agree".to_owned(),
                tier: None,
                rows: vec![row(
                    "agree/model/c.case.json",
                    Status::Agrees,
                    "<svg></svg>",
                )],
            },
        ]);
        let md = r.markdown();
        let html = r.html();
        assert!(md.contains("4 finding(s) or case(s) from /f, replayed 2 time(s) each with TensorFlow 2.21.0, Keras 3.15.1: 3 signature(s)."), "{md}");
        assert!(
            md.contains("known: 1 · no longer reproduces: 1 · agrees: 1"),
            "{md}"
        );
        assert!(
            md.contains("| model | `agree/model/c.case.json` | agrees | 're_lu' output 0 at [0, 0]: TensorFlow 7e0, reference 6e0 <b> | 3 |"),
            "{md}"
        );
        assert!(
            html.contains("<td class=\"status-agrees\">agrees</td>"),
            "{html}"
        );
        // What is wrong, in one line, escaped.
        assert!(
            html.contains("<td class=\"what\">&#39;re_lu&#39; output 0 at [0, 0]: TensorFlow 7e0, reference 6e0 &lt;b&gt;</td>"),
            "{html}"
        );
        assert!(
            html.contains("<td class=\"status-no-longer-reproduces\">no longer reproduces</td>"),
            "{html}"
        );
        assert!(md.contains("| MaxPooling1D | `crash/MaxPooling1D/SIGFPE` | known: crash-MaxPooling1D-sigfpe | 're_lu' output 0 at [0, 0]: TensorFlow 7e0, reference 6e0 <b> | 3 | 1970-01-01 00:00 UTC | 2023-11-14 22:13 UTC | `/f/case.case.json` (7 layers) | - | - |"), "{md}");
        assert!(md.contains("`mismatch/A\\|B`"), "{md}");
        assert!(md.find("## crash").unwrap() < md.find("## mismatch").unwrap());
        assert!(html.find("<h2>crash</h2>").unwrap() < html.find("<h2>mismatch</h2>").unwrap());
        for text in [
            "crash/MaxPooling1D/SIGFPE",
            "known: crash-MaxPooling1D-sigfpe",
            "2023-11-14 22:13 UTC",
            "(7 layers)",
            "mismatch/A|B",
        ] {
            assert!(md.contains(text) || text.contains('|'), "{text}: {md}");
            assert!(html.contains(text), "{text}: {html}");
        }
    }
}
