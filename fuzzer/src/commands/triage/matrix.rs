//! Findings replayed in several environments (`triage --python A --python B`, `bisect`): a
//! matrix of finding × environment, and for each finding the environments that show it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use harness_py::Versions;

use super::report::escape;
use super::{Group, Status};

/// One environment the findings were replayed in.
#[derive(Debug, Clone)]
pub struct Column {
    pub keras: String,
    pub tensorflow: String,
    /// The interpreter whose environment it is.
    pub environment: String,
}

impl Column {
    pub fn of(v: &Versions) -> Self {
        Column {
            keras: v.keras.clone(),
            tensorflow: v.tensorflow.clone(),
            environment: v.environment.clone(),
        }
    }

    pub fn label(&self) -> String {
        format!("Keras {} / TF {}", self.keras, self.tensorflow)
    }
}

/// One finding or case, and its status in each environment (`None`: it could not be
/// replayed there, see the report's skipped list).
#[derive(Debug, Clone)]
pub struct MatrixRow {
    /// The finding's folder or the case file.
    pub source: String,
    pub signature: String,
    pub cells: Vec<Option<Status>>,
}

/// What one cell says of the finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Evidence {
    Shows,
    Absent,
    /// Not run there (unsupported on that release, or skipped): no evidence either way.
    None,
}

fn evidence(cell: Option<&Status>) -> Evidence {
    match cell {
        Some(Status::Reproduces | Status::Flaky | Status::Known(_)) => Evidence::Shows,
        Some(Status::NoLongerReproduces | Status::Agrees) => Evidence::Absent,
        Some(Status::Unsupported(_)) | None => Evidence::None,
    }
}

/// Where a finding shows, in the matrix's column order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    /// In no environment that ran it.
    Never,
    /// From column `first` to column `last`, in every column between them that ran it;
    /// `after` is the first later column that ran it and did not show it.
    Between {
        first: usize,
        last: usize,
        after: Option<usize>,
    },
    /// From `first` to `last` but not in the columns `gaps` between them: it comes and goes.
    Intermittent {
        first: usize,
        last: usize,
        gaps: Vec<usize>,
    },
}

impl MatrixRow {
    pub fn span(&self) -> Span {
        let ev: Vec<Evidence> = self.cells.iter().map(|c| evidence(c.as_ref())).collect();
        let showing: Vec<usize> = (0..ev.len())
            .filter(|&i| ev[i] == Evidence::Shows)
            .collect();
        let (Some(&first), Some(&last)) = (showing.first(), showing.last()) else {
            return Span::Never;
        };
        let gaps: Vec<usize> = (first..=last)
            .filter(|&i| ev[i] == Evidence::Absent)
            .collect();
        if gaps.is_empty() {
            let after = (last + 1..ev.len()).find(|&i| ev[i] == Evidence::Absent);
            Span::Between { first, last, after }
        } else {
            Span::Intermittent { first, last, gaps }
        }
    }
}

/// Every finding × every environment.
#[derive(Debug, Clone, Default)]
pub struct Matrix {
    pub columns: Vec<Column>,
    pub rows: Vec<MatrixRow>,
}

impl Matrix {
    /// A column: what the replays in one environment found.
    pub(super) fn add(&mut self, column: Column, groups: &BTreeMap<String, Group>) {
        let at = self.columns.len();
        self.columns.push(column);
        for g in groups.values() {
            for m in &g.members {
                let source = m.entry.source.path().display().to_string();
                let i = match self.rows.iter().position(|r| r.source == source) {
                    Some(i) => i,
                    None => {
                        self.rows.push(MatrixRow {
                            source,
                            signature: m.signature.clone().unwrap_or_else(|| "-".to_owned()),
                            cells: Vec::new(),
                        });
                        self.rows.len() - 1
                    }
                };
                let row = &mut self.rows[i];
                if row.signature == "-"
                    && let Some(s) = &m.signature
                {
                    row.signature = s.clone();
                }
                row.cells.resize(at, None);
                row.cells.push(Some(m.status.clone()));
            }
        }
        for r in &mut self.rows {
            r.cells.resize(at + 1, None);
        }
        self.rows.sort_by(|a, b| a.source.cmp(&b.source));
    }

