//! Operation nodes: what Keras records for arithmetic on tensors in a functional model
//! (`x + 3.0`, `x * y`, `keras.ops.*`), module `keras.src.ops.*`.

pub mod arithmetic;
pub mod array;
pub mod logic;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &arithmetic::OpAdd,
    &arithmetic::OpSubtract,
    &arithmetic::OpMultiply,
    &arithmetic::OpTrueDivide,
    &arithmetic::OpNotEqual,
    &arithmetic::OpLogicalOr,
    &arithmetic::OpLogicalAnd,
    &logic::OpAny,
    &array::OpExpandDims,
    &array::OpZerosLike,
    &array::OpOnesLike,
    &array::OpConcatenate,
];
