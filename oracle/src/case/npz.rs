//! The sidecar `.npz` that keeps a large case's arrays, as NumPy's `savez` writes it.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;

use ndarray::ArrayD;
use ndarray_npy::{NpzWriter, ReadNpyExt};

use super::tensor::MAX_ELEMENTS;
use crate::DType;
use crate::bounded::{self, Kind};

/// An error of one sidecar operation, as text for [`super::CaseErrorKind::Sidecar`].
pub(crate) type NpzResult<T> = Result<T, String>;

pub(crate) struct Sidecar<R: Read + Seek> {
    zip: zip::ZipArchive<R>,
    /// Bytes inflated so far, held to [`Kind::Npz`]'s limit in all.
    inflated: u64,
}

impl Sidecar<BufReader<File>> {
    pub fn open(path: &Path) -> NpzResult<Self> {
        let (f, _) = bounded::open(path, Kind::Npz).map_err(|e| e.to_string())?;
        Sidecar::new(BufReader::new(f))
    }
}

impl<R: Read + Seek> Sidecar<R> {
    pub fn new(reader: R) -> NpzResult<Self> {
        let zip = zip::ZipArchive::new(reader).map_err(|e| format!("not an .npz: {e}"))?;
        Ok(Sidecar { zip, inflated: 0 })
    }

    /// The names of the arrays, in the order they are stored.
    pub fn names(&mut self) -> NpzResult<Vec<String>> {
        Ok(self
            .zip
            .file_names()
            .map(|n| n.strip_suffix(".npy").unwrap_or(n).to_owned())
            .collect())
    }

    /// The bytes of the member that holds array `key` (`key`, else `key.npy`, as NumPy
    /// looks them up), read within the limits.
    fn member(&mut self, key: &str) -> NpzResult<Vec<u8>> {
        let name = if self.zip.index_for_name(key).is_some() {
            key.to_owned()
        } else {
            format!("{key}.npy")
        };
        let entry = self
            .zip
            .by_name(&name)
            .map_err(|e| format!("no array `{key}`: {e}"))?;
        if self.inflated.saturating_add(entry.size()) > Kind::Npz.limit() {
            return Err(format!(
                "its arrays inflate to more than the limit of {} bytes for {} in all",
                Kind::Npz.limit(),
                Kind::Npz
            ));
        }
        let bytes = bounded::read_member(entry, Kind::NpyArray).map_err(|e| e.to_string())?;
        self.inflated += bytes.len() as u64;
        if self.inflated > Kind::Npz.limit() {
            return Err(format!(
                "its arrays inflate to more than the limit of {} bytes for {} in all",
                Kind::Npz.limit(),
                Kind::Npz
            ));
        }
        Ok(bytes)
    }

    /// Reads the array stored under `key`, whatever its element type, as f64. Its header's
    /// shape must fit [`MAX_ELEMENTS`] and the bytes that follow it exactly, so nothing is
    /// allocated for a shape the file does not hold.
    pub fn read(&mut self, key: &str) -> NpzResult<ArrayD<f64>> {
        let bytes = self.member(key)?;
        check_npy(&bytes).map_err(|m| format!("array `{key}`: {m}"))?;
        macro_rules! try_as {
            ($($t:ty),*) => {$(
                if let Ok(a) = ArrayD::<$t>::read_npy(&bytes[..]) {
                    return Ok(a.mapv(|x| x as f64));
                }
            )*};
        }
        try_as!(f64, f32, i64, i32, i16, i8, u64, u32, u16, u8);
        match ArrayD::<bool>::read_npy(&bytes[..]) {
            Ok(a) => Ok(a.mapv(|x| f64::from(u8::from(x)))),
            Err(e) => Err(format!(
                "array `{key}` has an element type semfuzz does not read: {e}"
            )),
        }
    }
}

/// Checks an `.npy` member's header before it is parsed: the header lies within the bytes,
/// its shape has at most [`MAX_ELEMENTS`] elements, and the data that follows is exactly
/// the shape's element count times the element size.
fn check_npy(bytes: &[u8]) -> Result<(), String> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    let bad = |why: &str| Err(format!("not a NumPy array: {why}"));
    if bytes.len() < MAGIC.len() + 2 || &bytes[..MAGIC.len()] != MAGIC {
        return bad("no .npy magic");
    }
    let major = bytes[MAGIC.len()];
    let at = MAGIC.len() + 2;
    let (len, start) = match major {
        1 => match bytes.get(at..at + 2) {
            Some(b) => (usize::from(u16::from_le_bytes([b[0], b[1]])), at + 2),
            None => return bad("truncated header"),
        },
        2 | 3 => match bytes.get(at..at + 4) {
            Some(b) => (
                u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize,
                at + 4,
            ),
            None => return bad("truncated header"),
        },
        v => return bad(&format!("format version {v}")),
    };
    let Some(header) = start.checked_add(len).and_then(|end| bytes.get(start..end)) else {
        return bad("the header runs past the end of the array");
    };
    let header = String::from_utf8_lossy(header);
    let Some(shape) = header
        .split_once("'shape':")
        .and_then(|(_, rest)| rest.split_once('('))
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(dims, _)| dims)
    else {
        return bad("no shape in the header");
    };
    let mut elements: u128 = 1;
    for d in shape.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let d: u64 = d
            .parse()
            .map_err(|_| format!("not a NumPy array: dimension `{d}`"))?;
        elements = elements.saturating_mul(u128::from(d));
    }
    if elements > MAX_ELEMENTS as u128 {
        return Err(format!(
            "its shape ({shape}) has {elements} elements, more than the limit of {MAX_ELEMENTS}"
        ));
    }
    let Some(item) = header
        .split_once("'descr':")
        .and_then(|(_, rest)| rest.trim_start().strip_prefix('\''))
        .and_then(|rest| rest.split_once('\''))
        .map(|(descr, _)| descr)
        .and_then(|d| d.trim_start_matches(['<', '>', '|', '=']).get(1..))
        .and_then(|size| size.parse::<u128>().ok())
    else {
        return bad("no element type semfuzz reads in the header");
    };
    let data = (bytes.len() - start - len) as u128;
    if elements * item != data {
        return Err(format!(
            "its header says {elements} elements of {item} bytes, but {data} bytes follow"
        ));
    }
    Ok(())
}

