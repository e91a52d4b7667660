//! One concrete suggestion per violation, in one sentence: what the user can change. The
//! violation already says what is wrong (parameter, actual, expected); the suggestion says
//! how to make it right, from the category and the parameter involved.

use crate::violation::{Category, Violation};

/// Suggestions that only quote what was expected: (category, text before it, what to say
/// when nothing was, text after it).
const SENTENCES: [(Category, &str, &str, &str); 6] = [
    (
        Category::IncompatibleShapes,
        "make the inputs agree (",
        "matching shapes",
        "): change a layer on one branch so both produce the same shape (see fixes)",
    ),
    (
        Category::Rank,
        "feed this layer ",
        "an input of the accepted rank",
        " (insert a Reshape or Flatten, or change the layer before it)",
    ),
    (
        Category::ReshapeSize,
        "choose a target_shape with as many elements as the input (",
        "the same element count",
        "); one entry may be -1",
    ),
    (
        Category::Structure,
        "connect ",
        "the number of tensors it takes",
        " to this layer",
    ),
    (
        Category::DType,
        "cast the input to ",
        "a dtype the layer accepts",
        " before this layer",
    ),
    (
        Category::InputValue,
        "keep the input values within ",
        "the layer's domain",
        "",
    ),
];

/// Window-like arguments: a window larger than its input can be fixed by padding it.
const WINDOWS: [&str; 4] = ["kernel_size", "pool_size", "dilation_rate", "size"];

/// The suggestion for `v`, e.g. "kernel_size 5 exceeds input width 4: use padding='same' or
/// a kernel_size ≤ 4".
pub fn suggestion(v: &Violation) -> String {
    let base = base_parameter(&v.parameter);
    let bound = upper_bound(&v.expected);
    match v.category {
        Category::EmptyOutput | Category::ImproperArgument if WINDOWS.contains(&base) => {
            match bound {
                Some(n) => format!(
                    "{} {} {}: use padding='same' or a {base} ≤ {n}",
                    v.parameter, v.actual, v.detail
                ),
                None => {
                    format!("use padding='same', a smaller {base}, or a larger input to this layer")
                }
            }
        }
        Category::EmptyOutput | Category::ImproperArgument if base.starts_with("crop") => {
            match bound {
                Some(n) => format!(
                    "crop less: a total of at most {n} in {} keeps the output non-empty",
                    v.parameter
                ),
                None => "crop less, or give the layer a larger input".to_owned(),
            }
        }
        Category::EmptyOutput => format!(
            "the output becomes empty: use a smaller {}, padding='same', or a larger input",
            display_parameter(base)
        ),
        Category::ImproperArgument | Category::IllegalArgument => match v.expected.as_str() {
            "" => format!("change {} (now {})", display_parameter(base), v.actual),
            e => format!("set {} to {e}", display_parameter(base)),
        },
        Category::Axis => format!(
            "use {} for {}",
            or_else(&v.expected, "an axis within the input's rank"),
            display_parameter(base)
        ),
        Category::WeightShape => format!(
            "give {} weights of shape {}",
            display_parameter(base),
            or_else(&v.expected, "the shape the layer builds")
        ),
        Category::WeightValue => format!(
            "keep {} within {}",
            display_parameter(base),
            or_else(&v.expected, "its domain")
        ),
        c => {
            let (before, default, after) = SENTENCES
                .iter()
                .find(|(k, ..)| *k == c)
                .map(|&(_, b, d, a)| (b, d, a))
                .unwrap_or(("expected ", "a different input", ""));
            format!("{before}{}{after}", or_else(&v.expected, default))
        }
    }
}

/// `kernel_size[1]` → `kernel_size`.
fn base_parameter(p: &str) -> &str {
    p.split('[').next().unwrap_or(p)
}

fn display_parameter(base: &str) -> &str {
    or_else(base, "the argument")
}

fn or_else<'a>(s: &'a str, default: &'a str) -> &'a str {
    if s.is_empty() { default } else { s }
}

/// The largest accepted value an expectation names: `<= N`, `at most N`, or `below N`
/// (which is `N - 1`).
fn upper_bound(expected: &str) -> Option<u64> {
    let number_after = |marker: &str| -> Option<u64> {
        let rest = expected[expected.find(marker)? + marker.len()..].trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    number_after("<=")
        .or_else(|| number_after("at most"))
        .or_else(|| number_after("below").map(|n| n.saturating_sub(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::violation::Tag;

    #[test]
    fn a_window_larger_than_its_input_suggests_same_padding_or_the_largest_window() {
        let v = Violation::new(Category::EmptyOutput, Tag::KerasEnforced)
            .parameter("kernel_size[1]")
            .actual(5)
            .expected("<= 4 with padding \"valid\"")
            .detail("exceeds the input's spatial size 4");
        let s = suggestion(&v);
        assert!(s.contains("padding='same'"), "{s}");
        assert!(s.ends_with("a kernel_size ≤ 4"), "{s}");
    }

    #[test]
    fn every_category_gets_a_sentence() {
        for c in Category::ALL {
            let v = Violation::new(c, Tag::KerasEnforced).parameter("axis");
            assert!(!suggestion(&v).is_empty(), "{c}");
        }
    }
}
