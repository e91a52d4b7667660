//! Users' own Keras models as cases (model only, no weights or inputs): a `.keras` file (its
//! `config.json`, read from the zip without Python) or the JSON of `model.to_json()`.

use std::io::Read;
use std::path::Path;

use serde_json::{Value, json};

use super::error::{CaseErrorKind, Place};
use super::{Case, CaseError};

/// Reads a `.keras` file or a Keras model JSON as a case without weights or inputs. The
/// compute dtype is the first layer dtype policy found (float32 when none is).
pub fn read_keras_model(path: &Path) -> Result<Case, CaseError> {
    let err = |kind: CaseErrorKind| Place::root().err(kind).in_file(path);
    let text = if path.extension().is_some_and(|e| e == "keras") {
        let file = std::fs::File::open(path).map_err(|e| err(e.into()))?;
        let mut zip = zip::ZipArchive::new(file)
            .map_err(|e| err(CaseErrorKind::Value(format!("not a .keras archive: {e}"))))?;
        let mut entry = zip.by_name("config.json").map_err(|_| {
            err(CaseErrorKind::Missing(
                "config.json (inside the .keras archive)".to_owned(),
            ))
        })?;
        let mut s = String::new();
        entry.read_to_string(&mut s).map_err(|e| err(e.into()))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| err(e.into()))?
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        err(CaseErrorKind::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    })?;
    let model = value
        .get("config")
        .filter(|c| c.get("layers").is_some())
        .ok_or_else(|| {
            err(CaseErrorKind::Missing(
                "config.layers (a Keras model's config)".to_owned(),
            ))
        })?;
    let dtype = first_policy(model).unwrap_or_else(|| "float32".to_owned());
    let case = json!({"format": super::FORMAT, "dtype": dtype, "model": model});
    Case::from_json_str(&case.to_string(), path)
}

/// The name of the first `DTypePolicy` in a config (float types only).
fn first_policy(v: &Value) -> Option<String> {
    match v {
        Value::Object(o) => {
            if o.get("class_name").and_then(Value::as_str) == Some("DTypePolicy") {
                let name = o.get("config")?.get("name")?.as_str()?;
                if name.starts_with("float") || name == "bfloat16" {
                    return Some(name.to_owned());
                }
            }
            o.values().find_map(first_policy)
        }
        Value::Array(a) => a.iter().find_map(first_policy),
        _ => None,
    }
}
