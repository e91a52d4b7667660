//! How an attention layer is called: its tensors (a list for `Attention`, positional or
//! keyword tensors for the multi-head layers), its explicit mask tensors, and the keyword
//! arguments Keras records in the node (`use_causal_mask`, `return_attention_scores`,
//! `training`).

use ndarray::ArrayD;
use serde_json::Value;

use crate::case::{Arg, Dims, Node};
use crate::layers::Mask;
use crate::params::ParamResult;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// The call's flags and tensor arguments, as recorded in its node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallArgs {
    pub use_causal_mask: bool,
    pub return_attention_scores: bool,
    /// Which of [`HEAD_MASKS`] a multi-head call passes as tensors.
    pub masks: [bool; 4],
}

/// A multi-head call's inputs, split: its tensors `[query, value(, key)]`, and the mask
/// tensors it passes, by their place in [`HEAD_MASKS`].
pub struct HeadInputs<'a, T> {
    pub tensors: &'a [T],
    pub masks: [Option<&'a T>; 4],
}

impl CallArgs {
    /// Splits a multi-head call's inputs as the graph checker orders them: the tensors, then
    /// the mask tensors in [`HEAD_MASKS`] order (positional arguments are a prefix of the
    /// signature and keyword ones follow in the order the class declares them, so this is
    /// the signature's order whichever way they were passed).
    pub fn split<'a, T>(&self, inputs: &'a [T]) -> HeadInputs<'a, T> {
        let given = self.masks.iter().filter(|&&m| m).count().min(inputs.len());
        let (tensors, rest) = inputs.split_at(inputs.len() - given);
        let mut rest = rest.iter();
        let masks = self.masks.map(|m| if m { rest.next() } else { None });
        HeadInputs { tensors, masks }
    }
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

/// An argument that takes a mask tensor: `None` or a tensor (the graph checker passes the
/// tensor among the call's inputs); whether it is a tensor.
fn mask_tensor(name: &str, arg: &Arg) -> ParamResult<bool> {
    match arg {
        Arg::Literal(Value::Null) => Ok(false),
        Arg::Tensor { .. } => Ok(true),
        _ => Err(Unsupported::new(name, "a mask argument that is not a tensor").into()),
    }
}

/// Reads one recorded argument by name into `out`; `masks` are the mask arguments the call
/// takes as tensors.
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
        m if masks.contains(&m) => {
            if let Some(slot) = HEAD_MASKS.iter().position(|h| *h == m) {
                out.masks[slot] = mask_tensor(name, arg)?;
            } else if mask_tensor(name, arg)? {
                return Err(Unsupported::new(name, "a mask tensor in this position").into());
            }
        }
        _ => return Err(Unsupported::new(name, "a call keyword argument").into()),
    }
    Ok(())
}

/// How a multi-head layer reads its mask arguments (Keras 3.15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaskReading {
    /// `MultiHeadAttention` replaces `query_mask` by the query's Keras mask (an explicit one
    /// is ignored) and casts `attention_mask` to bool.
    MultiHead,
    /// `GroupQueryAttention` uses an explicit `query_mask`, and hands an `attention_mask`
    /// that is the only mask to its explicit path's `Softmax` uncast, which keeps the
    /// positions above 0.5 (a cast keeps the non-zero ones).
    GroupedQuery,
}

/// Where one of the masks an attention core combines comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MaskSource<E, K> {
    /// A mask argument of the call (one of its inputs).
    Explicit(E),
    /// The Keras mask of one of the call's tensors.
    Keras(K),
}