/// Writes arrays to a new `.npz`, each in its dtype.
pub(crate) fn write(path: &Path, arrays: &[(&str, DType, &ArrayD<f64>)]) -> NpzResult<()> {
    let f = File::create(path).map_err(|e| format!("cannot create: {e}"))?;
    let mut npz = NpzWriter::new(BufWriter::new(f));
    for &(key, dtype, a) in arrays {
        let r = match dtype {
            DType::Float64 => npz.add_array(key, a),
            DType::Float32 | DType::Float16 | DType::BFloat16 => {
                npz.add_array(key, &a.mapv(|x| x as f32))
            }
            DType::Int64 => npz.add_array(key, &a.mapv(|x| x as i64)),
            DType::Int32 => npz.add_array(key, &a.mapv(|x| x as i32)),
            DType::Int16 => npz.add_array(key, &a.mapv(|x| x as i16)),
            DType::Int8 => npz.add_array(key, &a.mapv(|x| x as i8)),
            DType::UInt64 => npz.add_array(key, &a.mapv(|x| x as u64)),
            DType::UInt32 => npz.add_array(key, &a.mapv(|x| x as u32)),
            DType::UInt16 => npz.add_array(key, &a.mapv(|x| x as u16)),
            DType::UInt8 => npz.add_array(key, &a.mapv(|x| x as u8)),
            DType::Bool => npz.add_array(key, &a.mapv(|x| x != 0.0)),
        };
        r.map_err(|e| format!("cannot write `{key}`: {e}"))?;
    }
    let mut w = npz.finish().map_err(|e| format!("cannot finish: {e}"))?;
    w.flush().map_err(|e| format!("cannot write: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// An `.npz` of one member `name` holding `header` (a NumPy header dict) and `data`.
    fn npz_of(name: &str, header: &str, data: &[u8]) -> Vec<u8> {
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        let mut h = header.to_owned();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        npy.extend_from_slice(&(h.len() as u16).to_le_bytes());
        npy.extend_from_slice(h.as_bytes());
        npy.extend_from_slice(data);
        let mut out = Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&npy).unwrap();
        zip.finish().unwrap();
        out.into_inner()
    }

    fn read(bytes: Vec<u8>) -> NpzResult<ArrayD<f64>> {
        Sidecar::new(Cursor::new(bytes))?.read("a")
    }

    #[test]
    fn a_well_formed_array_is_read() {
        let data: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let a = read(npz_of(
            "a.npy",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
            &data,
        ))
        .unwrap();
        assert_eq!(a.into_raw_vec_and_offset().0, vec![1.5, -2.0]);
    }

    /// A header that declares more than the bytes hold, or more than the limit, is refused
    /// before anything is allocated for it.
    #[test]
    fn a_header_that_claims_more_than_its_bytes_is_refused() {
        let e = read(npz_of(
            "a.npy",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }",
            &[0; 8],
        ))
        .unwrap_err();
        assert!(e.contains("more than the limit of"), "{e}");
        let e = read(npz_of(
            "a.npy",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1000, 3), }",
            &[0; 8],
        ))
        .unwrap_err();
        assert!(
            e.contains("3000 elements of 8 bytes, but 8 bytes follow"),
            "{e}"
        );
        let e = read(npz_of(
            "a.npy",
            "{'descr': '<f8', 'fortran_order': False}",
            &[],
        ))
        .unwrap_err();
        assert!(e.contains("no shape"), "{e}");
        let e = read(npz_of("a.npy", "garbage", &[])).unwrap_err();
        assert!(e.contains("not a NumPy array"), "{e}");
    }

    #[test]
    fn a_header_length_past_the_member_is_refused() {
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        npy.extend_from_slice(&u16::MAX.to_le_bytes());
        npy.extend_from_slice(b"{'descr': '<f8', 'shape': (), }");
        let e = check_npy(&npy).unwrap_err();
        assert!(e.contains("runs past the end"), "{e}");
        assert!(check_npy(&npy[..9]).unwrap_err().contains("truncated"));
        npy[6] = 7;
        assert!(check_npy(&npy).unwrap_err().contains("version 7"));
    }
}
