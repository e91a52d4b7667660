//! Operation nodes: what Keras records for arithmetic on tensors in a functional model
//! (`x + 3.0`, `x * y`, `keras.ops.*`), module `keras.src.ops.*`.

pub mod arithmetic;
