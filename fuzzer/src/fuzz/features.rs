//! The coverage map: semantic features of what ran, hashed into a fixed-size map that a
//! max-map feedback watches. A case is new when it makes a feature appear, or appear more
//! often, than any case before it.
//!
//! Features: layer class × argument buckets, layer class × pairs of argument buckets (so a
//! case that first brings two values together is kept, as combinatorial testing asks: many
//! layer bugs need two arguments at once), layer class × input rank × dtype, producer →
//! consumer class pairs, the modes and dtype of the run, TF's exception classes by phase,
//! violation categories of invalid cases, numeric hazards in TF's outputs, and verdicts.

use harness_py::{ModeOutcome, TfOutcome, Verdict};
use oracle::Case;
use oracle::check::{CheckError, ModelAnalysis};
use serde_json::Value;

/// Entries in the map (a power of two).
pub const MAP_SIZE: usize = 1 << 16;

/// Stable 64-bit FNV-1a: the same feature lands at the same index in every build and process.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Collects features into a map.
pub struct Features<'m> {
    map: &'m mut [u8],
    /// Mixed into every feature: the backend that ran the case is part of each (none for
    /// TensorFlow, whose features stay where they always were).
    salt: u64,
}

impl<'m> Features<'m> {
    /// The features of a run on `backend`: a layer argument first run on JAX is new coverage
    /// even where TensorFlow ran it before.
    pub fn for_backend(map: &'m mut [u8], backend: harness_py::Backend) -> Self {
        let salt = match backend {
            harness_py::Backend::Tensorflow => 0,
            b => fnv1a64(b.name().as_bytes()),
        };
        Features { map, salt }
    }

    pub fn add(&mut self, feature: &str) {
        self.add_hash(fnv1a64(feature.as_bytes()));
    }

    /// A feature already hashed (a Python line of Keras or TF, say).
    pub fn add_hash(&mut self, hash: u64) {
        let hash = if self.salt == 0 {
            hash
        } else {
            fnv1a64(&(hash ^ self.salt).to_le_bytes())
        };
        let i = (hash as usize) & (self.map.len() - 1);
        self.map[i] = self.map[i].saturating_add(1);
    }
}

/// Config keys that say nothing about behaviour.
fn inert(key: &str) -> bool {
    matches!(key, "name" | "trainable" | "dtype" | "build_config")
        || key.ends_with("_initializer")
        || key.ends_with("_regularizer")
        || key.ends_with("_constraint")
}

/// A coarse class of a value: sign and power of two for numbers, the value itself for
/// strings and booleans, length and element buckets for short lists.
pub fn bucket(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(0.0) => "0".to_owned(),
            Some(x) if x.is_finite() => {
                let sign = if x < 0.0 { "-" } else { "+" };
                format!("{sign}2^{}", x.abs().log2().floor() as i64)
            }
            _ => "nonfinite".to_owned(),
        },
        Value::Array(a) if a.len() <= 4 => {
            let parts: Vec<String> = a.iter().map(bucket).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Array(a) => format!("[len {}]", a.len()),
        Value::Object(o) => {
            // Nested configs (an activation or initializer object): its class is what matters.
            o.get("class_name")
                .map(bucket)
                .unwrap_or_else(|| "object".to_owned())
        }
    }
}

/// A layer's argument features: each argument's bucket, and each pair of them.
fn arg_features(class: &str, config: &serde_json::Map<String, Value>) -> Vec<String> {
    // Sorted: a pair is the same feature whatever order the config lists its keys in.
    let mut args: Vec<String> = config
        .iter()
        .filter(|(k, _)| !inert(k))
        .map(|(key, value)| format!("{key}={}", bucket(value)))
        .collect();
    args.sort();
    let mut out = Vec::with_capacity(args.len() * (args.len() + 1) / 2);
    for (i, a) in args.iter().enumerate() {
        out.push(format!("arg|{class}|{a}"));
        for b in &args[i + 1..] {
            out.push(format!("pair|{class}|{a}|{b}"));
        }
    }
    out
}

/// Everything one execution shows.
pub struct Observed<'a> {
    pub case: &'a Case,
    pub oracle: &'a Result<ModelAnalysis, CheckError>,
    pub tf: &'a TfOutcome,
    pub verdicts: &'a [Verdict],
    pub modes: &'a str,
}