    /// Where a row shows, in words: `Keras 3.3.3 to 3.5.0, not since 3.6.0`.
    pub fn span_text(&self, row: &MatrixRow) -> String {
        let keras = |i: usize| self.columns[i].keras.as_str();
        match row.span() {
            Span::Never => "in none".to_owned(),
            Span::Between { first, last, after } => {
                let shown = if first == last {
                    format!("Keras {}", keras(first))
                } else {
                    format!("Keras {} to {}", keras(first), keras(last))
                };
                match after {
                    Some(a) => format!("{shown}; not in {}", keras(a)),
                    None => shown,
                }
            }
            Span::Intermittent { first, last, gaps } => format!(
                "comes and goes: Keras {} to {}, but not in {}",
                keras(first),
                keras(last),
                gaps.iter()
                    .map(|&g| keras(g))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    fn cell_text(cell: Option<&Status>) -> String {
        cell.map_or_else(|| "skipped".to_owned(), Status::to_string)
    }

    /// A plain-text rendering for the terminal.
    pub fn text(&self) -> String {
        let mut s = String::from("across environments:\n");
        for (i, c) in self.columns.iter().enumerate() {
            let _ = writeln!(s, "  [{}] {} ({})", i + 1, c.label(), c.environment);
        }
        for r in &self.rows {
            let _ = writeln!(s, "  {} {}", r.source, r.signature);
            for (i, cell) in r.cells.iter().enumerate() {
                let _ = writeln!(s, "    [{}] {}", i + 1, Self::cell_text(cell.as_ref()));
            }
            let _ = writeln!(s, "    shows in: {}", self.span_text(r));
        }
        s
    }

    pub fn markdown(&self) -> String {
        let cell = |s: &str| s.replace('|', "\\|");
        let mut s = String::from("## Across environments\n\n");
        s += "| finding | signature |";
        for c in &self.columns {
            let _ = write!(s, " {} |", cell(&c.label()));
        }
        s += " shows in |\n|---|---|";
        s += &"---|".repeat(self.columns.len() + 1);
        s.push('\n');
        for r in &self.rows {
            let _ = write!(s, "| `{}` | `{}` |", cell(&r.source), cell(&r.signature));
            for c in &r.cells {
                let _ = write!(s, " {} |", cell(&Self::cell_text(c.as_ref())));
            }
            let _ = writeln!(s, " {} |", cell(&self.span_text(r)));
        }
        s.push('\n');
        for c in &self.columns {
            let _ = writeln!(s, "- {}: `{}`", c.label(), cell(&c.environment));
        }
        s.push('\n');
        s
    }

    pub fn html(&self) -> String {
        let mut s = String::from(
            "<section class=\"matrix\">\n<h2>Across environments</h2>\n<table>\n<thead><tr><th>finding</th><th>signature</th>",
        );
        for c in &self.columns {
            let _ = write!(
                s,
                "<th title=\"{}\">{}</th>",
                escape(&c.environment),
                escape(&c.label())
            );
        }
        s += "<th>shows in</th></tr></thead>\n<tbody>\n";
        for r in &self.rows {
            let _ = write!(
                s,
                "<tr><td><code>{}</code></td><td><code>{}</code></td>",
                escape(&r.source),
                escape(&r.signature)
            );
            for c in &r.cells {
                let class = c.as_ref().map_or("skipped", Status::name).replace(' ', "-");
                let _ = write!(
                    s,
                    "<td class=\"status-{class}\">{}</td>",
                    escape(&Self::cell_text(c.as_ref()))
                );
            }
            let _ = writeln!(s, "<td>{}</td></tr>", escape(&self.span_text(r)));
        }
        s += "</tbody>\n</table>\n</section>\n";
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: Vec<Option<Status>>) -> MatrixRow {
        MatrixRow {
            source: "/f/mismatch/Dense".to_owned(),
            signature: "mismatch/Dense".to_owned(),
            cells,
        }
    }

    fn matrix(rows: Vec<MatrixRow>, n: usize) -> Matrix {
        let releases = ["3.3.3", "3.5.0", "3.9.2", "3.15.1"];
        Matrix {
            columns: releases[..n]
                .iter()
                .map(|k| Column {
                    keras: (*k).to_owned(),
                    tensorflow: "2.x".to_owned(),
                    environment: format!("/e/{k}/bin/python"),
                })
                .collect(),
            rows,
        }
    }

    use Status::*;

    #[test]
    fn a_bug_fixed_upstream_shows_up_to_the_release_before_the_fix() {
        let r = row(vec![
            Some(Reproduces),
            Some(Reproduces),
            Some(NoLongerReproduces),
            Some(NoLongerReproduces),
        ]);
        assert_eq!(
            r.span(),
            Span::Between {
                first: 0,
                last: 1,
                after: Some(2)
            }
        );
        assert_eq!(
            matrix(vec![r.clone()], 4).span_text(&r),
            "Keras 3.3.3 to 3.5.0; not in 3.9.2"
        );
    }

    #[test]
    fn releases_that_cannot_express_the_case_are_no_evidence() {
        let r = row(vec![
            Some(Unsupported("no layer class X".into())),
            Some(Known("k".into())),
            None,
            Some(Reproduces),
        ]);
        assert_eq!(
            r.span(),
            Span::Between {
                first: 1,
                last: 3,
                after: None
            }
        );
        let m = matrix(vec![r.clone()], 4);
        assert_eq!(m.span_text(&r), "Keras 3.5.0 to 3.15.1");
        let md = m.markdown();
        assert!(md.contains("| unsupported: no layer class X | known: k | skipped | reproduces |"));
    }

    #[test]
    fn a_bug_that_comes_and_goes_says_so() {
        let r = row(vec![
            Some(Reproduces),
            Some(NoLongerReproduces),
            Some(Flaky),
            Some(Agrees),
        ]);
        assert_eq!(
            r.span(),
            Span::Intermittent {
                first: 0,
                last: 2,
                gaps: vec![1]
            }
        );
        assert_eq!(
            matrix(vec![r.clone()], 4).span_text(&r),
            "comes and goes: Keras 3.3.3 to 3.9.2, but not in 3.5.0"
        );
        assert_eq!(row(vec![Some(Agrees), None]).span(), Span::Never);
    }

    #[test]
    fn the_page_escapes_and_classes_each_cell() {
        let r = row(vec![Some(Reproduces), Some(Unsupported("<x>".into()))]);
        let html = matrix(vec![r], 2).html();
        assert!(html.contains("<td class=\"status-reproduces\">reproduces</td>"));
        assert!(html.contains("<td class=\"status-unsupported\">unsupported: &lt;x&gt;</td>"));
        assert!(html.contains("<th title=\"/e/3.3.3/bin/python\">Keras 3.3.3 / TF 2.x</th>"));
    }
}
