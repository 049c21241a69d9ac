//! Histogram encoding of the `histograms` object: HdrHistogram V2, deflate-compressed and
//! base64-encoded on output; plain or compressed V2 accepted on input, with the payload length
//! checked before anything is allocated.

use std::io;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::JsonError;

/// Serialises a histogram as V2 + deflate, base64 (standard alphabet, padded).
pub fn encode_histogram(h: &Histogram<u64>) -> Result<String, JsonError> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| JsonError::Histogram(format!("cannot serialise: {e:?}")))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(buf))
}

/// HdrHistogram V2 cookies (uncompressed, deflate-compressed).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
/// Size of the V2 header (cookie, payload length, normalizing offset, digits, low, high, ratio).
const V2_HEADER_LEN: usize = 40;
/// Largest decompressed histogram accepted (a 3-digit histogram of 1 ns..1 h needs a few KiB).
const MAX_DECODED_LEN: u64 = 64 << 20;

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    let word: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_be_bytes(word))
}

/// Turns V2 (plain or deflate) bytes into checked plain V2 bytes: the header's payload length
/// must match the bytes present, so that a hostile length cannot make the decoder allocate
/// gigabytes, and decompression is capped at [`MAX_DECODED_LEN`].
fn plain_v2(bytes: Vec<u8>) -> Result<Vec<u8>, JsonError> {
    let bad = |why: &str| JsonError::Histogram(format!("invalid HdrHistogram V2 data: {why}"));
    let plain = match be_u32(&bytes, 0) {
        Some(V2_COOKIE) => bytes,
        Some(V2_DEFLATE_COOKIE) => {
            let len = be_u32(&bytes, 4).ok_or_else(|| bad("truncated header"))? as usize;
            let compressed = bytes
                .get(8..)
                .and_then(|rest| rest.get(..len))
                .ok_or_else(|| bad("compressed payload shorter than its length"))?;
            let mut out = Vec::new();
            io::Read::read_to_end(
                &mut io::Read::take(flate2::read::ZlibDecoder::new(compressed), MAX_DECODED_LEN),
                &mut out,
            )
            .map_err(|e| bad(&format!("cannot inflate: {e}")))?;
            if be_u32(&out, 0) != Some(V2_COOKIE) {
                return Err(bad("inflated data is not a V2 histogram"));
            }
            out
        }
        _ => return Err(bad("unknown cookie")),
    };
    let payload = be_u32(&plain, 4).ok_or_else(|| bad("truncated header"))? as usize;
    if plain.len() < V2_HEADER_LEN || payload > plain.len() - V2_HEADER_LEN {
        return Err(bad("payload shorter than its length"));
    }
    Ok(plain)
}

/// Decodes a histogram written by [`encode_histogram`] (or plain V2, base64).
pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, JsonError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| JsonError::Histogram(format!("invalid base64: {e}")))?;
    let plain = plain_v2(bytes)?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut io::Cursor::new(plain))
        .map_err(|e| JsonError::Histogram(format!("invalid HdrHistogram V2 data: {e:?}")))?;
    h.auto(true);
    Ok(h)
}
