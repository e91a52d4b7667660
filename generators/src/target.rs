//! The target's classes and arguments, when it is another Keras release than the one the
//! reference models: generation and mutation then draw only the layer classes and the
//! arguments the target has (set once per process, before anything is generated).

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use oracle::layers::{Family, LayerKind};

/// What the target offers, as generation needs it.
#[derive(Debug, Default)]
pub struct TargetFilter {
    /// The layer classes it has.
    pub classes: HashSet<String>,
    /// Per class, the reference's arguments it lacks.
    pub lacking: HashMap<String, HashSet<String>>,
    /// The activation functions it has (by identifier).
    pub activations: HashSet<String>,
}

static FILTER: OnceLock<TargetFilter> = OnceLock::new();

/// Which config keys of a layer (in a model of a dtype) make the target refuse it by a kept
/// bug of its own, if any.
pub type Refusals =
    dyn Fn(&oracle::case::Layer, oracle::DType) -> Option<Vec<String>> + Send + Sync;

static REFUSALS: OnceLock<Box<Refusals>> = OnceLock::new();

/// Steers this process's repairs away from the layers `refusals` names (the target's kept
/// refusals decided by a layer's config), as from a kept bug's trigger; false when set already.
pub fn avoid_refusals(refusals: Box<Refusals>) -> bool {
    REFUSALS.set(refusals).is_ok()
}

/// The config keys by which the target refuses `layer` (by a kept bug), if it does.
pub fn refused_keys(layer: &oracle::case::Layer, dtype: oracle::DType) -> Option<Vec<String>> {
    REFUSALS.get().and_then(|r| r(layer, dtype))
}

/// Restricts this process's generation to `filter`; false when a filter was set already.
pub fn restrict(filter: TargetFilter) -> bool {
    FILTER.set(filter).is_ok()
}

/// Whether the target has this class (operation nodes are not layer classes: always).
pub fn offers(kind: &dyn LayerKind) -> bool {
    kind.family() != Family::Layer
        || FILTER
            .get()
            .is_none_or(|f| f.classes.contains(kind.class_name()))
}

/// Whether the target's class takes this argument.
pub fn offers_param(kind: &dyn LayerKind, param: &str) -> bool {
    FILTER.get().is_none_or(|f| {
        !f.lacking
            .get(kind.class_name())
            .is_some_and(|l| l.contains(param))
    })
}

/// Whether the target has this activation function.
pub fn offers_activation(name: &str) -> bool {
    FILTER.get().is_none_or(|f| f.activations.contains(name))
}
