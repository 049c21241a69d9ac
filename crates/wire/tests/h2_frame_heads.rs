//! `Events::frame_received`: every complete frame's header, once, before it is handled, and
//! nothing for a frame still incomplete (the byte accounting of pushes relies on it).

use h2lab_wire::frame::{FrameHeader, FrameKind};
use h2lab_wire::h2::testing as t;
use h2lab_wire::h2::{Connection, Events, Limits, LocalSettings, Role, StreamId};

#[derive(Default)]
struct Heads {
    heads: Vec<FrameHeader>,
    pings: usize,
}

impl Events for Heads {
    fn header(&mut self, _stream: StreamId, _name: &[u8], _value: &[u8]) {}
    fn frame_received(&mut self, head: &FrameHeader) {
        self.heads.push(*head);
    }
    fn ping_ack(&mut self, _payload: [u8; 8]) {
        // The PING ACK's header was reported before its event.
        assert_eq!(self.heads.last().map(|h| h.kind), Some(FrameKind::Ping));
        self.pings += 1;
    }
}

#[test]
fn every_complete_frame_is_reported_once_before_its_events() {
    let mut conn = Connection::new(Role::Client, LocalSettings::client(), Limits::new());
    let mut out = Vec::new();
    conn.start(&mut out);
    let mut b = Vec::new();
    t::settings(&mut b, &[]);
    t::settings_ack(&mut b);
    t::ping(&mut b, true, [7; 8]);
    let whole = b.len();
    // Half of one more PING: not complete, not consumed, not reported.
    t::ping(&mut b, false, [1; 8]);
    let mut sink = Heads::default();
    let n = conn.recv(&b[..whole + 5], &mut out, &mut sink).unwrap();
    assert_eq!(n, whole);
    let kinds: Vec<FrameKind> = sink.heads.iter().map(|h| h.kind).collect();
    assert_eq!(
        kinds,
        [FrameKind::Settings, FrameKind::Settings, FrameKind::Ping]
    );
    assert_eq!(sink.pings, 1);
    // The headers add up to the bytes consumed.
    let octets: usize = sink.heads.iter().map(|h| 9 + h.length as usize).sum();
    assert_eq!(octets, n);
    assert!(sink.heads.iter().all(|h| h.stream_id == StreamId::new(0)));
    // The rest of the PING completes it: reported then.
    let n = conn.recv(&b[whole..], &mut out, &mut sink).unwrap();
    assert_eq!(n, b.len() - whole);
    assert_eq!(sink.heads.len(), 4);
}
