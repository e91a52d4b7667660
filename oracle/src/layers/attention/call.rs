//! How an attention layer is called: its tensors (a list for `Attention`, positional or
//! keyword tensors for the multi-head layers) and the keyword arguments Keras records in the
//! node (`use_causal_mask`, `return_attention_scores`, `training`, masks left at `None`).

use serde_json::Value;

use crate::case::{Arg, Node};
use crate::params::ParamResult;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// The call's flags, as recorded in its node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallArgs {
    pub use_causal_mask: bool,
    pub return_attention_scores: bool,
}

/// A keyword or positional argument that must be a boolean (`None` reads as false, as
/// Python's truth test does); other values are not modelled.
fn flag(name: &str, arg: &Arg) -> ParamResult<bool> {
    match arg {
        Arg::Literal(Value::Bool(b)) => Ok(*b),
        Arg::Literal(Value::Null) => Ok(false),
        _ => Err(Unsupported::new(name, "a call argument that is not a boolean").into()),
    }
}

/// An argument that takes a mask tensor: only `None` is modelled (a tensor keyword argument
/// is refused by the graph checker before this).
fn no_tensor(name: &str, arg: &Arg) -> ParamResult<()> {
    match arg {
        Arg::Literal(Value::Null) => Ok(()),
        _ => Err(Unsupported::new(name, "an explicit mask argument").into()),
    }
}

/// Reads one recorded argument by name into `out`.
fn read(name: &str, arg: &Arg, masks: &[&str], out: &mut CallArgs) -> ParamResult<()> {
    match name {
        "use_causal_mask" => out.use_causal_mask = flag(name, arg)?,
        "return_attention_scores" => out.return_attention_scores = flag(name, arg)?,
        // Dropout is the identity at inference, whatever `training` says: the reference
        // computes inference.
        "training" => match arg {
            Arg::Literal(Value::Bool(false) | Value::Null) => {}
            _ => return Err(Unsupported::new(name, "a training-mode call").into()),
        },
        m if masks.contains(&m) => no_tensor(name, arg)?,
        _ => return Err(Unsupported::new(name, "a call keyword argument").into()),
    }
    Ok(())
}

fn structure(expected: &str, actual: impl std::fmt::Display, detail: &str) -> Violation {
    Violation::new(Category::Structure, Tag::KerasEnforced)
        .parameter("inputs")
        .expected(expected)
        .actual(actual)
        .detail(detail)
        .badness(badness::STRUCTURE)
}

/// `Attention` and `AdditiveAttention`: `layer([query, value(, key)], mask=None,
/// training=None, return_attention_scores=False, use_causal_mask=False)`.
///
/// A bare tensor (`layer(query)`, or `layer(query, value)`, where `value` is taken for the
/// mask) is refused by Keras ("must be called on a list of inputs"). Several bare tensors are
/// read as a list, as the merge layers read them (the generators build that form).
pub fn list_call(node: &Node) -> ParamResult<CallArgs> {
    let mut out = CallArgs::default();
    let positional = [
        "inputs",
        "mask",
        "training",
        "return_attention_scores",
        "use_causal_mask",
    ];
    match node.args.as_slice() {
        [Arg::Tensor { .. }] => {
            return Err(structure("a list of tensors", "a single tensor", "is not a list").into());
        }
        [Arg::List(_), rest @ ..] => {
            if rest.len() >= positional.len() {
                return Err(Unsupported::new("args", "too many positional arguments").into());
            }
            for (name, arg) in positional[1..].iter().zip(rest) {
                read(name, arg, &["mask"], &mut out)?;
            }
        }
        args if args.iter().all(|a| matches!(a, Arg::Tensor { .. })) => {}
        _ => return Err(Unsupported::new("args", "a call of this form").into()),
    }
    for (k, a) in &node.kwargs {
        if k == "mask" {
            list_mask(a)?;
        } else {
            read(k, a, &[], &mut out)?;
        }
    }
    Ok(out)
}

/// `mask=`: `None`, or a list of 2 or 3 entries, each a mask tensor or `None` (the graph
/// checker hands the tensors to the call as its inputs' masks). Keras refuses anything else
/// ("mask must be a list").
fn list_mask(arg: &Arg) -> ParamResult<()> {
    let entry_ok = |a: &Arg| matches!(a, Arg::Tensor { .. } | Arg::Literal(Value::Null));
    match arg {
        Arg::Literal(Value::Null) => Ok(()),
        Arg::List(items) if (2..=3).contains(&items.len()) && items.iter().all(entry_ok) => Ok(()),
        Arg::List(items) if items.iter().all(entry_ok) => {
            Err(Violation::new(Category::Structure, Tag::KerasEnforced)
                .parameter("mask")
                .expected("a list of 2 or 3 masks")
                .actual(items.len())
                .detail("is a mask list of the wrong length")
                .badness(badness::STRUCTURE)
                .into())
        }
        Arg::Tensor { .. } => Err(Violation::new(Category::Structure, Tag::KerasEnforced)
            .parameter("mask")
            .expected("a list [query_mask, value_mask]")
            .actual("a single tensor")
            .detail("is not a list")
            .badness(badness::STRUCTURE)
            .into()),
        _ => Err(Unsupported::new("mask", "a mask argument of this form").into()),
    }
}

