//! Frames between the client and the worker.
//!
//! A frame is `u32 LE total length`, then `u32 LE header length`, the header (UTF-8 JSON),
//! and a binary payload (raw tensor bytes, laid out as the header describes). Frames are
//! capped at [`MAX_FRAME`] so a corrupt length cannot allocate without bound.
//!
//! Where the two sides share memory (see [`crate::client`]), a payload may instead lie at the
//! start of the sender's shared region: the header length then has [`SHARED`] set, and the
//! frame's payload is the payload's length in the region, as a `u64 LE`. Only the pipe's
//! order says who may touch a region: the sender writes it before it sends the frame, the
//! receiver reads it before it answers.
//!
//! A length word of 0 ([`WAKE`]) is no frame: it says that one follows soon (a request whose
//! payload is being written, an answer being encoded). A reader that gets it may stay awake
//! for a moment instead of going to sleep and being woken again by the frame, which costs
//! tens of microseconds per wake-up on another core. Readers that do not care skip it. For the
//! same reason, the worker stays awake for a moment after each answer: a client running cases
//! one after another sends the next request soon.

use std::io::{self, IoSlice, Read, Write};

use serde_json::Value;

/// The largest frame either side accepts (1 GiB).
pub const MAX_FRAME: usize = 1 << 30;

/// Set in a frame's header length: the payload lies in the sender's shared region.
pub const SHARED: u32 = 1 << 31;

/// A wake-up: a length word of 0, sent before a frame (see the module's documentation).
pub const WAKE: [u8; 4] = [0; 4];

/// Sends a [`WAKE`].
pub fn write_wake(w: &mut impl Write) -> io::Result<()> {
    w.write_all(&WAKE)?;
    w.flush()
}

/// Where a frame's payload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// In the frame, this many bytes after the header.
    Inline(usize),
    /// At the start of the sender's shared region, this many bytes.
    Shared(usize),
}

/// One message: a JSON header and a binary payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub header: Value,
    pub payload: Vec<u8>,
}

impl Frame {
    pub fn new(header: Value) -> Self {
        Frame {
            header,
            payload: Vec::new(),
        }
    }
}

pub fn write_frame(w: &mut impl Write, frame: &Frame) -> io::Result<()> {
    let header = serde_json::to_vec(&frame.header).expect("JSON values serialize");
    write_raw_frame(w, &header, &frame.payload)
}

/// Writes a frame whose header is already serialized JSON, in as few system calls as the
/// writer allows (one `writev` on a pipe): a reader woken by the first bytes then finds the
/// whole frame instead of blocking again for the rest.
pub fn write_raw_frame(w: &mut impl Write, header: &[u8], payload: &[u8]) -> io::Result<()> {
    write_parts(w, header, 0, payload)
}

/// Writes a frame whose payload, `len` bytes, the sender has put in its shared region.
pub fn write_shared_frame(w: &mut impl Write, header: &[u8], len: usize) -> io::Result<()> {
    write_parts(w, header, SHARED, &(len as u64).to_le_bytes())
}

/// Writes the lengths (the header's with `flags`), the header and what follows it.
fn write_parts(w: &mut impl Write, header: &[u8], flags: u32, rest: &[u8]) -> io::Result<()> {
    let total = 4 + header.len() + rest.len();
    if total > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("frame of {total} bytes exceeds the {MAX_FRAME}-byte limit"),
        ));
    }
    let mut head = [0u8; 8];
    head[..4].copy_from_slice(&(total as u32).to_le_bytes());
    head[4..].copy_from_slice(&(header.len() as u32 | flags).to_le_bytes());
    let mut parts = [
        IoSlice::new(&head),
        IoSlice::new(header),
        IoSlice::new(rest),
    ];
    let mut parts = &mut parts[..];
    while !parts.is_empty() {
        match w.write_vectored(parts) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    w.flush()
}

