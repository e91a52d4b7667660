//! Layers inside nested models (a Functional or Sequential model used as a layer), addressed
//! by their path of names, `backbone/conv`: how the numeric-hazard report names them, and
//! unambiguous since Keras refuses `/` in layer names. A violation inside a nested model
//! names the inner layer alone (as Keras's own messages do), so it is located by searching
//! the nested models.

use crate::case::{Layer, Model, ModelKind};

use super::edit::EditError;

/// A layer of a model or of one of its nested models: its index at each level, outermost
/// first (`[2]` is the top-level layer 2, `[1, 3]` the layer 3 of the model that is layer 1).
pub type LayerPath = Vec<usize>;

/// The model that holds the layers of `scope` (the top-level model for an empty scope).
pub fn scope_model<'a>(model: &'a Model, scope: &[usize]) -> Option<&'a Model> {
    scope
        .iter()
        .try_fold(model, |m, &i| m.layers.get(i)?.nested.as_deref())
}

pub fn layer_at<'a>(model: &'a Model, path: &[usize]) -> Option<&'a Layer> {
    let (&last, scope) = path.split_last()?;
    scope_model(model, scope)?.layers.get(last)
}

pub fn layer_at_mut<'a>(model: &'a mut Model, path: &[usize]) -> Option<&'a mut Layer> {
    let (&last, scope) = path.split_last()?;
    let mut m = model;
    for &i in scope {
        m = m.layers.get_mut(i)?.nested.as_deref_mut()?;
    }
    m.layers.get_mut(last)
}

/// `backbone/conv`: the names along a path.
pub fn display(model: &Model, path: &[usize]) -> String {
    let mut names = Vec::new();
    let mut m = Some(model);
    for &i in path {
        let Some(layer) = m.and_then(|m| m.layers.get(i)) else {
            break;
        };
        names.push(layer.name.as_str());
        m = layer.nested.as_deref();
    }
    names.join("/")
}

/// The layer a user names: a path of names (`backbone/conv`), or a bare name that is a
/// top-level layer or, failing that, names exactly one layer inside the nested models.
pub fn resolve(model: &Model, text: &str) -> Result<LayerPath, EditError> {
    let no_layer = || EditError::NoLayer(text.to_owned());
    if !text.contains('/') {
        if let Some(i) = model.layers.iter().position(|l| l.name == text) {
            return Ok(vec![i]);
        }
        let found = find_all(model, &|l| l.name == text);
        return match found.len() {
            0 => Err(no_layer()),
            1 => Ok(found.into_iter().next().expect("one")),
            _ => Err(EditError::Ambiguous {
                name: text.to_owned(),
                paths: found.iter().map(|p| display(model, p)).collect(),
            }),
        };
    }
    let mut path = Vec::new();
    let mut m = model;
    let names: Vec<&str> = text.split('/').collect();
    for (depth, name) in names.iter().enumerate() {
        let i = m
            .layers
            .iter()
            .position(|l| l.name == *name)
            .ok_or_else(no_layer)?;
        path.push(i);
        if depth + 1 < names.len() {
            let layer = &m.layers[i];
            m = layer
                .nested
                .as_deref()
                .ok_or_else(|| EditError::NotNested {
                    layer: display(model, &path),
                    class: layer.class_name.clone(),
                })?;
        }
    }
    Ok(path)
}

/// Where the layer a violation names is: a top-level layer of that name, else the first
/// layer of that name and class in the nested models, outermost first.
pub fn locate(model: &Model, name: &str, class: &str) -> Option<LayerPath> {
    if let Some(i) = model.layers.iter().position(|l| l.name == name) {
        return Some(vec![i]);
    }
    find_all(model, &|l| {
        l.name == name && (class.is_empty() || l.class_name == class)
    })
    .into_iter()
    .next()
}

/// Every layer inside the nested models that `matches`, outermost first.
fn find_all(model: &Model, matches: &dyn Fn(&Layer) -> bool) -> Vec<LayerPath> {
    let mut out = Vec::new();
    let mut scopes: Vec<LayerPath> = nested_layers(model, &[]);
    while !scopes.is_empty() {
        let mut deeper = Vec::new();
        for scope in scopes {
            let Some(inner) = scope_model(model, &scope) else {
                continue;
            };
            for (i, l) in inner.layers.iter().enumerate() {
                if matches(l) {
                    out.push([scope.as_slice(), &[i]].concat());
                }
            }
            deeper.extend(nested_layers(model, &scope));
        }
        scopes = deeper;
    }
    out
}

/// The nested models among the layers of `scope`.
fn nested_layers(model: &Model, scope: &[usize]) -> Vec<LayerPath> {
    scope_model(model, scope)
        .map(|m| {
            m.layers
                .iter()
                .enumerate()
                .filter(|(_, l)| l.nested.is_some())
                .map(|(i, _)| [scope, &[i]].concat())
                .collect()
        })
        .unwrap_or_default()
}

