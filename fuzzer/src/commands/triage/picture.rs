//! The model as a picture, drawn here rather than by Graphviz so it is the same on every
//! machine: an SVG of the layer graph, top to bottom. Layers are ranked by their longest path
//! from the inputs, ordered within a rank by barycenter sweeps that keep the ordering with
//! the fewest crossings, and centred on their rank; an edge that spans ranks bends through a
//! slot on each rank it crosses, so it passes between boxes, never through one.

use std::collections::HashMap;
use std::fmt::Write as _;

use oracle::Case;
use oracle::case::ModelKind;

/// What a box stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Input,
    Layer,
    /// A model output: a label, no box.
    Output,
}

pub(super) struct Node {
    pub kind: Kind,
    /// The label, one line each: the class first.
    pub lines: Vec<String>,
    /// The layer the finding names: drawn highlighted.
    pub finding: bool,
    /// Shown on hover (the layer's config).
    pub tooltip: String,
}

/// Nodes and edges (from, to), by index.
pub(super) struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<(usize, usize)>,
}

impl Graph {
    /// One node per layer (class, name; an input's declared shape), one per model output,
    /// one edge per tensor a layer's first call reads; `finding` names the layer to highlight.
    pub fn of(case: &Case, finding: Option<&str>) -> Graph {
        let layers = &case.model.layers;
        let index: HashMap<&str, usize> = layers
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.as_str(), i))
            .collect();
        let mut g = Graph {
            nodes: Vec::new(),
            edges: Vec::new(),
        };
        for (i, l) in layers.iter().enumerate() {
            let (kind, class) = match l.input_batch_shape() {
                Some(dims) if l.is_input() => {
                    let dims: Vec<String> = dims
                        .iter()
                        .map(|d| d.map_or("None".to_owned(), |n| n.to_string()))
                        .collect();
                    (Kind::Input, format!("Input ({})", dims.join(", ")))
                }
                _ => (Kind::Layer, l.class_name.clone()),
            };
            let tooltip = serde_json::to_string(&l.config).unwrap_or_default();
            g.nodes.push(Node {
                kind,
                lines: vec![class, l.name.clone()],
                finding: finding == Some(l.name.as_str()),
                tooltip: tooltip.chars().take(2000).collect(),
            });
            if matches!(case.model.kind, ModelKind::Sequential) {
                if i > 0 {
                    g.edges.push((i - 1, i));
                }
                continue;
            }
            for r in generators::edit::call_inputs(l) {
                if let Some(&from) = index.get(r.layer.as_str()) {
                    g.edges.push((from, i));
                }
            }
        }
        for (k, r) in generators::edit::outputs(case).iter().enumerate() {
            if let Some(&from) = index.get(r.layer.as_str()) {
                g.nodes.push(Node {
                    kind: Kind::Output,
                    lines: vec![format!("output {k}")],
                    finding: false,
                    tooltip: String::new(),
                });
                g.edges.push((from, g.nodes.len() - 1));
            }
        }
        g.edges.sort_unstable();
        g.edges.dedup();
        g
    }
}

const CHAR_W: f64 = 7.5;
const LINE_H: f64 = 15.0;
const PAD: f64 = 8.0;
const GAP_X: f64 = 24.0;
const GAP_Y: f64 = 36.0;
const MARGIN: f64 = 8.0;
/// The width of a slot an edge passes a rank through.
const SLOT_W: f64 = 6.0;
const ARROW: f64 = 7.0;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// Where everything goes: a box per node, a polyline per edge (top to bottom).
pub(super) struct Layout {
    pub boxes: Vec<Rect>,
    pub paths: Vec<Vec<(f64, f64)>>,
    pub width: f64,
    pub height: f64,
}

/// Crossings between the segments of two adjacent ranks, given each node's position.
fn crossings(segments: &[(usize, usize)], pos: &[usize]) -> usize {
    let mut n = 0;
    for (i, &(a, b)) in segments.iter().enumerate() {
        for &(c, d) in &segments[i + 1..] {
            if (pos[a] < pos[c] && pos[b] > pos[d]) || (pos[a] > pos[c] && pos[b] < pos[d]) {
                n += 1;
            }
        }
    }
    n
}

