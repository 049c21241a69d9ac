//! The peer's unidirectional streams (control, QPACK encoder and decoder streams) and our
//! own: what each is, and how their bytes are fed to the control reader and QPACK.

use h2lab_wire::h3::control::ControlEvent;
use h2lab_wire::h3::stream::{UniAction, UniStreamType};
use h2lab_wire::h3::{ErrorCode, Scope};
use quinn_proto::StreamId;

pub(super) use crate::quic::h3::{OutStream, UniStream as Uni};

use super::H3Conn;

impl H3Conn {
    /// Feeds unidirectional-stream bytes.
    pub(super) fn feed_uni(
        &mut self,
        id: StreamId,
        bytes: &[u8],
        fin: bool,
    ) -> Option<(Scope, ErrorCode)> {
        let conn_err = |code: ErrorCode| Some((Scope::Connection, code));
        let mut input: &[u8] = bytes;
        let mut owned: Vec<u8>;
        if let Some(Uni::Header(buf)) = self.uni.get_mut(&id) {
            buf.extend_from_slice(bytes);
            let (ty, n) = UniStreamType::parse(buf)?;
            owned = std::mem::take(buf);
            owned.drain(..n);
            let next = match self.peer_streams.open(u64::from(id), ty) {
                Ok(UniAction::Control) => Uni::Control(Vec::new()),
                Ok(UniAction::QpackEncoder) => Uni::QpackEncoder,
                Ok(UniAction::QpackDecoder) => Uni::QpackDecoder,
                Ok(UniAction::Push(_) | UniAction::Ignore(_)) => Uni::Ignored,
                Err(e) => return conn_err(e.code),
            };
            self.uni.insert(id, next);
            input = &owned;
            // The type and what followed it in this chunk go on below.
        }
        match self.uni.get_mut(&id)? {
            Uni::Header(_) => None,
            Uni::Control(tail) => {
                let mut events = [None; 8];
                let mut n_ev = 0;
                let mut pending_settings = None;
                let mut data = std::mem::take(tail);
                data.extend_from_slice(input);
                let res = self.control_in.recv(&data, fin, |ev| {
                    if let ControlEvent::Settings(s) = ev {
                        pending_settings = Some(s);
                    } else if n_ev < events.len() {
                        events[n_ev] = Some(ev);
                        n_ev += 1;
                    }
                });
                if let Some(s) = pending_settings {
                    self.qenc.set_peer_settings(
                        usize::try_from(s.qpack_max_table_capacity).unwrap_or(usize::MAX),
                        usize::try_from(s.qpack_blocked_streams).unwrap_or(usize::MAX),
                    );
                }
                match res {
                    Ok(used) => {
                        data.drain(..used);
                        if let Some(Uni::Control(t)) = self.uni.get_mut(&id) {
                            *t = data;
                        }
                        None
                    }
                    Err(e) => conn_err(e.code),
                }
            }
            Uni::QpackEncoder => {
                if fin {
                    return conn_err(ErrorCode::H3_CLOSED_CRITICAL_STREAM);
                }
                match self.qdec.feed_encoder_stream(input) {
                    Ok(()) => None,
                    Err(e) => conn_err(ErrorCode::from_qpack(e.code())),
                }
            }
            Uni::QpackDecoder => {
                if fin {
                    return conn_err(ErrorCode::H3_CLOSED_CRITICAL_STREAM);
                }
                match self.qenc.feed_decoder_stream(input) {
                    Ok(()) => None,
                    Err(e) => conn_err(ErrorCode::from_qpack(e.code())),
                }
            }
            Uni::Ignored => None,
        }
    }
}
