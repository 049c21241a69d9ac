//! RFC 9218 scheduling end to end, deterministically (ordering of completions, no clock):
//! a client with a small receive buffer is a slow link; many incremental "image" responses
//! are in flight when a late urgency-0 request arrives. With priorities on, the urgent
//! response completes before every image queued earlier; with `--priorities off`
//! (round-robin) it completes after all of them.
//!
//! Why it is deterministic: before the urgent request is sent, the server can only have
//! committed what fits in the client's receive window, the socket's unsent bytes
//! (TCP_NOTSENT_LOWAT, forced on here although the RTT is a loopback one) and its bounded
//! output queue — a small part of each image, spread
//! round-robin — so no image can finish first when the scheduler serves urgency 0 next;
//! with round-robin the urgent response (4x an image) gets one frame per pass and is last.

mod common;

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::h2_client::{H2Client, Sink};
use common::start;
use h2lab_server::sched::PriorityMode;
use h2lab_wire::h2::{Events, HeadersDone, LocalSettings, StreamId};

const IMAGES: usize = 8;

#[derive(Default)]
struct Recorder {
    /// Bytes received per stream id.
    got: std::collections::HashMap<u32, usize>,
    /// Stream ids in the order their responses ended.
    ended: Vec<u32>,
    statuses: Vec<u16>,
    /// The server's SETTINGS arrived (and were acknowledged).
    settings: bool,
}

impl Events for Recorder {
    fn header(&mut self, _: StreamId, _: &[u8], _: &[u8]) {}
    fn headers_done(&mut self, _: StreamId, d: HeadersDone) {
        if let Some(s) = d.status {
            self.statuses.push(s);
        }
    }
    fn settings_changed(&mut self) {
        self.settings = true;
    }
    fn data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) {
        *self.got.entry(stream.get()).or_default() += data.len();
        if end_stream {
            self.ended.push(stream.get());
        }
    }
}

impl Sink for Recorder {
    fn settings_seen(&self) -> bool {
        self.settings
    }
}

type Client = H2Client<Recorder>;

/// A connection whose receive buffer is small: the server can run ahead of what the client
/// read by that much only (plus what the server itself holds).
fn connect(addr: SocketAddr) -> Client {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.set_recv_buffer_size(16 * 1024).unwrap();
    s.connect(&addr.into()).unwrap();
    let sock: TcpStream = s.into();
    sock.set_nodelay(true).unwrap();
    // Flow control out of the way: the socket is the bottleneck.
    let local = LocalSettings {
        initial_window_size: 16 << 20,
        connection_window: 64 << 20,
        ..LocalSettings::client()
    };
    // Handshake first (as a browser's requests follow the server's SETTINGS on a long
    // path): the server takes its RTT sample from our ACK before the requests arrive.
    H2Client::handshake(sock, local)
}

/// `GET path` with a `priority` header; returns the stream id.
fn request(c: &mut Client, path: &str, priority: &str) -> u32 {
    c.request(&[
        (b":method", b"GET"),
        (b":scheme", b"http"),
        (b":authority", b"localhost"),
        (b":path", path.as_bytes()),
        (b"priority", priority.as_bytes()),
    ])
}

/// How the urgent request signals its priority.
#[derive(Clone, Copy)]
enum Signal {
    /// `priority: u=0` request header.
    Header,
    /// A PRIORITY_UPDATE sent before the request (for a stream still idle), the request
    /// itself saying nothing.
    EarlyUpdate,
}

/// Runs the scenario; returns the completion order and the urgent stream's id.
fn scenario(mode: PriorityMode) -> (Vec<u32>, u32, Vec<u32>) {
    scenario_with(mode, Signal::Header)
}

fn scenario_with(mode: PriorityMode, signal: Signal) -> (Vec<u32>, u32, Vec<u32>) {
    let server = start(|c| {
        c.priorities = mode;
        // The client is on loopback: apply TCP_NOTSENT_LOWAT whatever the RTT, as on the
        // slow link this client stands for.
        c.notsent_lowat_min_rtt = Duration::ZERO;
    });
    let mut c = connect(server.addr().unwrap());
    let images: Vec<u32> = (0..IMAGES)
        .map(|_| request(&mut c, "/data?size=256k", "u=5, i"))
        .collect();
    // Read until every image is under way (has delivered some data).
    while !images.iter().all(|id| c.sink.got.contains_key(id)) {
        c.read_once();
    }
    // The late, urgent request (a render-blocking script).
    let urgent = match signal {
        Signal::Header => request(&mut c, "/data?size=1m", "u=0"),
        Signal::EarlyUpdate => {
            let next = images.last().unwrap() + 2;
            h2lab_wire::frame::PriorityUpdate {
                prioritized_stream_id: StreamId::new(next),
                field_value: b"u=0",
            }
            .encode(&mut c.out);
            let id = request(&mut c, "/data?size=1m", "");
            assert_eq!(id, next);
            id
        }
    };
    while c.sink.ended.len() < IMAGES + 1 {
        c.read_once();
    }
    assert!(c.sink.statuses.iter().all(|&s| s == 200));
    assert_eq!(c.sink.got[&urgent], 1 << 20);
    for id in &images {
        assert_eq!(c.sink.got[id], 256 << 10);
    }
    (c.sink.ended.clone(), urgent, images)
}

#[test]
fn urgent_response_overtakes_incremental_images_with_rfc9218() {
    let (ended, urgent, images) = scenario(PriorityMode::Rfc9218);
    assert_eq!(
        ended.first(),
        Some(&urgent),
        "urgent stream {urgent} must complete before the images {images:?}: {ended:?}"
    );
}

#[test]
fn urgent_response_waits_its_turn_without_priorities() {
    let (ended, urgent, images) = scenario(PriorityMode::Off);
    assert_eq!(
        ended.last(),
        Some(&urgent),
        "round-robin: urgent stream {urgent} (4x an image) ends after {images:?}: {ended:?}"
    );
}

#[test]
fn priority_update_for_a_stream_not_yet_opened_applies_when_it_opens() {
    let (ended, urgent, images) = scenario_with(PriorityMode::Rfc9218, Signal::EarlyUpdate);
    assert_eq!(
        ended.first(),
        Some(&urgent),
        "urgent stream {urgent} must complete before the images {images:?}: {ended:?}"
    );
}
