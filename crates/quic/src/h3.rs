//! HTTP/3 stream plumbing over `quinn-proto` that the client (`h2lab bench --h3`) and the
//! server (`h2lab serve --h3`) share: what a peer's unidirectional stream is, and one of our
//! own unidirectional streams with the bytes it still has to write. The framing itself is the
//! wire crate's (`h2lab_wire::h3`, `h2lab_wire::qpack`).

use quinn_proto::{Connection, StreamId, WriteError};

/// What a peer's unidirectional stream is (RFC 9114 §6.2).
#[derive(Debug)]
pub enum UniStream {
    /// Its type is not read yet (the bytes of the type varint so far).
    Header(Vec<u8>),
    /// The peer's control stream, with the unparsed tail.
    Control(Vec<u8>),
    /// The peer's QPACK encoder stream (feeds our decoder).
    QpackEncoder,
    /// The peer's QPACK decoder stream (feeds our encoder).
    QpackDecoder,
    /// Push, unknown or reserved: discarded.
    Ignored,
}

/// One of our unidirectional streams (control, QPACK encoder or decoder) and what it still has
/// to write.
#[derive(Debug, Default)]
pub struct OutStream {
    /// The stream, once opened.
    pub id: Option<StreamId>,
    /// Bytes queued and not yet accepted by QUIC's flow control.
    pub buf: Vec<u8>,
}

impl OutStream {
    /// Opens the stream as `id`, its first bytes written by `head` (the stream type) ahead of
    /// whatever was queued before it could open (QPACK instructions of responses sent while
    /// a 0-RTT handshake was still in progress).
    pub fn open(&mut self, id: StreamId, head: impl FnOnce(&mut Vec<u8>)) {
        let queued = std::mem::take(&mut self.buf);
        head(&mut self.buf);
        self.buf.extend_from_slice(&queued);
        self.id = Some(id);
    }

    /// Writes what QUIC's flow control allows; `false` if the stream is gone (stopped or
    /// reset: for these critical streams a connection error, RFC 9114 §6.2.1).
    pub fn flush(&mut self, conn: &mut Connection) -> bool {
        let Some(id) = self.id else {
            return true;
        };
        while !self.buf.is_empty() {
            match conn.send_stream(id).write(&self.buf) {
                Ok(n) => {
                    self.buf.drain(..n);
                }
                Err(WriteError::Blocked) => return true,
                Err(_) => return false,
            }
        }
        true
    }
}