impl CallArgs {
    /// Where the masks the core combines come from, `[query, value, key, attention]`: an
    /// explicit mask argument in place of the Keras mask of its tensor (Keras fills a mask
    /// argument left at `None` with that mask), except the query's under
    /// [`MaskReading::MultiHead`]. `keras(i)` is the Keras mask of the call's tensor `i`.
    pub fn mask_sources<'a, E, K>(
        &self,
        reading: MaskReading,
        inputs: &'a [E],
        keras: impl Fn(usize) -> Option<K>,
    ) -> [Option<MaskSource<&'a E, K>>; 4] {
        let explicit = self.split(inputs).masks;
        let pick = |i: usize| {
            explicit[i]
                .map(MaskSource::Explicit)
                .or_else(|| keras(i).map(MaskSource::Keras))
        };
        let query = match reading {
            MaskReading::MultiHead => keras(0).map(MaskSource::Keras),
            MaskReading::GroupedQuery => pick(0),
        };
        [
            query,
            pick(1),
            pick(2),
            explicit[3].map(MaskSource::Explicit),
        ]
    }

    /// The shapes of the masks the core combines (see [`CallArgs::mask_sources`]; unknown
    /// sizes are 1), for inputs of these shapes whose Keras masks have these shapes.
    pub fn core_mask_shapes(
        &self,
        reading: MaskReading,
        inputs: &[Dims],
        keras: &[Option<Vec<usize>>],
    ) -> Vec<Option<Vec<usize>>> {
        let sources = self.mask_sources(reading, inputs, |i| keras.get(i).cloned().flatten());
        sources
            .into_iter()
            .map(|s| {
                s.map(|s| match s {
                    MaskSource::Explicit(d) => d.iter().map(|x| x.unwrap_or(1)).collect(),
                    MaskSource::Keras(m) => m,
                })
            })
            .collect()
    }

    /// The masks the core combines (see [`CallArgs::mask_sources`]), as booleans: a mask
    /// argument keeps its non-zero positions, or those above 0.5 where `reading` hands it
    /// uncast to a `Softmax` (an `attention_mask` that is the only mask, `others` false: no
    /// causal mask or window, on `GroupQueryAttention`'s explicit path, `fused` false).
    pub fn core_masks(
        &self,
        reading: MaskReading,
        fused: bool,
        others: bool,
        inputs: &[&ArrayD<f64>],
        keras: &[Option<&Mask>],
    ) -> Vec<Option<Mask>> {
        let sources = self.mask_sources(reading, inputs, |i| keras.get(i).copied().flatten());
        let alone = sources[..3].iter().all(Option::is_none) && !others;
        let uncast = reading == MaskReading::GroupedQuery && !fused && alone;
        sources
            .into_iter()
            .map(|s| {
                s.map(|s| match s {
                    MaskSource::Explicit(a) => a.mapv(|x| if uncast { x > 0.5 } else { x != 0.0 }),
                    MaskSource::Keras(m) => m.clone(),
                })
            })
            .collect()
    }
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

/// A positional `None` for the mask of a tensor argument: Keras's `__call__` fills the mask
/// argument of each tensor left at `None` by name, and Python refuses the argument twice
/// ("got multiple values for argument").
fn positional_none_mask(name: &str) -> Violation {
    Violation::new(Category::Structure, Tag::KerasEnforced)
        .parameter(name)
        .expected("a mask tensor, or the argument left out")
        .actual("None, positionally")
        .detail("is given positionally as None, and by name by Keras")
        .badness(badness::STRUCTURE)
}

/// The mask arguments of the multi-head layers, in their order in `call`.
pub const HEAD_MASKS: [&str; 4] = ["query_mask", "value_mask", "key_mask", "attention_mask"];

/// The arguments of the multi-head layers that take tensors, in their order in `call`.
pub const HEAD_TENSORS: [&str; 7] = [
    "query",
    "value",
    "key",
    "query_mask",
    "value_mask",
    "key_mask",
    "attention_mask",
];

