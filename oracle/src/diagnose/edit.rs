//! What-if edits: the model under a changed argument or input shape, so that the checker
//! can answer "would it be valid if ...?" (and so that fixes are confirmed, not guessed).

use serde_json::Value;

use crate::case::{Case, Dims};
use crate::layers::lookup;

use super::paths::{layer_at_mut, resolve};

/// Why an edit could not be applied: it names something the model does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("no layer named '{0}' in the model")]
    NoLayer(String),
    #[error("layer '{layer}' is a {class}, not a nested model with layers inside it")]
    NotNested { layer: String, class: String },
    #[error("'{name}' names several layers inside nested models ({}): give its path", paths.join(", "))]
    Ambiguous { name: String, paths: Vec<String> },
    #[error("layer '{layer}' is a {class}, not an input layer")]
    NotInput { layer: String, class: String },
    #[error("layer '{layer}' ({class}) has no argument '{argument}'")]
    NoArgument {
        layer: String,
        class: String,
        argument: String,
    },
}

/// Declares a new shape (batch axis included) for the input layer `name`. The case's input
/// arrays, if any, no longer fit and are dropped: the model is checked on its declared shapes.
pub fn set_input_shape(case: &mut Case, name: &str, dims: &Dims) -> Result<(), EditError> {
    let layer = case
        .model
        .layers
        .iter_mut()
        .find(|l| l.name == name)
        .ok_or_else(|| EditError::NoLayer(name.to_owned()))?;
    if !layer.is_input() {
        return Err(EditError::NotInput {
            layer: layer.name.clone(),
            class: layer.class_name.clone(),
        });
    }
    layer.config.remove("shape");
    layer
        .config
        .insert("batch_shape".to_owned(), serde_json::json!(dims));
    case.inputs.clear();
    Ok(())
}

/// Sets one argument of one layer's config. The layer is a top-level layer's name or the
/// path of a layer inside nested models (`backbone/conv`, see [`resolve`]). The argument
/// must be one the config already holds or one the class declares, so a typo is an error
/// rather than a silently ignored key.
pub fn set_argument(
    case: &mut Case,
    name: &str,
    argument: &str,
    value: Value,
) -> Result<(), EditError> {
    let path = resolve(&case.model, name)?;
    let layer =
        layer_at_mut(&mut case.model, &path).ok_or_else(|| EditError::NoLayer(name.to_owned()))?;
    let declared = lookup(&layer.class_name, layer.module.as_deref())
        .is_some_and(|k| k.params().iter().any(|p| p.name() == argument));
    if !declared && !layer.config.contains_key(argument) {
        return Err(EditError::NoArgument {
            layer: name.to_owned(),
            class: layer.class_name.clone(),
            argument: argument.to_owned(),
        });
    }
    layer.config.insert(argument.to_owned(), value);
    Ok(())
}
