//! Class draws that favour the classes a campaign has seen least. Left to uniform draws, a
//! campaign runs a few classes in a third of its models (those the repair inserts, those every
//! shape accepts, those its corpus entries happen to hold) and the pickiest ones (recurrent
//! layers, grouped attention) in one model of a hundred: a bug behind an argument value of a
//! rare class is then out of reach in a short campaign. A [`ClassBalance`] counts the models
//! each class was in; [`ClassBalance::choose`] draws a class with a weight that falls as its
//! count grows, and a fresh balance draws uniformly.

use std::collections::HashMap;

use oracle::Case;
use oracle::layers::LayerKind;
use rand::Rng as _;

use crate::Rng;

/// How many models each class has been in so far.
#[derive(Debug, Clone, Default)]
pub struct ClassBalance {
    counts: HashMap<String, u64>,
}

impl ClassBalance {
    /// Counts each class of the case's layers once (input layers not counted).
    pub fn record(&mut self, case: &Case) {
        let mut seen: Vec<&str> = case
            .model
            .layers
            .iter()
            .filter(|l| !l.is_input())
            .map(|l| l.class_name.as_str())
            .collect();
        seen.sort_unstable();
        seen.dedup();
        for class in seen {
            self.record_class(class);
        }
    }

    /// Counts one more model that held `class`.
    pub fn record_class(&mut self, class: &str) {
        *self.counts.entry(class.to_owned()).or_default() += 1;
    }

    /// Each class seen, with the models it has been in.
    pub fn counts(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counts.iter().map(|(c, n)| (c.as_str(), *n))
    }

    /// The models `class` has been in.
    pub fn count(&self, class: &str) -> u64 {
        self.counts.get(class).copied().unwrap_or(0)
    }

    /// A class's weight in a draw: one over one more than its count.
    pub fn weight(&self, class: &str) -> f64 {
        1.0 / (1 + self.count(class)) as f64
    }

    /// One of `candidates`, each drawn with its [`weight`](Self::weight); `None` when there are
    /// none.
    pub fn choose(
        &self,
        candidates: &[&'static dyn LayerKind],
        rng: &mut Rng,
    ) -> Option<&'static dyn LayerKind> {
        self.choose_by(candidates, |k| k.class_name(), rng).copied()
    }

    /// One of `items`, each weighted by its class's [`weight`](Self::weight).
    pub fn choose_by<'a, T>(
        &self,
        items: &'a [T],
        class: impl Fn(&T) -> &str,
        rng: &mut Rng,
    ) -> Option<&'a T> {
        let weights: Vec<f64> = items.iter().map(|t| self.weight(class(t))).collect();
        let total: f64 = weights.iter().sum();
        if items.is_empty() || total <= 0.0 {
            return None;
        }
        let mut pick = rng.random_range(0.0..total);
        for (item, w) in items.iter().zip(&weights) {
            if pick < *w {
                return Some(item);
            }
            pick -= w;
        }
        items.last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oracle::layers::registry;

    fn draws(balance: &ClassBalance, n: usize) -> HashMap<&'static str, usize> {
        let classes: Vec<&'static dyn LayerKind> = registry()
            .filter(|k| ["Dense", "GRU", "Reshape"].contains(&k.class_name()))
            .collect();
        let mut rng = crate::rng(11);
        let mut got = HashMap::new();
        for _ in 0..n {
            let k = balance.choose(&classes, &mut rng).expect("three classes");
            *got.entry(k.class_name()).or_default() += 1;
        }
        got
    }

    #[test]
    fn a_fresh_balance_draws_uniformly() {
        let got = draws(&ClassBalance::default(), 3000);
        for class in ["Dense", "GRU", "Reshape"] {
            assert!((850..=1150).contains(&got[class]), "{got:?}");
        }
    }

    #[test]
    fn classes_seen_least_are_drawn_most() {
        let mut balance = ClassBalance::default();
        balance.counts.insert("Reshape".into(), 99);
        balance.counts.insert("Dense".into(), 9);
        let got = draws(&balance, 3000);
        // Weights 1, 1/10, 1/100: GRU about 90% of draws, Reshape under 1%.
        assert!(got["GRU"] > 2500, "{got:?}");
        assert!(got.get("Reshape").copied().unwrap_or(0) < 30, "{got:?}");
        assert!(
            got["Dense"] > got.get("Reshape").copied().unwrap_or(0),
            "{got:?}"
        );
    }

    #[test]
    fn a_model_counts_once_per_class() {
        let node = |from: &str| {
            serde_json::json!([{"args": [{"class_name": "__keras_tensor__",
                "config": {"keras_history": [from, 0, 0]}}], "kwargs": {}}])
        };
        let text = serde_json::json!({
            "format": "semfuzz-case/1", "dtype": "float32",
            "model": {"name": "m", "layers": [
                {"class_name": "InputLayer", "name": "x",
                 "config": {"batch_shape": [null, 3], "name": "x"}, "inbound_nodes": []},
                {"class_name": "Dense", "name": "a", "config": {"name": "a", "units": 3},
                 "inbound_nodes": node("x")},
                {"class_name": "Dense", "name": "b", "config": {"name": "b", "units": 3},
                 "inbound_nodes": node("a")}],
              "input_layers": [["x", 0, 0]], "output_layers": [["b", 0, 0]]},
            "weights": {}, "inputs": []
        });
        let case = Case::from_json_str(&text.to_string(), "m.case.json").unwrap();
        let mut balance = ClassBalance::default();
        balance.record(&case);
        balance.record(&case);
        assert_eq!(balance.count("Dense"), 2);
        assert_eq!(balance.count("InputLayer"), 0);
    }
}