/// The tensor arguments of the multi-head layers, in their order in `call`.
pub const HEAD_TENSORS: [&str; 3] = ["query", "value", "key"];

/// `MultiHeadAttention` and `GroupedQueryAttention`: `layer(query, value, key=None,
/// query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
/// return_attention_scores=False, training=None, use_causal_mask=False)`. The tensors may be
/// positional or named; the graph checker passes them as `[query, value(, key)]` (positional
/// ones first, then the named ones in `HEAD_TENSORS` order), so a call whose named tensors
/// do not continue the positional ones (`layer(x, key=y)`, without a value) is refused here,
/// as Python refuses it.
pub fn heads_call(node: &Node) -> ParamResult<CallArgs> {
    let mut out = CallArgs::default();
    let names = [
        "query",
        "value",
        "key",
        "query_mask",
        "value_mask",
        "key_mask",
        "attention_mask",
        "return_attention_scores",
        "training",
        "use_causal_mask",
    ];
    let masks = ["query_mask", "value_mask", "key_mask", "attention_mask"];
    if node.args.len() > names.len() {
        return Err(Unsupported::new("args", "too many positional arguments").into());
    }
    let mut filled = [false; 3];
    for (i, arg) in node.args.iter().enumerate() {
        match (i, arg) {
            (0..=2, Arg::Tensor { .. }) => filled[i] = true,
            (0..=2, Arg::Literal(Value::Null)) if i == 2 => {}
            (0..=2, _) => {
                return Err(structure(
                    "tensors `query, value(, key)`",
                    format!("argument {i} is not a tensor"),
                    "is not a call on tensors",
                )
                .into());
            }
            _ => read(names[i], arg, &masks, &mut out)?,
        }
    }
    for (k, a) in &node.kwargs {
        if let Some(slot) = HEAD_TENSORS.iter().position(|t| t == k) {
            if filled[slot] {
                return Err(structure(
                    "each tensor argument once",
                    k,
                    "is given twice (positionally and by name)",
                )
                .into());
            }
            match a {
                Arg::Tensor { .. } => filled[slot] = true,
                Arg::Literal(Value::Null) if slot == 2 => {}
                _ => return Err(Unsupported::new(k.clone(), "a non-tensor argument").into()),
            }
        } else {
            read(k, a, &masks, &mut out)?;
        }
    }
    // The checker's order is right only when the filled slots are a prefix.
    if !filled[0] || !filled[1] {
        return Err(structure(
            "`query` and `value` tensors",
            if filled[0] { "no value" } else { "no query" },
            "lacks a required tensor argument",
        )
        .into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::TensorRef;
    use crate::params::ParamError;
    use serde_json::json;

    fn t(name: &str) -> Arg {
        Arg::Tensor {
            source: TensorRef::new(name, 0, 0),
            dtype: None,
        }
    }

    #[test]
    fn list_calls_read_their_flags() {
        let node = Node {
            args: vec![Arg::List(vec![t("q"), t("v")])],
            kwargs: vec![
                ("use_causal_mask".into(), Arg::Literal(json!(true))),
                ("mask".into(), Arg::Literal(json!(null))),
                ("training".into(), Arg::Literal(json!(false))),
            ],
        };
        let a = list_call(&node).unwrap();
        assert!(a.use_causal_mask && !a.return_attention_scores);
        let bare = Node {
            args: vec![t("q")],
            kwargs: vec![],
        };
        let Err(ParamError::Invalid(v)) = list_call(&bare) else {
            panic!()
        };
        assert_eq!(v.category, Category::Structure);
    }

    #[test]
    fn head_calls_take_positional_or_named_tensors() {
        let node = Node {
            args: vec![t("q")],
            kwargs: vec![
                ("value".into(), t("v")),
                ("return_attention_scores".into(), Arg::Literal(json!(true))),
            ],
        };
        assert!(heads_call(&node).unwrap().return_attention_scores);
        // A key without a value, and a tensor given twice.
        for kwargs in [vec![("key".into(), t("k"))], vec![("query".into(), t("k"))]] {
            let node = Node {
                args: vec![t("q")],
                kwargs,
            };
            assert!(matches!(heads_call(&node), Err(ParamError::Invalid(_))));
        }
        let masked = Node {
            args: vec![t("q"), t("v")],
            kwargs: vec![("attention_mask".into(), Arg::Literal(json!([[true]])))],
        };
        assert!(matches!(
            heads_call(&masked),
            Err(ParamError::Unsupported(_))
        ));
    }
}
