//! NumPy .npy files as relayout tensors: a [`TensorType`] and its little-endian bytes.
//!
//! npyz parses and writes the header; the data is read and written as raw bytes, since a
//! little-endian C-order .npy holds exactly the bytes a kernel takes. Only the layouts a
//! kernel can take as they are are accepted: little-endian (or byte-order-free one-byte
//! types), C order, and the element types relayout has. Everything else is refused with a
//! message that says how to convert the array in numpy.

use npyz::{Endianness, TypeChar, WriterBuilder};
use relayout::ir::{DType, TensorType};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

/// numpy's type string for `dtype` (`<f4`), or why it has none.
pub fn descr(dtype: DType) -> Result<&'static str, String> {
    Ok(match dtype {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::F16 => "<f2",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::Bool => "|b1",
        DType::C64 => "<c8",
        DType::C128 => "<c16",
        DType::BF16 => {
            return Err(
                "bfloat16 has no NumPy dtype, so it cannot be read from or written to \
                        a .npy file (ml_dtypes stores it as raw bytes, '|V2', which loses the \
                        type); use another element type"
                    .into(),
            )
        }
    })
}

/// The relayout element type of a numpy type string, or why there is none.
fn dtype_of(ty: &npyz::TypeStr) -> Result<DType, String> {
    let size = ty.size_field();
    match ty.endianness() {
        Endianness::Big if size > 1 => {
            return Err(format!(
                "the data is big-endian ('{ty}'), and relayout reads little-endian data; \
                 convert it with a.astype(a.dtype.newbyteorder('<'))"
            ))
        }
        _ => {}
    }
    let dtype = match (ty.type_char(), size) {
        (TypeChar::Float, 2) => DType::F16,
        (TypeChar::Float, 4) => DType::F32,
        (TypeChar::Float, 8) => DType::F64,
        (TypeChar::Int, 1) => DType::I8,
        (TypeChar::Int, 2) => DType::I16,
        (TypeChar::Int, 4) => DType::I32,
        (TypeChar::Int, 8) => DType::I64,
        (TypeChar::Uint, 1) => DType::U8,
        (TypeChar::Uint, 2) => DType::U16,
        (TypeChar::Uint, 4) => DType::U32,
        (TypeChar::Uint, 8) => DType::U64,
        (TypeChar::Bool, 1) => DType::Bool,
        (TypeChar::Complex, 8) => DType::C64,
        (TypeChar::Complex, 16) => DType::C128,
        (TypeChar::RawData, 2) => {
            return Err(format!(
                "the dtype '{ty}' is raw bytes, which is how ml_dtypes saves bfloat16; relayout \
                 cannot tell what it holds, and bfloat16 has no NumPy dtype"
            ))
        }
        _ => {
            return Err(format!(
                "the dtype '{ty}' is not one relayout supports (float16/32/64, int8-64, \
                 uint8-64, bool, complex64/128)"
            ))
        }
    };
    Ok(dtype)
}

/// Reads a .npy file: its type and its data as little-endian bytes.
pub fn read(path: &Path) -> Result<(TensorType, Vec<u8>), String> {
    let name = path.display();
    let file = File::open(path).map_err(|e| format!("cannot open {name}: {e}"))?;
    let mut file = BufReader::new(file);
    let raw_header = raw_header(&mut file).map_err(|e| format!("{name}: {e}"))?;
    let mut reader = std::io::Cursor::new(raw_header).chain(file);
    let header = npyz::NpyHeader::from_reader(&mut reader)
        .map_err(|e| format!("{name} is not a valid .npy file: {e}"))?;
    let dtype = match header.dtype() {
        npyz::DType::Plain(ty) => dtype_of(&ty).map_err(|e| format!("{name}: {e}"))?,
        other => {
            return Err(format!(
                "{name}: the dtype {} is a structured or nested type; relayout reads arrays of \
                 plain numbers",
                other.descr()
            ))
        }
    };
    if header.order() == npyz::Order::Fortran {
        return Err(format!(
            "{name} is in Fortran order, and relayout reads C order (row-major) data; save \
             np.ascontiguousarray(a) instead"
        ));
    }
    let ty = TensorType::new(dtype, header.shape().to_vec());
    let size = ty
        .size_bytes()
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("{name}: {ty} is too large to hold in memory"))?;
    // Read at most one byte more than the tensor needs: enough to tell that the file is too
    // long, without trusting its length for the allocation.
    let mut data = Vec::new();
    (&mut reader)
        .take(size as u64 + 1)
        .read_to_end(&mut data)
        .map_err(|e| format!("cannot read {name}: {e}"))?;
    if data.len() != size {
        let what = if data.len() < size {
            "only"
        } else {
            "more than"
        };
        return Err(format!(
            "{name} holds {what} {} bytes of data, but its header says {ty}, which is {size} bytes",
            data.len().min(size)
        ));
    }
    Ok((ty, data))
}

/// The largest header accepted, as numpy's own `max_header_size`: a real header is a short
/// dict, and the limit keeps a corrupt length from becoming a huge allocation.
const MAX_HEADER: usize = 10_000;

