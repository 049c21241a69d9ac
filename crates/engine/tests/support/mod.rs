//! The HTTP/3 test harness shared by `h3.rs` and `h3_qpack.rs`: client sessions
//! ([`H3Session`]) on the QUIC shell, counting what they report, in one poll loop that can
//! also drive a scripted server ([`Peer`]) on its own shell. Bounded by a 60 s deadline.

#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use h2lab_engine::h3::{quic_client_config, H3Session, QpackSettings};
use h2lab_engine::session::SessionEvents;
use h2lab_quic::quinn_proto::{Connection, ConnectionHandle};
use h2lab_quic::{ConnApp, Shell, UdpIo};
use h2lab_server::{RunningServer, ServerConfig};
use h2lab_wire::qpack::RequestTemplate;
use mio::{Events, Interest, Poll, Registry, Token};

/// What the sessions of one run reported (the tests' stand-in for the worker's statistics).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub started: u64,
    pub completed: u64,
    /// Final statuses by class: 2xx, 3xx, 4xx, 5xx.
    pub status: [u64; 4],
    /// Final statuses that are exactly 200, and the others.
    pub status_200: u64,
    pub other_status: u64,
    /// The body bytes, kept only with [`Run::keep_body`].
    pub body: Vec<u8>,
    pub body_bytes: u64,
    /// Encoded field-section bytes.
    pub header_wire: u64,
    pub reset: u64,
    pub refused: u64,
    pub goaways: u64,
    /// In flight when the connection ended.
    pub lost: u64,
    /// The HTTP/3 error codes sessions closed with (empty: no protocol error).
    pub errors: Vec<u64>,
    /// The most sections blocked at once on a connection.
    pub sections_blocked: u64,
    /// The client decoder's insert count (the most of any connection).
    pub decoder_inserts: u64,
    /// Requests referenced the client's encoder table.
    pub requests_used_table: bool,
}

impl Counts {
    /// Requests answered, reset, refused or lost.
    pub fn finished(&self) -> u64 {
        self.completed + self.reset + self.refused + self.lost
    }
}

/// When the client sessions close their connections themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Close {
    /// Only on the server's GOAWAY; the run ends once every request is accounted for.
    OnGoaway,
    /// Also once their work is done (H3_NO_ERROR); the run ends when they are closed.
    WhenDone,
    /// As `WhenDone`, once the peer received decoder-stream bytes (a close at once could
    /// discard them: QUIC does not deliver stream data after a close).
    AfterPeerHeardDecoder,
}

/// Requests left to send, the close policy and the counts (the shell's context).
struct Work {
    todo: u64,
    keep_body: bool,
    close: Close,
    counts: Counts,
}

impl SessionEvents for Work {
    fn status(&mut self, _slot: u32, status: u16) {
        if let Some(c) = self
            .counts
            .status
            .get_mut(usize::from(status / 100).wrapping_sub(2))
        {
            *c += 1;
        }
        if status == 200 {
            self.counts.status_200 += 1;
        } else {
            self.counts.other_status += 1;
        }
    }
    fn header_bytes(&mut self, wire: usize, _decoded: usize) {
        self.counts.header_wire += wire as u64;
    }
    fn body(&mut self, _slot: u32, len: usize) {
        self.counts.body_bytes += len as u64;
    }
    fn body_data(&mut self, _slot: u32, chunk: &[u8]) {
        if self.keep_body {
            self.counts.body.extend_from_slice(chunk);
        }
    }
    fn complete(&mut self, _slot: u32) {
        self.counts.completed += 1;
    }
    fn reset(&mut self, _slot: u32, _code: u32) {
        self.counts.reset += 1;
    }
    fn refused(&mut self, _slot: u32) {
        self.counts.refused += 1;
    }
    fn goaway(&mut self, _last_stream_id: u32, _code: u32) {
        self.counts.goaways += 1;
    }
    fn push_refused(&mut self) {}
}

/// A client session on the shell, submitting while there is work (slots are not reused).
struct Client {
    session: H3Session,
    ended: bool,
}

impl ConnApp for Client {
    type Ctx = Work;
    fn drive(&mut self, conn: &mut Connection, work: &mut Work, _now: Instant) {
        self.session.on_quic(conn, work);
        while work.todo > 0 && self.session.can_submit() {
            let slot = work.counts.started as u32;
            if self.session.submit(conn, slot, 0).is_err() {
                break;
            }
            work.todo -= 1;
            work.counts.started += 1;
        }
        self.session.flush(conn);
        let c = &mut work.counts;
        c.sections_blocked = c.sections_blocked.max(self.session.sections_blocked());
        c.decoder_inserts = c.decoder_inserts.max(self.session.decoder_insert_count());
        c.requests_used_table |= self.session.requests_use_dynamic_table();
        let done = work.close == Close::WhenDone && work.todo == 0;
        if self.session.wants_close() || (done && self.session.in_flight() == 0) {
            self.session.terminate(conn);
        }
        if self.session.is_closed() && !self.ended {
            self.ended = true;
            c.lost += u64::from(self.session.in_flight());
            c.errors.extend(self.session.error().map(|e| e.0));
        }
    }
    fn deadline(&self) -> Option<Instant> {
        None
    }
    fn on_shutdown(&mut self, conn: &mut Connection, _now: Instant) {
        self.session.terminate(conn);
    }
}