/// Reads one frame; `Ok(None)` at a clean end of stream (between frames). A payload in the
/// sender's shared memory is refused: this reader has none.
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Frame>> {
    read_frame_with(
        r,
        |_| {
            Err(invalid(
                "a frame's payload is in shared memory, which this reader has none of".into(),
            ))
        },
        |header, payload| {
            Ok(Frame {
                header: parse_header(header)?,
                payload: payload.to_vec(),
            })
        },
    )?
    .transpose()
}

/// Reads one frame and hands its header (the JSON text, unparsed) and payload to `decode`,
/// the payload where it lies: an inline one read from `r` into a buffer, a shared one as
/// `shared` gives it for its length. `Ok(None)` at a clean end of stream (between frames).
pub fn read_frame_with<'s, R: Read, T>(
    r: &mut R,
    shared: impl FnOnce(usize) -> io::Result<&'s [u8]>,
    decode: impl FnOnce(&[u8], &[u8]) -> T,
) -> io::Result<Option<T>> {
    let Some((header, payload)) = read_frame_head(r)? else {
        return Ok(None);
    };
    Ok(Some(match payload {
        Payload::Inline(len) => decode(&header, &read_exactly(r, len)?),
        Payload::Shared(len) => decode(&header, shared(len)?),
    }))
}

/// A frame's header, as read by [`read_frame_head`].
pub fn parse_header(header: &[u8]) -> io::Result<Value> {
    serde_json::from_slice(header).map_err(|e| invalid(format!("frame header is not JSON: {e}")))
}

/// Reads a frame's lengths and header, and says where its payload is: an inline payload the
/// caller then reads wherever it wants it. `Ok(None)` at a clean end of stream (between
/// frames). Wake-ups are skipped.
pub fn read_frame_head<R: Read>(r: &mut R) -> io::Result<Option<(Vec<u8>, Payload)>> {
    read_frame_head_waking(r, |_| {})
}

/// As [`read_frame_head`], calling `on_wake` for each wake-up before the frame.
pub fn read_frame_head_waking<R: Read>(
    r: &mut R,
    mut on_wake: impl FnMut(&mut R),
) -> io::Result<Option<(Vec<u8>, Payload)>> {
    let mut len = [0u8; 4];
    loop {
        match r.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        if len != WAKE {
            break;
        }
        on_wake(r);
    }
    let total = u32::from_le_bytes(len) as usize;
    if !(4..=MAX_FRAME).contains(&total) {
        return Err(invalid(format!("frame length {total} out of range")));
    }
    r.read_exact(&mut len)?;
    let word = u32::from_le_bytes(len);
    let header_len = (word & !SHARED) as usize;
    if header_len > total - 4 {
        return Err(invalid(format!(
            "header length {header_len} exceeds frame length {total}"
        )));
    }
    let header = read_exactly(r, header_len)?;
    let rest = total - 4 - header_len;
    if word & SHARED == 0 {
        return Ok(Some((header, Payload::Inline(rest))));
    }
    if rest != 8 {
        return Err(invalid(format!(
            "a shared payload's length takes 8 bytes, not {rest}"
        )));
    }
    let mut n = [0u8; 8];
    r.read_exact(&mut n)?;
    let n = usize::try_from(u64::from_le_bytes(n))
        .map_err(|_| invalid("shared payload length out of range".into()))?;
    Ok(Some((header, Payload::Shared(n))))
}

/// Reads exactly `len` bytes. The buffer grows with the bytes that arrive (from at most
/// [`PREALLOCATE`]), so a length word that promises more than follows allocates no more than
/// what does follow.
fn read_exactly(r: &mut impl Read, len: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(len.min(PREALLOCATE));
    r.take(len as u64).read_to_end(&mut bytes)?;
    if bytes.len() < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("a frame promised {len} bytes, {} came", bytes.len()),
        ));
    }
    Ok(bytes)
}