/// Reads the magic string, the version, the header length and the header text, and returns
/// them as they were, once the header's numbers are known to be safe to hand to npyz.
///
/// npyz multiplies the dims of the shape without checking for overflow, which panics in a
/// debug build (and wraps in a release build) on a crafted header. So every decimal number in
/// the header text is read first, and a header is refused when the product of its nonzero
/// numbers overflows `u64`: then no product npyz forms from them can overflow. A real header's
/// numbers are its shape and the dtype's size, whose product is the data's size.
fn raw_header(r: &mut impl Read) -> Result<Vec<u8>, String> {
    let mut prefix = [0u8; 8];
    r.read_exact(&mut prefix)
        .map_err(|_| "too short for a .npy file".to_string())?;
    if &prefix[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (the magic string \\x93NUMPY is missing)".into());
    }
    let mut out = prefix.to_vec();
    let len = if prefix[6] == 1 {
        let mut b = [0u8; 2];
        r.read_exact(&mut b).map_err(|e| e.to_string())?;
        out.extend_from_slice(&b);
        usize::from(u16::from_le_bytes(b))
    } else {
        let mut b = [0u8; 4];
        r.read_exact(&mut b).map_err(|e| e.to_string())?;
        out.extend_from_slice(&b);
        usize::try_from(u32::from_le_bytes(b)).unwrap_or(usize::MAX)
    };
    if len > MAX_HEADER {
        return Err(format!(
            "the header is {len} bytes long; relayout reads headers up to {MAX_HEADER} bytes"
        ));
    }
    let start = out.len();
    out.resize(start + len, 0);
    r.read_exact(&mut out[start..])
        .map_err(|_| "the file ends inside its header".to_string())?;
    check_numbers(&String::from_utf8_lossy(&out[start..]))?;
    Ok(out)
}

/// Refuses header text whose numbers could overflow a product; see [`raw_header`].
fn check_numbers(text: &str) -> Result<(), String> {
    let tokens = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    let mut product = 1u64;
    for token in tokens.filter(|t| t.starts_with(|c: char| c.is_ascii_digit())) {
        let n: u64 = token
            .parse()
            .map_err(|_| format!("the header holds '{token}', which is not a 64-bit decimal"))?;
        if n != 0 {
            product = product
                .checked_mul(n)
                .ok_or_else(|| "the shape in the header is too large".to_string())?;
        }
    }
    Ok(())
}

/// Writes `data`, the little-endian bytes of a tensor of type `ty`, as a .npy file.
pub fn write(path: &Path, ty: &TensorType, data: &[u8]) -> Result<(), String> {
    let name = path.display();
    let descr: npyz::TypeStr = descr(ty.dtype)?
        .parse()
        .map_err(|e| format!("bad numpy type string for {}: {e}", ty.dtype))?;
    let file = File::create(path).map_err(|e| format!("cannot create {name}: {e}"))?;
    let mut out = BufWriter::new(file);
    npyz::WriteOptions::new_header_only()
        .dtype(npyz::DType::Plain(descr))
        .shape(&ty.shape)
        .writer(&mut out)
        .write_header_only()
        .and_then(|w| w.write_all(data))
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write {name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_but_bfloat16_has_a_numpy_type_that_maps_back() {
        for dtype in DType::ALL {
            match descr(dtype) {
                Ok(text) => {
                    let ty: npyz::TypeStr = text.parse().unwrap();
                    assert_eq!(dtype_of(&ty), Ok(dtype), "{text}");
                    assert_eq!(ty.size_field(), dtype.size(), "{text}");
                }
                Err(e) => {
                    assert_eq!(dtype, DType::BF16);
                    assert!(e.contains("bfloat16"), "{e}");
                }
            }
        }
    }

    #[test]
    fn big_endian_and_unknown_types_are_refused() {
        let big: npyz::TypeStr = ">f4".parse().unwrap();
        assert!(dtype_of(&big).unwrap_err().contains("big-endian"));
        let one_byte: npyz::TypeStr = "<u1".parse().unwrap();
        assert_eq!(dtype_of(&one_byte), Ok(DType::U8));
        let quad: npyz::TypeStr = "<f16".parse().unwrap();
        assert!(dtype_of(&quad)
            .unwrap_err()
            .contains("not one relayout supports"));
        let raw: npyz::TypeStr = "|V2".parse().unwrap();
        assert!(dtype_of(&raw).unwrap_err().contains("bfloat16"));
    }

    #[test]
    fn header_numbers_that_could_overflow_are_refused() {
        let ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 48, 270, 480), }";
        assert_eq!(check_numbers(ok), Ok(()));
        let zero = "{'descr': '<c16', 'fortran_order': False, 'shape': (0, 4294967296), }";
        assert_eq!(check_numbers(zero), Ok(()));
        let big = "{'descr': '<f4', 'shape': (4294967296, 4294967296), }";
        assert!(check_numbers(big).unwrap_err().contains("too large"));
        let hex = "{'descr': '<f4', 'shape': (0xFFFFFFFFFFFF, 2), }";
        assert!(check_numbers(hex).unwrap_err().contains("0xFFFFFFFFFFFF"));
    }
}