/// Adds the features of one execution.
pub fn collect(f: &mut Features, o: &Observed) {
    let case = o.case;
    let dtype = case.dtype.name();
    f.add(&format!("run|{}|{dtype}", o.modes));
    let layers = &case.model.layers;
    for layer in layers.iter().filter(|l| !l.is_input()) {
        let class = &layer.class_name;
        f.add(&format!("class|{class}|{dtype}"));
        for feature in arg_features(class, &layer.config) {
            f.add(&feature);
        }
    }
    match o.oracle {
        Ok(analysis) => {
            for call in &analysis.calls {
                let consumer = &layers[call.layer].class_name;
                let ranks: Vec<String> = call
                    .input_shapes
                    .iter()
                    .map(|s| s.len().to_string())
                    .collect();
                f.add(&format!("rank|{consumer}|{}", ranks.join(",")));
                for t in &call.inputs {
                    if let Some(p) = case.model.layer(&t.layer) {
                        f.add(&format!("edge|{}>{consumer}", p.class_name));
                    }
                }
            }
        }
        Err(CheckError::Invalid(v)) => {
            f.add(&format!(
                "invalid|{}|{}|{}",
                v.class,
                v.category.name(),
                v.tag.name()
            ));
        }
        Err(CheckError::Unsupported(_)) => f.add("unsupported"),
    }
    match o.tf {
        TfOutcome::Ran { modes, reused, .. } => {
            if *reused {
                f.add("reused");
            }
            for (mode, outcome) in modes {
                match outcome {
                    ModeOutcome::Error(e, _) => {
                        f.add(&format!("raised|{mode}|{}|{}", e.kind, e.phase))
                    }
                    ModeOutcome::Outputs(outputs) => {
                        for ((name, _), arrays) in outputs {
                            let Some(layer) = case.model.layer(name) else {
                                continue;
                            };
                            for a in arrays {
                                if a.iter().any(|x| x.is_nan()) {
                                    f.add(&format!("nan|{}", layer.class_name));
                                } else if a.iter().any(|x| x.is_infinite()) {
                                    f.add(&format!("inf|{}", layer.class_name));
                                } else if !a.is_empty() && a.iter().all(|&x| x == 0.0) {
                                    f.add(&format!("zeros|{}", layer.class_name));
                                }
                            }
                        }
                    }
                }
            }
        }
        TfOutcome::Rejected(e) => f.add(&format!("rejected|{}|{}", e.kind, e.phase)),
        TfOutcome::Crash { .. } => f.add("crash"),
        TfOutcome::Timeout { .. } => f.add("timeout"),
        TfOutcome::OutOfMemory { .. } => f.add("oom"),
    }
    for v in o.verdicts {
        f.add(&format!("verdict|{}", v.signature));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn buckets_keep_sign_and_magnitude_and_drop_the_rest() {
        assert_eq!(bucket(&json!(0)), "0");
        assert_eq!(bucket(&json!(3)), "+2^1");
        assert_eq!(bucket(&json!(2.5)), "+2^1");
        assert_eq!(bucket(&json!(-0.3)), "-2^-2");
        assert_eq!(bucket(&json!([1, 2])), "[+2^0,+2^1]");
        assert_eq!(bucket(&json!([1, 2, 3, 4, 5])), "[len 5]");
        assert_eq!(bucket(&json!("same")), "same");
        assert_eq!(
            bucket(&json!({"class_name": "GlorotUniform", "config": {}})),
            "GlorotUniform"
        );
    }

    #[test]
    fn arguments_count_alone_and_in_pairs_and_inert_ones_not_at_all() {
        let config = json!({
            "name": "gru", "kernel_initializer": {"class_name": "Zeros"},
            "units": 4, "reset_after": false, "go_backwards": true,
        });
        let features = arg_features("GRU", config.as_object().unwrap());
        assert_eq!(
            features,
            [
                "arg|GRU|go_backwards=true",
                "pair|GRU|go_backwards=true|reset_after=false",
                "pair|GRU|go_backwards=true|units=+2^2",
                "arg|GRU|reset_after=false",
                "pair|GRU|reset_after=false|units=+2^2",
                "arg|GRU|units=+2^2",
            ]
        );
    }

    #[test]
    fn features_are_stable_and_counted() {
        let mut map = vec![0u8; MAP_SIZE];
        let mut f = Features::for_backend(&mut map, harness_py::Backend::Tensorflow);
        f.add("class|Dense|float32");
        f.add("class|Dense|float32");
        f.add("class|Conv2D|float32");
        let i = (fnv1a64(b"class|Dense|float32") as usize) & (MAP_SIZE - 1);
        assert_eq!(map[i], 2);
        assert_eq!(map.iter().map(|&x| x as usize).sum::<usize>(), 3);
        // FNV-1a of the empty string is its offset basis.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    }
}
