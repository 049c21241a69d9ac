//! The unidirectional streams of an HTTP/3 client connection: ours (control with SETTINGS,
//! QPACK encoder and decoder) and the server's (control: SETTINGS, GOAWAY; QPACK streams).

pub(super) use h2lab_quic::h3::{OutStream, UniStream as Uni};
use h2lab_quic::quinn_proto::StreamId;
use h2lab_wire::h3::control::{ControlEvent, ControlReader};
use h2lab_wire::h3::frame::Settings;
use h2lab_wire::h3::stream::{PeerStreams, UniAction, UniStreamType};
use h2lab_wire::h3::{ErrorCode, Role};
use h2lab_wire::qpack::{Decoder, RequestTemplate};

/// What the server's control stream said in one read.
#[derive(Default)]
pub(super) struct ControlNews {
    pub(super) settings: Option<Settings>,
    pub(super) goaway: Option<u64>,
}

/// The server's unidirectional streams.
pub(super) struct PeerUni {
    pub(super) streams: std::collections::HashMap<StreamId, Uni>,
    peer: PeerStreams,
    control: ControlReader,
}

impl PeerUni {
    pub(super) fn new() -> PeerUni {
        PeerUni {
            streams: std::collections::HashMap::new(),
            peer: PeerStreams::new(Role::Client),
            control: ControlReader::new(Role::Client),
        }
    }

    /// Feeds bytes of server stream `id`; QPACK instructions go to `qdec` (encoder stream)
    /// and `template` (decoder stream). A connection error's code on failure.
    pub(super) fn feed(
        &mut self,
        id: StreamId,
        bytes: &[u8],
        fin: bool,
        qdec: &mut Decoder,
        template: &mut RequestTemplate,
        news: &mut ControlNews,
    ) -> Result<(), ErrorCode> {
        if fin {
            // RFC 9114 §6.2.1, RFC 9204 §4.2: critical streams are never closed; other
            // types are ignored anyway.
            if let Some(Uni::Control(_) | Uni::QpackEncoder | Uni::QpackDecoder) =
                self.streams.get(&id)
            {
                return Err(ErrorCode::H3_CLOSED_CRITICAL_STREAM);
            }
        }
        let mut input: &[u8] = bytes;
        let owned: Vec<u8>;
        if let Some(Uni::Header(buf)) = self.streams.get_mut(&id) {
            buf.extend_from_slice(bytes);
            let Some((ty, n)) = UniStreamType::parse(buf) else {
                return Ok(());
            };
            let mut rest = std::mem::take(buf);
            rest.drain(..n);
            owned = rest;
            let next = match self.peer.open(u64::from(id), ty) {
                Ok(UniAction::Control) => Uni::Control(Vec::new()),
                Ok(UniAction::QpackEncoder) => Uni::QpackEncoder,
                Ok(UniAction::QpackDecoder) => Uni::QpackDecoder,
                Ok(UniAction::Push(_) | UniAction::Ignore(_)) => Uni::Ignored,
                Err(e) => return Err(e.code),
            };
            self.streams.insert(id, next);
            input = &owned;
        }
        match self.streams.get_mut(&id) {
            None | Some(Uni::Header(_) | Uni::Ignored) => Ok(()),
            Some(Uni::Control(tail)) => {
                let mut data = std::mem::take(tail);
                data.extend_from_slice(input);
                let used = self
                    .control
                    .recv(&data, fin, |ev| match ev {
                        ControlEvent::Settings(s) => news.settings = Some(s),
                        ControlEvent::GoAway(g) => news.goaway = Some(g),
                        _ => {}
                    })
                    .map_err(|e| e.code)?;
                data.drain(..used);
                if let Some(Uni::Control(t)) = self.streams.get_mut(&id) {
                    *t = data;
                }
                Ok(())
            }
            Some(Uni::QpackEncoder) => qdec
                .feed_encoder_stream(input)
                .map_err(|e| ErrorCode::from_qpack(e.code())),
            Some(Uni::QpackDecoder) => template
                .feed_decoder_stream(input)
                .map_err(|e| ErrorCode::from_qpack(e.code())),
        }
    }
}
