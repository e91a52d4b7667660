//! The sidecar `.npz` that keeps a large case's arrays, as NumPy's `savez` writes it.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;

use ndarray::ArrayD;
use ndarray_npy::{NpzReader, NpzWriter, ReadNpzError};

use crate::DType;

/// An error of one sidecar operation, as text for [`super::CaseErrorKind::Sidecar`].
pub(crate) type NpzResult<T> = Result<T, String>;

pub(crate) struct Sidecar<R: Read + Seek> {
    npz: NpzReader<R>,
}

impl Sidecar<BufReader<File>> {
    pub fn open(path: &Path) -> NpzResult<Self> {
        let f = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
        let npz = NpzReader::new(BufReader::new(f)).map_err(|e| format!("not an .npz: {e}"))?;
        Ok(Sidecar { npz })
    }
}

impl<R: Read + Seek> Sidecar<R> {
    /// The names of the arrays, in the order they are stored.
    pub fn names(&mut self) -> NpzResult<Vec<String>> {
        self.npz.names().map_err(|e| format!("not an .npz: {e}"))
    }

    /// Reads the array stored under `key`, whatever its element type, as f64.
    pub fn read(&mut self, key: &str) -> NpzResult<ArrayD<f64>> {
        macro_rules! try_as {
            ($($t:ty),*) => {$(
                match self.npz.by_name::<ndarray::OwnedRepr<$t>, ndarray::IxDyn>(key) {
                    Ok(a) => return Ok(a.mapv(|x| x as f64)),
                    Err(ReadNpzError::Zip(e)) => return Err(format!("no array `{key}`: {e}")),
                    Err(_) => {}
                }
            )*};
        }
        try_as!(f64, f32, i64, i32, i16, i8, u64, u32, u16, u8);
        match self
            .npz
            .by_name::<ndarray::OwnedRepr<bool>, ndarray::IxDyn>(key)
        {
            Ok(a) => Ok(a.mapv(|x| f64::from(u8::from(x)))),
            Err(e) => Err(format!(
                "array `{key}` has an element type semfuzz does not read: {e}"
            )),
        }
    }
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
