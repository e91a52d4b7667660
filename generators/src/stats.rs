//! What a batch of generated models looks like: class histogram, sizes, graph features and
//! repair statistics (for `semfuzz gen`'s summary and the generation benchmark).

use std::collections::BTreeMap;

use oracle::Case;
use serde_json::{Value, json};

use crate::edit::{self, call_inputs};
use crate::repair::RepairStats;

/// The shape of one model's graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphFeatures {
    pub layers: usize,
    pub inputs: usize,
    pub outputs: usize,
    /// Some tensor feeds more than one call.
    pub fan_out: bool,
    /// Some call takes more than one tensor.
    pub merge: bool,
}

impl GraphFeatures {
    pub fn of(case: &Case) -> Self {
        let mut consumers = std::collections::HashMap::new();
        let mut merge = false;
        for l in &case.model.layers {
            let ins = call_inputs(l);
            merge |= ins.len() > 1;
            for r in ins {
                *consumers.entry(r).or_insert(0usize) += 1;
            }
        }
        GraphFeatures {
            layers: case.model.layers.iter().filter(|l| !l.is_input()).count(),
            inputs: case.model.input_count(),
            outputs: edit::outputs(case).len(),
            fan_out: consumers.values().any(|&n| n > 1),
            merge,
        }
    }
}

/// Totals over many generated models.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub models: usize,
    pub valid: usize,
    pub needed_repair: usize,
    pub repair_tries: usize,
    pub repair_kept: usize,
    /// Layers steered away from a kept framework bug's trigger.
    pub known_bugs_avoided: usize,
    /// Models with such a layer.
    pub known_bug_models: usize,
    pub layers: usize,
    pub multi_input: usize,
    pub multi_output: usize,
    pub fan_out: usize,
    pub merge: usize,
    /// Layers per class.
    pub classes: BTreeMap<String, usize>,
    /// Models per class (a class counted once per model it appears in).
    pub models_with: BTreeMap<String, usize>,
}

impl Summary {
    pub fn add(&mut self, case: &Case, repair: &RepairStats) {
        let f = GraphFeatures::of(case);
        self.models += 1;
        self.valid += repair.valid as usize;
        self.needed_repair += (repair.tries > 0) as usize;
        self.repair_tries += repair.tries;
        self.repair_kept += repair.kept;
        self.known_bugs_avoided += repair.known_bugs_avoided;
        self.known_bug_models += (repair.known_bugs_avoided > 0) as usize;
        self.layers += f.layers;
        self.multi_input += (f.inputs > 1) as usize;
        self.multi_output += (f.outputs > 1) as usize;
        self.fan_out += f.fan_out as usize;
        self.merge += f.merge as usize;
        let mut seen = std::collections::BTreeSet::new();
        for l in case.model.layers.iter().filter(|l| !l.is_input()) {
            let key = match oracle::layers::Family::of_module(l.module.as_deref()) {
                oracle::layers::Family::Op => format!("{} (op)", l.class_name),
                oracle::layers::Family::Layer => l.class_name.clone(),
            };
            *self.classes.entry(key.clone()).or_default() += 1;
            seen.insert(key);
        }
        for c in seen {
            *self.models_with.entry(c).or_default() += 1;
        }
    }

    fn share(&self, n: usize) -> f64 {
        if self.models == 0 {
            0.0
        } else {
            n as f64 / self.models as f64
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "models": self.models,
            "valid": self.valid,
            "valid_share": self.share(self.valid),
            "needed_repair_share": self.share(self.needed_repair),
            "repair_tries_per_model": self.share(self.repair_tries),
            "repair_changes_kept_per_model": self.share(self.repair_kept),
            "known_bug_triggers_avoided": self.known_bugs_avoided,
            "models_with_known_bug_trigger_avoided": self.known_bug_models,
            "layers_per_model": self.share(self.layers),
            "multi_input_share": self.share(self.multi_input),
            "multi_output_share": self.share(self.multi_output),
            "fan_out_share": self.share(self.fan_out),
            "merge_share": self.share(self.merge),
            "distinct_classes": self.classes.len(),
            "layers_per_class": self.classes,
        })
    }

    /// A few lines for people: the totals, then the histogram, rarest classes first.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{} models, {} valid ({:.2}%); {:.1} layers each; repair needed by {:.1}% ({:.1} tries per model)\n\
             multi-input {:.1}%, multi-output {:.1}%, fan-out {:.1}%, merges {:.1}%; {} distinct classes\n\
             kept framework bugs' triggers avoided: {} layer(s) in {} model(s)\n",
            self.models,
            self.valid,
            100.0 * self.share(self.valid),
            self.share(self.layers),
            100.0 * self.share(self.needed_repair),
            self.share(self.repair_tries),
            100.0 * self.share(self.multi_input),
            100.0 * self.share(self.multi_output),
            100.0 * self.share(self.fan_out),
            100.0 * self.share(self.merge),
            self.classes.len(),
            self.known_bugs_avoided,
            self.known_bug_models,
        );
        let mut by_count: Vec<(&String, &usize)> = self.classes.iter().collect();
        by_count.sort_by_key(|(c, n)| (**n, (*c).clone()));
        let line: Vec<String> = by_count.iter().map(|(c, n)| format!("{c} {n}")).collect();
        s.push_str(&format!("layers per class: {}\n", line.join(", ")));
        s
    }
}
