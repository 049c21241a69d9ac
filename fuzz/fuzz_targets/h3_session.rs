//! An HTTP/3 session on in-memory streams, built from the wire crate's pieces the way the
//! server's `http3::conn::H3Conn` uses them (the QUIC connection itself is not simulated):
//! the peer's unidirectional streams typed with `PeerStreams`, its control stream read with
//! `ControlReader` (SETTINGS applied to our QPACK encoder), its QPACK encoder stream fed to
//! our `Decoder` and its decoder stream to our `Encoder`, request streams read with
//! `RequestStream` (blocked sections resumed once the encoder stream releases them, the
//! bytes behind them queued), stream errors resetting one stream, connection errors ending
//! the session. As a server, every complete request is answered: the response head is
//! QPACK-encoded with the dynamic table on (it echoes request fields, so it inserts).
//!
//! Input layout: one configuration octet (bit 0: our role, server or client; bit 1: the
//! peer is "honest" about acknowledgements; bits 2-3: max field section size; bit 4: HEAD
//! request, client role), then records of (op octet, length octet, bytes). `op & 3`: 0 =
//! bytes on bidirectional stream `4 * (op >> 3)`, 1 = bytes on the peer's unidirectional
//! stream `op >> 3`, 2 = FIN, 3 = reset (`op & 4`: the unidirectional stream).
//!
//! Oracles beyond "no panic": every request/response header section we decode is
//! re-encoded by a QPACK encoder (dynamic table on) and decoded by a second decoder into the
//! same list; no more sections blocked than SETTINGS_QPACK_BLOCKED_STREAMS; buffered stream
//! bytes never exceed what was fed. In honest mode the peer's decoder stream is not taken
//! from the input but produced by a real peer `Decoder` (with the capacity the peer's
//! SETTINGS advertised) that reads our encoder stream and decodes every response head we
//! send: it must decode to the fields we encoded, never blocked beyond the peer's limit.
#![no_main]

use std::collections::HashMap;

use h2lab_wire::h3::control::{ControlEvent, ControlReader};
use h2lab_wire::h3::fields::{SectionFacts, SectionKind};
use h2lab_wire::h3::request::{RequestEvents, RequestStream};
use h2lab_wire::h3::stream::{PeerStreams, UniAction, UniStreamType};
use h2lab_wire::h3::{Role, Scope};
use h2lab_wire::qpack::{Decoded, Decoder, Encoder, EncoderConfig};
use libfuzzer_sys::fuzz_target;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

const QPACK_TABLE: usize = 4096;
const QPACK_BLOCKED: usize = 16;

#[derive(Default)]
struct Sink {
    sections: Vec<Fields>,
    current: Fields,
    body: u64,
    ended: bool,
}

impl RequestEvents for Sink {
    fn field(&mut self, name: &[u8], value: &[u8]) {
        self.current.push((name.to_vec(), value.to_vec()));
    }
    fn section_done(&mut self, _: SectionKind, _: SectionFacts, _: bool) {
        self.sections.push(std::mem::take(&mut self.current));
    }
    fn data(&mut self, chunk: &[u8]) {
        self.body += chunk.len() as u64;
    }
    fn end(&mut self) {
        self.ended = true;
    }
}

struct Req {
    recv: RequestStream,
    sink: Sink,
    inbuf: Vec<u8>,
    fin: bool,
    checked: usize,
    answered: bool,
}

enum Uni {
    Header(Vec<u8>),
    Control(Vec<u8>),
    Encoder,
    Decoder,
    Ignored,
}

/// The re-encode oracle: fields → encoder (dynamic table) → decoder → the same fields.
struct Roundtrip {
    enc: Encoder,
    dec: Decoder,
}

impl Roundtrip {
    fn new() -> Self {
        let mut enc = Encoder::new(EncoderConfig::default());
        enc.set_peer_settings(4096, 4);
        let mut dec = Decoder::new(4096, 4);
        dec.set_max_field_section_size(usize::MAX);
        Roundtrip { enc, dec }
    }