/// A scripted server on its own shell, driven in the client's loop.
pub trait Peer {
    /// Registers its socket for readability.
    fn register(&mut self, registry: &Registry, token: Token);
    /// Drives its connections (timers, sending).
    fn drive(&mut self);
    /// Its shell's next timer.
    fn next_deadline(&mut self) -> Option<Instant>;
    /// Reads what arrived, then drives.
    fn read(&mut self);
    /// Whether it has received decoder-stream bytes from the client.
    fn heard_decoder(&self) -> bool;
}

/// One run: `n` requests on `c` connections to `addr` with `m` streams each.
pub struct Run<'p> {
    pub addr: SocketAddr,
    pub template: RequestTemplate,
    pub qpack: QpackSettings,
    pub n: u64,
    pub c: usize,
    pub m: u32,
    /// Keep the body bytes in [`Counts::body`].
    pub keep_body: bool,
    pub close: Close,
    pub peer: Option<&'p mut dyn Peer>,
}

impl Run<'_> {
    /// `n` requests from `template`, static-only QPACK, closing on GOAWAY only, no peer.
    pub fn new(addr: SocketAddr, template: RequestTemplate, n: u64, c: usize, m: u32) -> Self {
        Run {
            addr,
            template,
            qpack: QpackSettings::STATIC,
            n,
            c,
            m,
            keep_body: false,
            close: Close::OnGoaway,
            peer: None,
        }
    }

    /// Runs it; `on_turn` sees the counts every loop turn (to stop the server mid-run).
    pub fn run(mut self, mut on_turn: impl FnMut(&Counts)) -> Counts {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut shell: Shell<Client> = Shell::new(UdpIo::new(sock, true).unwrap(), None, self.c);
        let mut poll = Poll::new().unwrap();
        poll.registry()
            .register(
                shell.io().socket(),
                Token(0),
                Interest::READABLE | Interest::WRITABLE,
            )
            .unwrap();
        if let Some(p) = self.peer.as_deref_mut() {
            p.register(poll.registry(), Token(1));
        }
        let cfg = quic_client_config(true, &Default::default()).unwrap();
        let now = Instant::now();
        let handles: Vec<ConnectionHandle> = (0..self.c)
            .map(|_| {
                let session = H3Session::new(self.template.clone(), self.m).with_qpack(self.qpack);
                shell
                    .connect(
                        cfg.clone(),
                        self.addr,
                        "localhost",
                        now,
                        Client {
                            session,
                            ended: false,
                        },
                    )
                    .unwrap()
            })
            .collect();
        let mut work = Work {
            todo: self.n,
            keep_body: self.keep_body,
            close: self.close,
            counts: Counts::default(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut events = Events::with_capacity(16);
        loop {
            assert!(
                Instant::now() < deadline,
                "run did not finish: {:?}",
                work.counts
            );
            shell.drive(Instant::now(), &mut work);
            if let Some(p) = self.peer.as_deref_mut() {
                p.drive();
            }
            on_turn(&work.counts);
            let c = &work.counts;
            let accounted = work.todo == 0 && c.finished() == c.started;
            if shell.connections() == 0 || (work.close == Close::OnGoaway && accounted) {
                break;
            }
            let mut next = shell.next_deadline();
            if let Some(p) = self.peer.as_deref_mut() {
                next = match (next, p.next_deadline()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            let timeout = next
                .map(|t| t.saturating_duration_since(Instant::now()))
                .unwrap_or(Duration::from_millis(100))
                .min(Duration::from_millis(100));
            poll.poll(&mut events, Some(timeout)).unwrap();
            for ev in events.iter() {
                if ev.token() == Token(0) && ev.is_writable() {
                    shell.on_writable();
                }
            }
            while shell
                .read(Instant::now(), &mut work, |_| unreachable!())
                .unwrap()
            {}
            if let Some(p) = self.peer.as_deref_mut() {
                p.read();
                if work.close == Close::AfterPeerHeardDecoder && p.heard_decoder() {
                    work.close = Close::WhenDone;
                    for h in &handles {
                        shell.wake(*h);
                    }
                }
            }
        }
        work.counts
    }
}

/// `h2lab serve --tls --h3` on 127.0.0.1 (a fresh certificate in the returned directory),
/// configured further by `f`.
pub fn start_serve(f: impl FnOnce(&mut ServerConfig)) -> (RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ServerConfig::local();
    c.listen = None;
    c.tls_listen = Some("127.0.0.1:0".parse().unwrap());
    c.cert_dir = Some(dir.path().to_path_buf());
    c.h3 = true;
    f(&mut c);
    (h2lab_server::spawn(c).unwrap(), dir)
}

/// A GET template: `:method`, `:scheme https`, `:authority`, `user-agent: h2lab-test`, then
/// `extra`, for `path`, encoding as `qpack` allows.
pub fn template(
    authority: &str,
    path: &str,
    extra: &[(&[u8], &[u8])],
    qpack: QpackSettings,
) -> RequestTemplate {
    let fields = [
        (&b":method"[..], &b"GET"[..]),
        (b":scheme", b"https"),
        (b":authority", authority.as_bytes()),
        (b"user-agent", b"h2lab-test"),
    ];
    RequestTemplate::new(
        fields.into_iter().chain(extra.iter().copied()),
        [path.as_bytes()],
        qpack.encoder_config(),
    )
    .unwrap()
}
