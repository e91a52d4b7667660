//! The value ranges of Keras initializers, for the numeric-hazard analysis of a model saved
//! without weights: a freshly built model's weights lie within these bounds. Normal
//! distributions that Keras does not truncate are bounded at [`NORMAL_SIGMAS`] standard
//! deviations (a documented assumption: an interval analysis needs finite bounds, and a
//! draw beyond six sigmas has probability below 2e-9).

use serde_json::Value;

use crate::interval::Interval;

/// Standard deviations at which an untruncated normal initializer is bounded.
pub const NORMAL_SIGMAS: f64 = 6.0;
/// Keras's truncated normal draws within two standard deviations; its `stddev` argument is
/// corrected by this factor (the standard deviation of a unit normal truncated at ±2).
const TRUNCATED_STDDEV: f64 = 0.879_625_661_034_239_8;

/// The range of the weight `name` (of this shape) initialized by `config` (the layer's
/// `<name>_initializer` entry; absent, Keras's default for weights of that name).
pub fn range(config: Option<&Value>, name: &str, shape: &[usize]) -> Interval {
    let (class, args) = match config {
        Some(Value::String(s)) => (s.as_str(), None),
        Some(Value::Object(o)) => (
            o.get("class_name").and_then(Value::as_str).unwrap_or(""),
            o.get("config").and_then(Value::as_object),
        ),
        _ => (default_for(name), None),
    };
    let arg = |k: &str, default: f64| {
        args.and_then(|a| a.get(k))
            .and_then(Value::as_f64)
            .unwrap_or(default)
    };
    let (fan_in, fan_out) = fans(shape);
    let scaled = |scale: f64, n: f64, distribution: &str| {
        let variance = scale / n.max(1.0);
        let bound = match distribution {
            "uniform" => (3.0 * variance).sqrt(),
            "untruncated_normal" => NORMAL_SIGMAS * variance.sqrt(),
            _ => 2.0 * variance.sqrt() / TRUNCATED_STDDEV,
        };
        Interval::new(-bound, bound)
    };
    let avg = (fan_in + fan_out) / 2.0;
    match normalize(class).as_str() {
        "zeros" | "zero" => Interval::point(0.0),
        "ones" | "one" => Interval::point(1.0),
        "constant" => Interval::point(arg("value", 0.0)),
        "glorotuniform" => scaled(1.0, avg, "uniform"),
        "glorotnormal" => scaled(1.0, avg, "truncated_normal"),
        "heuniform" => scaled(2.0, fan_in, "uniform"),
        "henormal" => scaled(2.0, fan_in, "truncated_normal"),
        "lecununiform" => scaled(1.0, fan_in, "uniform"),
        "lecunnormal" => scaled(1.0, fan_in, "truncated_normal"),
        "variancescaling" => {
            let mode = args
                .and_then(|a| a.get("mode"))
                .and_then(Value::as_str)
                .unwrap_or("fan_in");
            let n = match mode {
                "fan_out" => fan_out,
                "fan_avg" => avg,
                _ => fan_in,
            };
            let distribution = args
                .and_then(|a| a.get("distribution"))
                .and_then(Value::as_str)
                .unwrap_or("truncated_normal");
            scaled(arg("scale", 1.0), n, distribution)
        }
        "randomuniform" => Interval::new(arg("minval", -0.05), arg("maxval", 0.05)),
        "randomnormal" => around(arg("mean", 0.0), NORMAL_SIGMAS * arg("stddev", 0.05)),
        "truncatednormal" => around(arg("mean", 0.0), 2.0 * arg("stddev", 0.05)),
        // Entries of an orthogonal matrix have magnitude at most 1.
        "orthogonal" => around(0.0, arg("gain", 1.0).abs()),
        "identity" => Interval::of([0.0, arg("gain", 1.0)]),
        _ => Interval::new(f64::NEG_INFINITY, f64::INFINITY),
    }
}

/// Keras's default initializer for a weight of this name.
fn default_for(name: &str) -> &'static str {
    if ["bias", "beta", "mean"].iter().any(|k| name.contains(k)) {
        "zeros"
    } else if ["gamma", "variance", "scale"]
        .iter()
        .any(|k| name.contains(k))
    {
        "ones"
    } else if name.contains("recurrent") {
        "orthogonal"
    } else if name.contains("embeddings") {
        "random_uniform"
    } else if name.contains("kernel") {
        "glorot_uniform"
    } else {
        ""
    }
}

/// `GlorotUniform`, `glorot_uniform` → `glorotuniform`.
fn normalize(class: &str) -> String {
    class
        .chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

fn around(center: f64, radius: f64) -> Interval {
    Interval::new(center - radius.abs(), center + radius.abs())
}

/// Keras's `compute_fans`: the receptive field multiplies a kernel's last two axes.
fn fans(shape: &[usize]) -> (f64, f64) {
    match shape {
        [] => (1.0, 1.0),
        [n] => (*n as f64, *n as f64),
        [a, b] => (*a as f64, *b as f64),
        [rest @ .., i, o] => {
            let field: f64 = rest.iter().map(|&d| d as f64).product();
            (*i as f64 * field, *o as f64 * field)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn glorot_uniform_is_bounded_by_its_limit() {
        let c = json!({"class_name": "GlorotUniform", "config": {"seed": null}});
        let iv = range(Some(&c), "kernel", &[3, 3, 4, 8]);
        let limit = (6.0_f64 / (36.0 + 72.0)).sqrt();
        assert!((iv.hi - limit).abs() < 1e-12 && (iv.lo + limit).abs() < 1e-12);
    }

    #[test]
    fn defaults_follow_the_weight_name() {
        assert_eq!(range(None, "moving_variance", &[4]), Interval::point(1.0));
        assert_eq!(range(None, "bias", &[4]), Interval::point(0.0));
        assert!(
            range(Some(&json!("my_custom_init")), "kernel", &[2, 2])
                .hi
                .is_infinite()
        );
    }
}