/// `MultiHeadAttention` and `GroupedQueryAttention`: `layer(query, value, key=None,
/// query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
/// return_attention_scores=False, training=None, use_causal_mask=False)`. The tensors and
/// mask tensors may be positional or named; the graph checker passes them in `HEAD_TENSORS`
/// order (positional ones first, then the named ones in that order; see
/// [`CallArgs::split`]), so a call whose named tensors do not continue the positional ones
/// (`layer(x, key=y)`, without a value) is refused here, as Python refuses it.
pub fn heads_call(node: &Node) -> ParamResult<CallArgs> {
    let mut out = CallArgs::default();
    let names: Vec<&str> = HEAD_TENSORS
        .into_iter()
        .chain(["return_attention_scores", "training", "use_causal_mask"])
        .collect();
    let masks = HEAD_MASKS;
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
            (3..=5, Arg::Literal(Value::Null)) if filled[i - 3] => {
                return Err(positional_none_mask(names[i]).into());
            }
            _ => read(names[i], arg, &masks, &mut out)?,
        }
    }
    for (k, a) in &node.kwargs {
        if let Some(slot) = HEAD_TENSORS[..3].iter().position(|t| t == k) {
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

    #[test]
    fn mask_tensors_follow_the_tensors_in_signature_order() {
        // `layer(q, v, None, qm, attention_mask=a, value_mask=vm)`: the checker passes
        // [q, v, qm, vm, a].
        let node = Node {
            args: vec![t("q"), t("v"), Arg::Literal(json!(null)), t("qm")],
            kwargs: vec![
                ("attention_mask".into(), t("a")),
                ("value_mask".into(), t("vm")),
            ],
        };
        let call = heads_call(&node).unwrap();
        assert_eq!(call.masks, [true, true, false, true]);
        let inputs = ["q", "v", "qm", "vm", "a"];
        let h = call.split(&inputs);
        assert_eq!(h.tensors, &["q", "v"]);
        assert_eq!(h.masks, [Some(&"qm"), Some(&"vm"), None, Some(&"a")]);
        // MultiHeadAttention reads the query's Keras mask, not `query_mask`; an explicit
        // value mask replaces the value's Keras mask.
        let keras = |i: usize| ["kq", "kv"].get(i).copied();
        let src = call.mask_sources(MaskReading::MultiHead, &inputs, keras);
        assert_eq!(
            src,
            [
                Some(MaskSource::Keras("kq")),
                Some(MaskSource::Explicit(&"vm")),
                None,
                Some(MaskSource::Explicit(&"a")),
            ]
        );
        let src = call.mask_sources(MaskReading::GroupedQuery, &inputs, keras);
        assert_eq!(src[0], Some(MaskSource::Explicit(&"qm")));
        // A positional None where Keras fills the mask of a tensor by name.
        let twice = Node {
            args: vec![t("q"), t("v"), t("k"), t("qm"), Arg::Literal(json!(null))],
            kwargs: vec![],
        };
        let Err(ParamError::Invalid(v)) = heads_call(&twice) else {
            panic!()
        };
        assert_eq!(
            (v.category, v.parameter.as_str()),
            (Category::Structure, "value_mask")
        );
    }

    #[test]
    fn an_attention_mask_alone_is_uncast_on_the_explicit_path_of_grouped_query_attention() {
        let node = Node {
            args: vec![t("q"), t("v")],
            kwargs: vec![("attention_mask".into(), t("a"))],
        };
        let call = heads_call(&node).unwrap();
        let x = ArrayD::zeros(vec![1, 1, 1]);
        let a = ArrayD::from_shape_vec(vec![1, 1, 3], vec![-1.0, 0.3, 2.0]).unwrap();
        let kept = |reading, fused, others| {
            let m = call.core_masks(reading, fused, others, &[&x, &x, &a], &[]);
            m[3].as_ref().unwrap().iter().copied().collect::<Vec<_>>()
        };
        let cast = vec![true, true, true];
        assert_eq!(kept(MaskReading::MultiHead, false, false), cast);
        assert_eq!(kept(MaskReading::GroupedQuery, true, false), cast);
        assert_eq!(kept(MaskReading::GroupedQuery, false, true), cast);
        assert_eq!(
            kept(MaskReading::GroupedQuery, false, false),
            vec![false, false, true]
        );
    }
}
