//! Refusing what would execute code: `Lambda` layers, custom classes and serialized
//! functions. Keras's own objects come from modules under `keras`.

use serde_json::Value;

use super::error::{CaseErrorKind, Place, Placed};

const CODE_CLASSES: [&str; 3] = ["Lambda", "__lambda__", "function"];

/// Refuses a layer entry whose class would run code from the file or from outside Keras.
pub(crate) fn refuse_code(
    class_name: &str,
    module: Option<&str>,
    registered_name: &Value,
    place: &Place,
) -> Placed<()> {
    if CODE_CLASSES.contains(&class_name) {
        return Err(place.err(CaseErrorKind::Refused(format!(
            "`{class_name}` layers carry Python code"
        ))));
    }
    if let Some(m) = module
        && !is_keras_module(m)
    {
        return Err(place.err(CaseErrorKind::Refused(format!(
            "class `{class_name}` comes from module `{m}`, not from Keras"
        ))));
    }
    if let Some(r) = registered_name.as_str()
        && r.contains('>')
    {
        return Err(place.err(CaseErrorKind::Refused(format!(
            "`{r}` is a custom registered object"
        ))));
    }
    Ok(())
}

/// Walks a layer config for serialized objects (initializers, activations, nested models)
/// and refuses any that is not Keras's own.
pub(crate) fn scan_config(v: &Value, place: &Place) -> Placed<()> {
    match v {
        Value::Object(o) => {
            if let Some(class) = o.get("class_name").and_then(Value::as_str) {
                let module = o.get("module").and_then(Value::as_str);
                let registered = o.get("registered_name").unwrap_or(&Value::Null);
                refuse_code(class, module, registered, place)?;
            }
            for (k, x) in o {
                scan_config(x, &place.field(k))?;
            }
            Ok(())
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| scan_config(x, &place.index(i))),
        _ => Ok(()),
    }
}

fn is_keras_module(m: &str) -> bool {
    m == "keras" || m.starts_with("keras.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scan(v: Value) -> Result<(), String> {
        scan_config(&v, &Place::root().field("config"))
            .map_err(|e| format!("{}: {}", e.place, e.kind))
    }

    #[test]
    fn keras_objects_pass() {
        scan(json!({"kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {}, "registered_name": null},
                    "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}}}))
        .unwrap();
    }

    #[test]
    fn serialized_functions_and_custom_classes_are_refused() {
        let e = scan(
            json!({"activation": {"module": "builtins", "class_name": "function", "config": "f"}}),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "config.activation: refused: `function` layers carry Python code; semfuzz never loads anything that would execute code"
        );
        let e = scan(json!({"a": [{"module": "mypkg.layers", "class_name": "Foo", "config": {}}]}))
            .unwrap_err();
        assert!(
            e.starts_with("config.a[0]: refused: class `Foo` comes from module `mypkg.layers`"),
            "{e}"
        );
        let e =
            scan(json!({"x": {"class_name": "Foo", "registered_name": "Custom>Foo"}})).unwrap_err();
        assert!(e.contains("custom registered object"), "{e}");
    }
}