    fn check(&mut self, id: u64, fields: &Fields) {
        let (mut s, mut es) = (Vec::new(), Vec::new());
        self.enc.encode(
            id,
            fields.iter().map(|(n, v)| (&n[..], &v[..])),
            &mut s,
            &mut es,
        );
        self.dec
            .feed_encoder_stream(&es)
            .expect("our encoder stream");
        let mut again = Fields::new();
        let r = self
            .dec
            .decode_section(id, &s, |f| again.push((f.name.to_vec(), f.value.to_vec())))
            .expect("our section");
        assert_eq!(r, Decoded::Done);
        assert_eq!(&again, fields);
        let mut back = Vec::new();
        self.dec.take_decoder_stream(&mut back);
        self.enc
            .feed_decoder_stream(&back)
            .expect("our decoder stream");
    }
}

struct Session {
    local: Role,
    honest: bool,
    head: bool,
    uni: HashMap<u64, Uni>,
    peer_streams: PeerStreams,
    control_in: ControlReader,
    qdec: Decoder,
    qenc: Encoder,
    reqs: HashMap<u64, Req>,
    /// Our encoder stream, not yet read by the peer.
    encoder_out: Vec<u8>,
    /// The honest peer's decoder (created with its SETTINGS).
    peer_dec: Option<Decoder>,
    peer_blocked: usize,
    roundtrip: Roundtrip,
    fed: usize,
}

type Err = Option<(Scope, u64)>;

impl Session {
    fn new(cfg: u8) -> Self {
        let local = if cfg & 1 == 0 {
            Role::Server
        } else {
            Role::Client
        };
        let limit = [64usize, 1024, 16 * 1024, 1 << 20][usize::from((cfg >> 2) & 3)];
        let mut qdec = Decoder::new(QPACK_TABLE, QPACK_BLOCKED);
        qdec.set_max_field_section_size(limit);
        Session {
            local,
            honest: cfg & 2 != 0,
            head: cfg & 0x10 != 0,
            uni: HashMap::new(),
            peer_streams: PeerStreams::new(local),
            control_in: ControlReader::new(local),
            qdec,
            qenc: Encoder::new(EncoderConfig {
                use_dynamic_table: true,
                max_table_capacity: 4096,
            }),
            reqs: HashMap::new(),
            encoder_out: Vec::new(),
            peer_dec: None,
            peer_blocked: 0,
            roundtrip: Roundtrip::new(),
            fed: 0,
        }
    }

    fn req(&mut self, id: u64) -> Option<&mut Req> {
        if !self.reqs.contains_key(&id) {
            let mut recv = RequestStream::new(self.local, id);
            recv.set_request_was_head(self.head);
            let r = Req {
                recv,
                sink: Sink::default(),
                inbuf: Vec::new(),
                fin: false,
                checked: 0,
                answered: false,
            };
            self.reqs.insert(id, r);
        }
        self.reqs.get_mut(&id)
    }

    fn feed_request(&mut self, id: u64, bytes: &[u8], fin: bool) -> Err {
        let r = self.reqs.get_mut(&id)?;
        if r.sink.ended {
            return None;
        }
        r.fin |= fin;
        r.inbuf.extend_from_slice(bytes);
        let input = std::mem::take(&mut r.inbuf);
        let res = r.recv.recv(&input, r.fin, &mut self.qdec, &mut r.sink);
        let used = res.as_ref().map_or(0, |p| p.consumed);
        assert!(used <= input.len());
        r.inbuf = input;
        r.inbuf.drain(..used);
        assert!(r.inbuf.len() <= self.fed);
        res.err().map(|e| (e.scope(), e.code().0))
    }