pub(super) fn layout(g: &Graph) -> Layout {
    let n = g.nodes.len();
    // Ranks: the longest path from a source (bounded, should a cycle slip in).
    let mut rank = vec![0usize; n];
    for _ in 0..n {
        let mut changed = false;
        for &(u, v) in &g.edges {
            if u != v && rank[v] < rank[u] + 1 {
                rank[v] = rank[u] + 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Each edge as a chain of vertices, one per rank, slots added where it skips ranks.
    let mut rank_of = rank.clone();
    let mut chains = Vec::with_capacity(g.edges.len());
    for &(u, v) in &g.edges {
        let mut chain = vec![u];
        for r in rank[u] + 1..rank[v] {
            rank_of.push(r);
            chain.push(rank_of.len() - 1);
        }
        chain.push(v);
        chains.push(chain);
    }
    let total = rank_of.len();
    let ranks = rank_of.iter().max().map_or(0, |r| r + 1);
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); ranks];
    for (v, &r) in rank_of.iter().enumerate() {
        rows[r].push(v);
    }
    // Segments between rank r and r + 1, by their upper rank.
    let mut between: Vec<Vec<(usize, usize)>> = vec![Vec::new(); ranks];
    for chain in &chains {
        for w in chain.windows(2) {
            if rank_of[w[1]] == rank_of[w[0]] + 1 {
                between[rank_of[w[0]]].push((w[0], w[1]));
            }
        }
    }
    let mut pos = vec![0usize; total];
    let place = |rows: &[Vec<usize>], pos: &mut [usize]| {
        for row in rows {
            for (i, &v) in row.iter().enumerate() {
                pos[v] = i;
            }
        }
    };
    place(&rows, &mut pos);
    let count = |pos: &[usize]| -> usize { between.iter().map(|s| crossings(s, pos)).sum() };
    let mut best = (count(&pos), rows.clone());
    for sweep in 0..8 {
        let down = sweep % 2 == 0;
        let order: Vec<usize> = if down {
            (1..ranks).collect()
        } else {
            (0..ranks.saturating_sub(1)).rev().collect()
        };
        for r in order {
            let mut keyed: Vec<(f64, usize)> = rows[r]
                .iter()
                .map(|&v| {
                    let near: Vec<usize> = if down {
                        between[r - 1]
                            .iter()
                            .filter(|s| s.1 == v)
                            .map(|s| pos[s.0])
                            .collect()
                    } else {
                        between[r]
                            .iter()
                            .filter(|s| s.0 == v)
                            .map(|s| pos[s.1])
                            .collect()
                    };
                    let key = if near.is_empty() {
                        pos[v] as f64
                    } else {
                        near.iter().sum::<usize>() as f64 / near.len() as f64
                    };
                    (key, v)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
            rows[r] = keyed.into_iter().map(|(_, v)| v).collect();
            place(&rows, &mut pos);
        }
        let c = count(&pos);
        if c < best.0 {
            best = (c, rows.clone());
        }
    }
    let rows = best.1;
    // Sizes, then each rank centred, the ranks stacked.
    let size = |v: usize| -> (f64, f64) {
        match g.nodes.get(v) {
            Some(node) => {
                let chars = node
                    .lines
                    .iter()
                    .map(|l| l.chars().count())
                    .max()
                    .unwrap_or(0);
                (
                    chars as f64 * CHAR_W + 2.0 * PAD,
                    node.lines.len() as f64 * LINE_H + 2.0 * PAD - 4.0,
                )
            }
            None => (SLOT_W, 0.0),
        }
    };
    let row_width = |row: &[usize]| -> f64 {
        row.iter().map(|&v| size(v).0).sum::<f64>() + GAP_X * row.len().saturating_sub(1) as f64
    };
    let width = rows.iter().map(|r| row_width(r)).fold(0.0, f64::max) + 2.0 * MARGIN;
    let mut boxes = vec![
        Rect {
            x: 0.0,
            y: 0.0,
            w: 0.0,
            h: 0.0
        };
        total
    ];
    let mut y = MARGIN;
    for row in &rows {
        let h = row.iter().map(|&v| size(v).1).fold(0.0, f64::max);
        let mut x = (width - row_width(row)) / 2.0;
        for &v in row {
            let (w, hv) = size(v);
            boxes[v] = Rect {
                x,
                y: y + (h - hv) / 2.0,
                w,
                h: hv,
            };
            x += w + GAP_X;
        }
        y += h + GAP_Y;
    }
    let height = y - GAP_Y + MARGIN;
    // Paths: out of the bottom centre, through the slots, into the top, the edges arriving at
    // one box spread along its top in the order they come from.
    let mut paths: Vec<Vec<(f64, f64)>> = chains
        .iter()
        .map(|chain| {
            let first = boxes[chain[0]];
            let mut p = vec![(first.x + first.w / 2.0, first.y + first.h)];
            for &s in &chain[1..chain.len() - 1] {
                let b = boxes[s];
                p.push((b.x + b.w / 2.0, b.y));
            }
            p
        })
        .collect();
    for (v, b) in boxes.iter().enumerate().take(n) {
        let mut arriving: Vec<usize> = (0..chains.len())
            .filter(|&e| *chains[e].last().expect("a chain has two ends") == v)
            .collect();
        arriving.sort_by(|&a, &b| {
            let x = |e: usize| paths[e].last().expect("a path starts").0;
            x(a).total_cmp(&x(b))
        });
        let k = arriving.len() as f64;
        for (i, e) in arriving.into_iter().enumerate() {
            paths[e].push((b.x + b.w * (i as f64 + 1.0) / (k + 1.0), b.y));
        }
    }
    Layout {
        boxes: boxes.into_iter().take(n).collect(),
        paths,
        width,
        height,
    }
}

/// Text made safe for XML content and attribute values; characters XML cannot hold are
/// replaced.
fn xml(text: &str) -> String {
    let text: String = text
        .chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => ' ',
            c if c.is_control() || matches!(c, '\u{FFFE}' | '\u{FFFF}') => '\u{FFFD}',
            c => c,
        })
        .collect();
    super::report::escape(&text)
}

/// The model's picture: an `<svg>` element, valid standalone and inline in HTML (no ids).
pub(super) fn svg(case: &Case, finding: Option<&str>) -> String {
    render(&Graph::of(case, finding))
}

pub(super) fn render(g: &Graph) -> String {
    let l = layout(g);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"model\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
        w = l.width.ceil(),
        h = l.height.ceil()
    );
    for p in &l.paths {
        let mut d = format!("M{:.1},{:.1}", p[0].0, p[0].1);
        for (i, w) in p.windows(2).enumerate() {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            // The last piece stops where its arrowhead starts.
            let end = if i + 2 == p.len() { y1 - ARROW } else { y1 };
            let mid = (y0 + end) / 2.0;
            let _ = write!(d, " C{x0:.1},{mid:.1} {x1:.1},{mid:.1} {x1:.1},{end:.1}");
        }
        let (x, y) = *p.last().expect("a path");
        let _ = writeln!(
            s,
            "<g class=\"edge\"><path d=\"{d}\" fill=\"none\" stroke=\"#555\"/><polygon points=\"{:.1},{:.1} {:.1},{:.1} {x:.1},{y:.1}\" fill=\"#555\"/></g>",
            x - ARROW / 2.0,
            y - ARROW,
            x + ARROW / 2.0,
            y - ARROW,
        );
    }
    for (node, b) in g.nodes.iter().zip(&l.boxes) {
        let (class, fill, stroke, width) = match (node.kind, node.finding) {
            (_, true) => ("node finding", "#fde2e1", "#c5221f", 2.0),
            (Kind::Input, _) => ("node input", "#e8f0fe", "#5b7bb5", 1.0),
            (Kind::Layer, _) => ("node layer", "#ffffff", "#555", 1.0),
            (Kind::Output, _) => ("node output", "none", "none", 0.0),
        };
        let _ = write!(s, "<g class=\"{class}\">");
        if !node.tooltip.is_empty() {
            let _ = write!(s, "<title>{}</title>", xml(&node.tooltip));
        }
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"3\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>",
            b.x, b.y, b.w, b.h
        );
        for (i, line) in node.lines.iter().enumerate() {
            let weight = if i == 0 && node.kind != Kind::Output {
                " font-weight=\"bold\""
            } else {
                ""
            };
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\"{weight}>{}</text>",
                b.x + b.w / 2.0,
                b.y + PAD + LINE_H * (i as f64 + 1.0) - 4.0,
                xml(line)
            );
        }
        s += "</g>\n";
    }
    s += "</svg>\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(kind: Kind, label: &str) -> Node {
        Node {
            kind,
            lines: vec![label.to_owned()],
            finding: false,
            tooltip: String::new(),
        }
    }

    /// Inputs are named `in*`, outputs `out*`, the rest are layers.
    fn graph(labels: &[&str], edges: &[(usize, usize)]) -> Graph {
        let kind = |l: &str| {
            if l.starts_with("in") {
                Kind::Input
            } else if l.starts_with("out") {
                Kind::Output
            } else {
                Kind::Layer
            }
        };
        Graph {
            nodes: labels.iter().map(|l| node(kind(l), l)).collect(),
            edges: edges.to_vec(),
        }
    }

    /// Whether `text` is well-formed XML as far as an SVG of ours goes: one root, tags
    /// nested and closed, attribute values quoted, only the predefined entities and numeric
    /// references, no `<` or `&` raw in text or attributes.
    fn well_formed(text: &str) -> Result<(), String> {
        let entity = |s: &str| -> Result<usize, String> {
            let end = s
                .find(';')
                .ok_or_else(|| format!("unterminated entity: {s:.20}"))?;
            let name = &s[1..end];
            let numeric = name
                .strip_prefix('#')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
            if numeric || matches!(name, "amp" | "lt" | "gt" | "quot" | "apos") {
                Ok(end + 1)
            } else {
                Err(format!("unknown entity &{name};"))
            }
        };
        let (mut stack, mut roots, mut rest) = (Vec::<String>::new(), 0, text);
        while let Some(i) = rest.find(['<', '&']) {
            if stack.is_empty() && !rest[..i].trim().is_empty() {
                return Err(format!("text outside the root: {:.20}", &rest[..i]));
            }
            rest = &rest[i..];
            if rest.starts_with('&') {
                rest = &rest[entity(rest)?..];
                continue;
            }
            let end = rest.find('>').ok_or("an unclosed tag")?;
            let inside = &rest[1..end];
            rest = &rest[end + 1..];
            if let Some(name) = inside.strip_prefix('/') {
                if stack.pop().as_deref() != Some(name.trim()) {
                    return Err(format!("</{name}> closes nothing open"));
                }
                continue;
            }
            let closed = inside.ends_with('/');
            let inside = inside.trim_end_matches('/');
            let (name, mut attrs) = inside.split_once(' ').unwrap_or((inside, ""));
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(format!("a bad tag name: {name:?}"));
            }
            while !attrs.trim().is_empty() {
                let (key, value) = attrs
                    .trim_start()
                    .split_once("=\"")
                    .ok_or(format!("an unquoted attribute in <{name}>"))?;
                if key.is_empty() || key.contains([' ', '"', '<']) {
                    return Err(format!("a bad attribute name {key:?}"));
                }
                let close = value.find('"').ok_or("an unterminated attribute value")?;
                let mut v = &value[..close];
                if v.contains('<') {
                    return Err(format!("a raw < in {key}"));
                }
                while let Some(a) = v.find('&') {
                    v = &v[a + entity(&v[a..])?..];
                }
                attrs = &value[close + 1..];
            }
            if stack.is_empty() {
                roots += 1;
            }
            if !closed {
                stack.push(name.to_owned());
            }
        }
        match (stack.is_empty(), roots, rest.trim().is_empty()) {
            (true, 1, true) => Ok(()),
            _ => Err(format!(
                "open: {stack:?}, roots: {roots}, trailing: {rest:.20}"
            )),
        }
    }

    #[test]
    fn the_checker_refuses_what_is_not_xml() {
        assert!(well_formed("<svg><g a=\"1\"/><text>a &amp; b</text></svg>\n").is_ok());
        for bad in [
            "<svg><g></svg>",
            "<svg><text>a & b</text></svg>",
            "<svg><text>a &nbsp; b</text></svg>",
            "<svg a=1></svg>",
            "<svg></svg><svg></svg>",
        ] {
            assert!(well_formed(bad).is_err(), "{bad}");
        }
    }

    /// Every node drawn once, no two boxes overlapping, every edge going down from its
    /// source's bottom to its target's top, the SVG well-formed.
    fn assert_drawn(g: &Graph) -> Layout {
        let l = layout(g);
        let text = render(g);
        well_formed(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(
            text.matches("<g class=\"node").count(),
            g.nodes.len(),
            "{text}"
        );
        assert_eq!(
            text.matches("<g class=\"edge\">").count(),
            g.edges.len(),
            "{text}"
        );
        for n in &g.nodes {
            let label = format!(">{}</text>", xml(n.lines.last().unwrap()));
            assert_eq!(text.matches(&label).count(), 1, "{label}: {text}");
        }
        for (i, a) in l.boxes.iter().enumerate() {
            assert!(
                a.x >= 0.0 && a.y >= 0.0 && a.x + a.w <= l.width && a.y + a.h <= l.height,
                "{a:?}"
            );
            for b in &l.boxes[i + 1..] {
                let apart =
                    a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
                assert!(apart, "{a:?} overlaps {b:?}");
            }
        }
        for (&(u, v), p) in g.edges.iter().zip(&l.paths) {
            let (from, to) = (l.boxes[u], l.boxes[v]);
            assert_eq!(p[0], (from.x + from.w / 2.0, from.y + from.h), "{u} -> {v}");
            let end = *p.last().unwrap();
            assert!(
                end.1 == to.y && end.0 > to.x && end.0 < to.x + to.w,
                "{u} -> {v}: {p:?}"
            );
            assert!(
                p.windows(2).all(|w| w[1].1 > w[0].1),
                "{u} -> {v} goes up: {p:?}"
            );
        }
        l
    }

    #[test]
    fn a_chain_is_one_column() {
        let g = graph(&["in", "Dense", "ReLU", "out 0"], &[(0, 1), (1, 2), (2, 3)]);
        let l = assert_drawn(&g);
        let centre = |r: Rect| r.x + r.w / 2.0;
        assert!(
            l.boxes
                .iter()
                .all(|&b| (centre(b) - centre(l.boxes[0])).abs() < 1e-9)
        );
        assert!(l.boxes.windows(2).all(|w| w[1].y > w[0].y + w[0].h));
    }

    #[test]
    fn a_diamond_merges_side_by_side_and_a_skipping_edge_passes_between_boxes() {
        // in -> A -> C -> Add, in -> B -> Add, in -> Add (skips two ranks).
        let g = graph(
            &["in", "A", "B", "C", "Add", "out 0"],
            &[(0, 1), (0, 2), (1, 3), (3, 4), (2, 4), (0, 4), (4, 5)],
        );
        let l = assert_drawn(&g);
        assert_eq!(l.boxes[1].y, l.boxes[2].y, "A and B share a rank");
        assert!(l.boxes[4].y > l.boxes[3].y, "Add below C");
        let skip = &l.paths[g.edges.iter().position(|&e| e == (0, 4)).unwrap()];
        assert_eq!(skip.len(), 4, "bends on the two ranks it crosses: {skip:?}");
        // Three edges arrive at Add, each at its own point.
        let mut ends: Vec<f64> = g
            .edges
            .iter()
            .zip(&l.paths)
            .filter(|(e, _)| e.1 == 4)
            .map(|(_, p)| p.last().unwrap().0)
            .collect();
        ends.dedup();
        assert_eq!(ends.len(), 3, "{ends:?}");
    }

    #[test]
    fn barycenter_sweeps_remove_avoidable_crossings() {
        // Two inputs feeding layers listed in the crossing order.
        let g = graph(
            &["in a", "in b", "X", "Y", "out 0", "out 1"],
            &[(0, 3), (1, 2), (2, 4), (3, 5)],
        );
        let l = assert_drawn(&g);
        let centre = |v: usize| l.boxes[v].x + l.boxes[v].w / 2.0;
        assert_eq!(centre(0) < centre(1), centre(3) < centre(2));
        assert_eq!(centre(3) < centre(2), centre(5) < centre(4));
    }

    #[test]
    fn a_model_with_several_outputs_shows_each() {
        let g = graph(
            &["in", "A", "B", "out 0", "out 1", "out 2"],
            &[(0, 1), (0, 2), (1, 3), (2, 4), (1, 5)],
        );
        let l = assert_drawn(&g);
        assert_eq!(l.boxes[3].y, l.boxes[5].y);
        let text = render(&g);
        assert_eq!(
            text.matches("<g class=\"node output\">").count(),
            3,
            "{text}"
        );
    }

    #[test]
    fn labels_are_escaped_and_characters_xml_cannot_hold_replaced() {
        let mut g = graph(&["in", "odd"], &[(0, 1)]);
        g.nodes[1].lines = vec!["<Dense & \"x\">".to_owned(), "a\u{1}b".to_owned()];
        g.nodes[1].tooltip = "{\"units\": \"<4>\"}".to_owned();
        let text = render(&g);
        well_formed(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert!(
            text.contains(">&lt;Dense &amp; &quot;x&quot;&gt;</text>"),
            "{text}"
        );
        assert!(text.contains(">a\u{FFFD}b</text>"), "{text}");
        assert!(
            text.contains("<title>{&quot;units&quot;: &quot;&lt;4&gt;&quot;}</title>"),
            "{text}"
        );
    }

    #[test]
    fn a_kept_case_with_merges_and_three_outputs_is_drawn_with_its_finding_highlighted() {
        let case = Case::from_json_str(
            include_str!("../../../tests/data/xla_recomputed_merge.case.json"),
            "xla_recomputed_merge.case.json",
        )
        .unwrap();
        let g = Graph::of(&case, Some("subtract"));
        assert_eq!(g.nodes.len(), case.model.layers.len() + 3);
        assert_drawn(&g);
        let text = svg(&case, Some("subtract"));
        let finding = &text[text.find("<g class=\"node finding\">").expect(&text)..];
        assert!(
            finding[..finding.find("</g>").unwrap()].contains(">Subtract</text>"),
            "{text}"
        );
        assert_eq!(text.matches("node finding").count(), 1, "{text}");
        assert!(text.contains(">Input (None, "), "{text}");
    }
}
