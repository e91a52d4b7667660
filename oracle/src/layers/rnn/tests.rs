//! Tests of the family as a whole: example configs, parsing of calls, masks replayed from
//! direct Keras calls (`oracle/tests/golden/rnn/direct/calls.json`, written by
//! `scripts/goldens/rnn.py`).

use serde_json::Value;

use super::KINDS;
use crate::DType;
use crate::case::Node;
use crate::layers::{CallSite, ParamDef};

/// Every nested config the family offers generators is one its own parser accepts.
#[test]
fn example_configs_parse() {
    for kind in KINDS {
        for def in kind.params() {
            let ParamDef::Config { name, options } = *def else {
                continue;
            };
            for o in options {
                let v: Value = serde_json::from_str(o).expect("JSON");
                let mut config = serde_json::Map::new();
                config.insert(name.to_owned(), v);
                let parsed = kind.parse(&CallSite {
                    config: &config,
                    node: &Node::default(),
                    dtype: DType::Float64,
                });
                assert!(parsed.is_ok(), "{}: {o}: {parsed:?}", kind.class_name());
            }
        }
    }
}