    fn feed_uni(&mut self, id: u64, bytes: &[u8], fin: bool) -> Err {
        let conn_err = |code: u64| Some((Scope::Connection, code));
        let mut input: &[u8] = bytes;
        let owned: Vec<u8>;
        let uni = self
            .uni
            .entry(id)
            .or_insert_with(|| Uni::Header(Vec::new()));
        if let Uni::Header(buf) = uni {
            buf.extend_from_slice(bytes);
            let (ty, n) = UniStreamType::parse(buf)?;
            let mut rest = std::mem::take(buf);
            rest.drain(..n);
            owned = rest;
            let next = match self.peer_streams.open(id, ty) {
                Ok(UniAction::Control) => Uni::Control(Vec::new()),
                Ok(UniAction::QpackEncoder) => Uni::Encoder,
                Ok(UniAction::QpackDecoder) => Uni::Decoder,
                Ok(UniAction::Push(_) | UniAction::Ignore(_)) => Uni::Ignored,
                Err(e) => return conn_err(e.code.0),
            };
            self.uni.insert(id, next);
            input = &owned;
        }
        match self.uni.get_mut(&id)? {
            Uni::Header(_) | Uni::Ignored => None,
            Uni::Control(tail) => {
                let mut data = std::mem::take(tail);
                data.extend_from_slice(input);
                let mut settings = None;
                let res = self.control_in.recv(&data, fin, |ev| {
                    if let ControlEvent::Settings(s) = ev {
                        settings = Some(s);
                    }
                });
                if let Some(s) = settings {
                    let cap = usize::try_from(s.qpack_max_table_capacity).unwrap_or(usize::MAX);
                    let blocked = usize::try_from(s.qpack_blocked_streams).unwrap_or(usize::MAX);
                    self.qenc.set_peer_settings(cap, blocked);
                    let mut d = Decoder::new(cap, blocked);
                    d.set_max_field_section_size(usize::MAX);
                    self.peer_dec = Some(d);
                    self.peer_blocked = blocked;
                }
                match res {
                    Ok(used) => {
                        data.drain(..used);
                        assert!(data.len() <= self.fed);
                        if let Some(Uni::Control(t)) = self.uni.get_mut(&id) {
                            *t = data;
                        }
                        None
                    }
                    Err(e) => conn_err(e.code.0),
                }
            }
            Uni::Encoder => {
                if fin {
                    return conn_err(0x104);
                }
                self.qdec
                    .feed_encoder_stream(input)
                    .err()
                    .map(|e| (Scope::Connection, e.code().value()))
            }
            Uni::Decoder => {
                if fin {
                    return conn_err(0x104);
                }
                if self.honest {
                    // The honest peer's decoder stream comes from `peer_dec`.
                    return None;
                }
                self.qenc
                    .feed_decoder_stream(input)
                    .err()
                    .map(|e| (Scope::Connection, e.code().value()))
            }
        }
    }

    /// Decodes sections the encoder stream released and the bytes queued behind them.
    fn unblock(&mut self) -> Result<(), ()> {
        while let Some(sid) = self.qdec.next_unblocked() {
            let Some(r) = self.reqs.get_mut(&sid) else {
                self.qdec.cancel_stream(sid);
                continue;
            };
            let err = match r.recv.resume(&mut self.qdec, &mut r.sink) {
                Ok(_) => {
                    let fin = r.fin;
                    let rest = std::mem::take(&mut r.inbuf);
                    self.feed_request(sid, &rest, fin)
                }
                Err(e) => Some((e.scope(), e.code().0)),
            };
            self.on_err(sid, err)?;
        }
        Ok(())
    }

    fn reset(&mut self, id: u64) {
        self.qdec.cancel_stream(id);
        self.reqs.remove(&id);
    }

