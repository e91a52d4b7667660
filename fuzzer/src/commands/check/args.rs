//! The what-if arguments of `check`, parsed at the boundary into typed values:
//! `--input-shape NAME=DIMS`, `--input-range LO,HI` and `--set LAYER.ARG=VALUE`.

use oracle::case::Dims;
use serde_json::Value;

/// `--input-shape NAME=DIMS`: an input layer's shape, batch axis included.
#[derive(Debug, Clone, PartialEq)]
pub struct InputShape {
    pub input: String,
    pub dims: Dims,
}

/// `--set LAYER.ARG=VALUE`: one argument of one layer, one value or a range of integers.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub layer: String,
    pub argument: String,
    pub value: SetValue,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    One(Value),
    /// `a..b`, both ends included: each value is checked and reported.
    Range(i64, i64),
}

/// Ranges report at most this many values, and several ranges at most this many
/// combinations.
pub const MAX_RANGE: i64 = 1024;

/// `NAME=DIMS` with DIMS like `1,224,224,3` or `None,32,3`.
pub fn parse_input_shape(s: &str) -> Result<InputShape, String> {
    let (name, dims) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected NAME=DIMS, e.g. input_1=None,32,32,3"))?;
    let dims = dims
        .split(',')
        .map(|d| match d.trim() {
            "None" | "none" | "null" | "?" => Ok(None),
            n => n.parse::<usize>().map(Some).map_err(|_| {
                format!("`{s}`: dimension `{n}` is neither a non-negative integer nor None")
            }),
        })
        .collect::<Result<Dims, String>>()?;
    if name.is_empty() {
        return Err(format!("`{s}`: the input name is empty"));
    }
    Ok(InputShape {
        input: name.to_owned(),
        dims,
    })
}

/// `LO,HI` with LO ≤ HI, both finite.
pub fn parse_range(s: &str) -> Result<(f64, f64), String> {
    let (lo, hi) = s
        .split_once(',')
        .ok_or_else(|| format!("`{s}`: expected LO,HI, e.g. -1,1"))?;
    let number = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("`{s}`: `{x}` is not a finite number"))
    };
    let (lo, hi) = (number(lo)?, number(hi)?);
    if lo > hi {
        return Err(format!("`{s}`: LO is greater than HI"));
    }
    Ok((lo, hi))
}

/// `LAYER.ARG=VALUE`: VALUE is JSON (`5`, `[3,3]`, `"same"`), a bare word taken as a string
/// (`same`), or an integer range `a..b`. The layer name is everything before the last dot
/// of the left side, since layer names may hold dots.
pub fn parse_set(s: &str) -> Result<Setting, String> {
    let (target, value) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected LAYER.ARG=VALUE, e.g. conv1.kernel_size=3"))?;
    let (layer, argument) = target
        .rsplit_once('.')
        .filter(|(l, a)| !l.is_empty() && !a.is_empty())
        .ok_or_else(|| format!("`{s}`: expected LAYER.ARG before `=`"))?;
    Ok(Setting {
        layer: layer.to_owned(),
        argument: argument.to_owned(),
        value: parse_value(s, value.trim())?,
    })
}

fn parse_value(whole: &str, v: &str) -> Result<SetValue, String> {
    if let Some((a, b)) = v.split_once("..")
        && let (Ok(a), Ok(b)) = (a.trim().parse::<i64>(), b.trim().parse::<i64>())
    {
        if a > b || b - a >= MAX_RANGE {
            return Err(format!(
                "`{whole}`: the range {a}..{b} must be increasing and hold at most {MAX_RANGE} values"
            ));
        }
        return Ok(SetValue::Range(a, b));
    }
    if v.is_empty() {
        return Err(format!("`{whole}`: the value is empty"));
    }
    Ok(SetValue::One(
        serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_owned())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_take_none_and_integers() {
        let s = parse_input_shape("in=None,32,3").unwrap();
        assert_eq!(s.input, "in");
        assert_eq!(s.dims, vec![None, Some(32), Some(3)]);
        assert!(parse_input_shape("in=1,x").unwrap_err().contains("`x`"));
        assert!(parse_input_shape("1,2").is_err());
    }

    #[test]
    fn settings_take_json_words_and_ranges() {
        let s = parse_set("block.conv1.kernel_size=1..9").unwrap();
        assert_eq!(
            (s.layer.as_str(), s.argument.as_str()),
            ("block.conv1", "kernel_size")
        );
        assert_eq!(s.value, SetValue::Range(1, 9));
        assert_eq!(
            parse_set("c.padding=same").unwrap().value,
            SetValue::One(json!("same"))
        );
        assert_eq!(
            parse_set("c.kernel_size=[3,3]").unwrap().value,
            SetValue::One(json!([3, 3]))
        );
        assert!(parse_set("c.units=9..1").is_err());
        assert!(parse_set("units=3").is_err());
    }

    #[test]
    fn ranges_are_ordered_and_finite() {
        assert_eq!(parse_range("-1,1").unwrap(), (-1.0, 1.0));
        assert!(parse_range("1,-1").is_err());
        assert!(parse_range("0,inf").is_err());
    }
}
