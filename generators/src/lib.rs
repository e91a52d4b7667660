//! Generation, mutation, repair and minimisation of cases: plain functions over
//! [`oracle::Case`], free of fuzzing-engine types. Built on the reference oracle's layer
//! semantics, which this crate's functions consult for validity and badness.