    fn on_err(&mut self, id: u64, err: Err) -> Result<(), ()> {
        match err {
            Some((Scope::Connection, _)) => Err(()),
            Some((Scope::Stream, _)) => {
                self.reset(id);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Oracles on what request streams decoded, and the answer to complete requests.
    fn after(&mut self) -> Result<(), ()> {
        assert!(self.qdec.blocked_streams() <= QPACK_BLOCKED);
        let mut answer = Vec::new();
        for (&id, r) in self.reqs.iter_mut() {
            while r.checked < r.sink.sections.len() {
                self.roundtrip.check(id, &r.sink.sections[r.checked]);
                r.checked += 1;
            }
            if self.local == Role::Server && r.sink.ended && !r.answered {
                r.answered = true;
                answer.push(id);
            }
        }
        answer.sort_unstable();
        for id in answer {
            self.respond(id)?;
        }
        Ok(())
    }

    /// Encodes a response head for request `id` (echoing request fields, so the dynamic
    /// table gets inserts) and, in honest mode, has the peer decode it.
    fn respond(&mut self, id: u64) -> Result<(), ()> {
        let r = &self.reqs[&id];
        let mut fields: Fields = vec![
            (b":status".to_vec(), b"200".to_vec()),
            (
                b"content-length".to_vec(),
                r.sink.body.to_string().into_bytes(),
            ),
            (b"server".to_vec(), b"h2lab".to_vec()),
        ];
        if let Some(head) = r.sink.sections.first() {
            for (n, v) in head.iter().filter(|(n, _)| !n.starts_with(b":")).take(4) {
                fields.push((n.clone(), v.clone()));
            }
        }
        let mut section = Vec::new();
        self.qenc.encode(
            id,
            fields.iter().map(|(n, v)| (&n[..], &v[..])),
            &mut section,
            &mut self.encoder_out,
        );
        if !self.honest {
            self.encoder_out.clear();
            return Ok(());
        }
        let Some(peer) = self.peer_dec.as_mut() else {
            // No SETTINGS yet: the encoder must not have used the dynamic table.
            assert!(self.encoder_out.is_empty());
            let mut d = Decoder::new(0, 0);
            d.set_max_field_section_size(usize::MAX);
            let mut got = Fields::new();
            let res = d.decode_section(id, &section, |f| {
                got.push((f.name.to_vec(), f.value.to_vec()))
            });
            assert_eq!(res, Ok(Decoded::Done));
            assert_eq!(got, fields);
            return Ok(());
        };
        peer.feed_encoder_stream(&self.encoder_out)
            .expect("peer reads our encoder stream");
        self.encoder_out.clear();
        let mut got = Fields::new();
        let res = peer
            .decode_section(id, &section, |f| {
                got.push((f.name.to_vec(), f.value.to_vec()))
            })
            .expect("peer decodes our section");
        // The encoder stream went first, so nothing can be blocked.
        assert_eq!(res, Decoded::Done);
        assert_eq!(got, fields);
        assert!(peer.blocked_streams() <= self.peer_blocked);
        let mut back = Vec::new();
        peer.take_decoder_stream(&mut back);
        self.qenc
            .feed_decoder_stream(&back)
            .expect("our encoder reads the peer's acknowledgements");
        Ok(())
    }

    fn step(&mut self, op: u8, bytes: &[u8]) -> Result<(), ()> {
        self.fed += bytes.len();
        let n = u64::from(op >> 3);
        let bidi = 4 * n;
        // Peer-initiated unidirectional stream IDs: client 2 mod 4, server 3 mod 4.
        let uni = 4 * n + if self.local == Role::Server { 2 } else { 3 };
        match op & 3 {
            0 => {
                self.req(bidi);
                let e = self.feed_request(bidi, bytes, false);
                self.on_err(bidi, e)?;
            }
            1 => {
                let e = self.feed_uni(uni, bytes, false);
                self.on_err(uni, e)?;
            }
            2 if op & 4 == 0 => {
                self.req(bidi);
                let e = self.feed_request(bidi, &[], true);
                self.on_err(bidi, e)?;
            }
            2 => {
                let e = self.feed_uni(uni, &[], true);
                self.on_err(uni, e)?;
            }
            _ if op & 4 == 0 => self.reset(bidi),
            _ => {
                if self.uni.remove(&uni).is_some() && self.peer_streams.closed(uni).is_err() {
                    return Err(());
                }
            }
        }
        self.unblock()?;
        self.after()
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&cfg, mut rest)) = data.split_first() else {
        return;
    };
    let mut s = Session::new(cfg);
    while let Some((&op, body)) = rest.split_first() {
        let Some((&len, body)) = body.split_first() else {
            return;
        };
        let n = usize::from(len).min(body.len());
        let (bytes, tail) = body.split_at(n);
        rest = tail;
        if s.step(op, bytes).is_err() {
            return;
        }
    }
});