/// What [`read_exactly`] allocates before the bytes arrive.
const PREALLOCATE: usize = 16 << 20;

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A length word that promises more than follows is an early end of stream, found
    /// without allocating what it promised.
    #[test]
    fn a_frame_that_promises_more_than_follows_ends_early() {
        let mut bytes = ((1u32 << 30) - 8).to_le_bytes().to_vec();
        bytes.extend_from_slice(&2u32.to_le_bytes());
        bytes.extend_from_slice(b"{}0123");
        let e = read_frame(&mut &bytes[..]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
        // The header length too.
        let mut bytes = 100u32.to_le_bytes().to_vec();
        bytes.extend_from_slice(&90u32.to_le_bytes());
        bytes.extend_from_slice(b"{}");
        let e = read_frame(&mut &bytes[..]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
    }

    #[test]
    fn frames_round_trip_back_to_back() {
        let a = Frame {
            header: json!({"op": "hello"}),
            payload: vec![],
        };
        let b = Frame {
            header: json!({"op": "x", "n": [1, 2]}),
            payload: (0..=255).collect(),
        };
        let mut buf = Vec::new();
        write_frame(&mut buf, &a).unwrap();
        write_frame(&mut buf, &b).unwrap();
        let mut r = &buf[..];
        assert_eq!(read_frame(&mut r).unwrap(), Some(a));
        assert_eq!(read_frame(&mut r).unwrap(), Some(b));
        assert_eq!(read_frame(&mut r).unwrap(), None);
    }

    /// A writer that takes at most three bytes per call, as a full pipe may.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(3);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_frame_written_in_pieces_arrives_whole() {
        let frame = Frame {
            header: json!({"op": "x"}),
            payload: (0..100).collect(),
        };
        let mut w = Trickle(Vec::new());
        write_frame(&mut w, &frame).unwrap();
        let mut r = &w.0[..];
        assert_eq!(read_frame(&mut r).unwrap(), Some(frame));
        assert!(r.is_empty());
    }

    #[test]
    fn a_shared_payload_is_announced_by_its_length() {
        let mut buf = Vec::new();
        write_shared_frame(&mut buf, br#"{"op":"x"}"#, 123_456).unwrap();
        write_raw_frame(&mut buf, b"{}", &[7; 5]).unwrap();
        let mut r = &buf[..];
        let (header, payload) = read_frame_head(&mut r).unwrap().unwrap();
        assert_eq!(
            (&header[..], payload),
            (&br#"{"op":"x"}"#[..], Payload::Shared(123_456))
        );
        let (header, payload) = read_frame_head(&mut r).unwrap().unwrap();
        assert_eq!((&header[..], payload), (&b"{}"[..], Payload::Inline(5)));
        // A reader without shared memory refuses a shared payload instead of misreading it.
        let mut r = &buf[..];
        let e = read_frame(&mut r).unwrap_err();
        assert!(e.to_string().contains("shared memory"), "{e}");
    }

    #[test]
    fn wake_ups_before_a_frame_are_seen_and_skipped() {
        let frame = Frame {
            header: json!({"op": "x"}),
            payload: vec![1, 2, 3],
        };
        let mut buf = Vec::new();
        write_wake(&mut buf).unwrap();
        write_wake(&mut buf).unwrap();
        write_frame(&mut buf, &frame).unwrap();
        write_wake(&mut buf).unwrap();
        let mut r = &buf[..];
        let mut wakes = 0;
        let (header, payload) = read_frame_head_waking(&mut r, |_| wakes += 1)
            .unwrap()
            .unwrap();
        assert_eq!(wakes, 2);
        assert_eq!(
            (&header[..], payload),
            (&br#"{"op":"x"}"#[..], Payload::Inline(3))
        );
        let mut r = &buf[..];
        assert_eq!(read_frame(&mut r).unwrap(), Some(frame));
        // A wake-up with no frame after it, at the end of the stream, is a clean end.
        assert_eq!(read_frame(&mut r).unwrap(), None);
    }

    #[test]
    fn corrupt_frames_are_errors_not_allocations() {
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut r).is_err());
        let mut r: &[u8] = &[8, 0, 0, 0, 100, 0, 0, 0, 1, 2, 3, 4];
        let e = read_frame(&mut r).unwrap_err();
        assert!(e.to_string().contains("header length 100"), "{e}");
        let mut r: &[u8] = &[6, 0, 0, 0, 2, 0];
        assert_eq!(
            read_frame(&mut r).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }
}
