//! Element types, named as Keras and NumPy name them.

use std::fmt;
use std::str::FromStr;

/// The element type of a tensor or the compute dtype of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    Float16,
    BFloat16,
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Bool,
}

impl DType {
    pub const ALL: [DType; 13] = [
        DType::Float16,
        DType::BFloat16,
        DType::Float32,
        DType::Float64,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::UInt8,
        DType::UInt16,
        DType::UInt32,
        DType::UInt64,
        DType::Bool,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DType::Float16 => "float16",
            DType::BFloat16 => "bfloat16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::UInt8 => "uint8",
            DType::UInt16 => "uint16",
            DType::UInt32 => "uint32",
            DType::UInt64 => "uint64",
            DType::Bool => "bool",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64
        )
    }

    /// The inclusive range of an integer type, as f64 (exact for every type up to 2^53;
    /// the 64-bit bounds are rounded, which only matters beyond 2^53).
    pub fn int_range(self) -> Option<(f64, f64)> {
        let r = match self {
            DType::Int8 => (i8::MIN as f64, i8::MAX as f64),
            DType::Int16 => (i16::MIN as f64, i16::MAX as f64),
            DType::Int32 => (i32::MIN as f64, i32::MAX as f64),
            DType::Int64 => (i64::MIN as f64, i64::MAX as f64),
            DType::UInt8 => (0.0, u8::MAX as f64),
            DType::UInt16 => (0.0, u16::MAX as f64),
            DType::UInt32 => (0.0, u32::MAX as f64),
            DType::UInt64 => (0.0, u64::MAX as f64),
            DType::Bool => (0.0, 1.0),
            _ => return None,
        };
        Some(r)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The name was not a dtype semfuzz knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown dtype `{0}` (expected one of float16, bfloat16, float32, float64, int8..int64, uint8..uint64, bool)"
)]
pub struct UnknownDType(pub String);

impl FromStr for DType {
    type Err = UnknownDType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DType::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDType(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>(), Ok(d));
        }
        assert_eq!(
            "float".parse::<DType>(),
            Err(UnknownDType("float".to_owned()))
        );
    }

    #[test]
    fn integer_ranges() {
        assert_eq!(DType::UInt8.int_range(), Some((0.0, 255.0)));
        assert_eq!(DType::Int8.int_range(), Some((-128.0, 127.0)));
        assert_eq!(DType::Float32.int_range(), None);
        assert!(DType::BFloat16.is_float() && !DType::Int32.is_float());
    }
}