/// The layers whose outputs a model returns (for a sequential model, its last layer).
pub fn output_layers(model: &Model) -> Vec<usize> {
    match &model.kind {
        ModelKind::Sequential => model.layers.len().checked_sub(1).into_iter().collect(),
        ModelKind::Functional { outputs, .. } => outputs
            .refs()
            .into_iter()
            .filter_map(|r| model.layers.iter().position(|l| l.name == r.layer))
            .collect(),
    }
}

/// The layers whose outputs the layer at `path` consumes, in its own model; for the first
/// layer of a nested model (its inputs), the producers of the nested model's call.
pub fn producers(model: &Model, path: &[usize]) -> Vec<LayerPath> {
    let Some((&i, scope)) = path.split_last() else {
        return Vec::new();
    };
    let Some(m) = scope_model(model, scope) else {
        return Vec::new();
    };
    let outer = || {
        if scope.is_empty() {
            Vec::new()
        } else {
            producers(model, scope)
        }
    };
    let Some(layer) = m.layers.get(i) else {
        return Vec::new();
    };
    if layer.is_input() {
        return outer();
    }
    match m.kind {
        ModelKind::Sequential if i == 0 => outer(),
        ModelKind::Sequential => vec![[scope, &[i - 1]].concat()],
        ModelKind::Functional { .. } => {
            let mut out: Vec<LayerPath> = Vec::new();
            for r in layer.nodes.iter().flat_map(|n| n.tensors()) {
                if let Some(j) = m.layers.iter().position(|l| l.name == r.layer) {
                    let p = [scope, &[j]].concat();
                    if !out.contains(&p) {
                        out.push(p);
                    }
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Case;

    /// A backbone (Functional) and a head (Sequential) used as layers, as Keras writes them.
    fn nested() -> Case {
        let text = r#"{"format": "semfuzz-case/1", "dtype": "float32", "model": {
          "name": "outer", "input_layers": [["image", 0, 0]], "output_layers": [["head", 0, 0]],
          "layers": [
            {"class_name": "InputLayer", "name": "image", "config": {"name": "image", "batch_shape": [null, 4]}, "inbound_nodes": []},
            {"class_name": "Functional", "name": "backbone", "config": {"name": "backbone",
               "input_layers": [["inner_in", 0, 0]], "output_layers": [["conv", 0, 0]],
               "layers": [
                 {"class_name": "InputLayer", "name": "inner_in", "config": {"name": "inner_in", "batch_shape": [null, 4]}, "inbound_nodes": []},
                 {"class_name": "Dense", "name": "conv", "config": {"name": "conv", "units": 3},
                  "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["inner_in", 0, 0]}}], "kwargs": {}}]}]},
             "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["image", 0, 0]}}], "kwargs": {}}]},
            {"class_name": "Sequential", "name": "head", "config": {"name": "head", "layers": [
                 {"class_name": "Dense", "config": {"name": "conv", "units": 2}},
                 {"class_name": "Dense", "config": {"name": "last", "units": 2}}]},
             "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["backbone", 0, 0]}}], "kwargs": {}}]}
          ]}}"#;
        Case::from_json_str(text, std::path::Path::new("nested.case.json")).unwrap()
    }

    #[test]
    fn paths_resolve_by_names_and_bare_names_only_when_unique() {
        let case = nested();
        let m = &case.model;
        assert_eq!(resolve(m, "backbone/conv").unwrap(), [1, 1]);
        assert_eq!(resolve(m, "head/last").unwrap(), [2, 1]);
        assert_eq!(resolve(m, "last").unwrap(), [2, 1]);
        assert!(matches!(
            resolve(m, "conv"),
            Err(EditError::Ambiguous { .. })
        ));
        assert!(matches!(
            resolve(m, "image/x"),
            Err(EditError::NotNested { .. })
        ));
        assert!(matches!(
            resolve(m, "backbone/nope"),
            Err(EditError::NoLayer(_))
        ));
        assert_eq!(display(m, &[2, 1]), "head/last");
        assert_eq!(locate(m, "conv", "Dense"), Some(vec![1, 1]));
    }

    #[test]
    fn producers_cross_into_and_out_of_nested_models() {
        let case = nested();
        let m = &case.model;
        // The head's first layer takes the head's input: the backbone's output.
        assert_eq!(producers(m, &[2, 0]), [vec![1]]);
        assert_eq!(producers(m, &[2, 1]), [vec![2, 0]]);
        // The backbone's input layer stands for the image.
        assert_eq!(producers(m, &[1, 0]), [vec![0]]);
        assert_eq!(output_layers(scope_model(m, &[1]).unwrap()), [1]);
    }
}
