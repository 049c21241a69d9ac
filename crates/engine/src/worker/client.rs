//! A client's state that outlives its connections: the request slots (one per
//! allowed stream, reused, nothing allocated per request), the output buffer,
//! h2load's request accounting, and `fill`, which submits into free slots.

use std::time::{Duration, Instant};

use crate::conn::{AnySession, Connection};
use crate::pacing::{ClientPace, Pacer};
use crate::request::Prepared;
use crate::session::{Session, SubmitError};
use crate::stats::WorkerStats;

/// Initial capacity of a client's output buffer: a connection preface and a turn's
/// requests at `-m10` fit; a larger turn grows it once (the buffer is reused, so that
/// is not per request). It was 4096, which at `-c1000` was 4 MB of the client's memory
/// for bytes never written.
const OUT_CAPACITY: usize = 512;

#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    /// When the first byte of the request was written.
    pub(super) start: Instant,
    /// Wall-clock start in µs since the epoch (only with `--log-file`).
    pub(super) wall_us: u64,
    /// First final status (0 = none yet).
    pub(super) status: u16,
    pub(super) in_use: bool,
    /// Submitted while measuring (not during warm-up).
    pub(super) measured: bool,
    /// Paced runs: when the request was meant to start (its due time).
    pub(super) intended: Option<Instant>,
    /// Submitted while the connection was in early data (`--0rtt`): a `425 Too Early`
    /// answer sends it again instead of counting.
    pub(super) early: bool,
}

/// Per-client state that outlives connections (reused across reconnects).
pub(super) struct Core {
    pub(super) out: Vec<u8>,
    pub(super) out_pos: usize,
    pub(super) slots: Box<[Slot]>,
    pub(super) free: Vec<u32>,
    pub(super) unstamped: Vec<u32>,
    pub(super) unbounded: bool,
    pub(super) req_left: u64,
    pub(super) req_inflight: u32,
    pub(super) req_success: u64,
    pub(super) uri_idx: usize,
    pub(super) start: Option<Instant>,
    pub(super) end: Option<Instant>,
    pub(super) connect_start: Instant,
    pub(super) ttfb_done: bool,
    pub(super) completed_on_conn: u64,
    /// Bytes read on the connection since its last completed response (see
    /// `WorkerStats::response_bytes`).
    pub(super) read_since_completion: u64,
    pub(super) fails_without_progress: u32,
    pub(super) active_deadline: Option<Instant>,
    pub(super) finished: bool,
    /// Per-client schedule progress (`--rps`, timing script).
    pub(super) pace: ClientPace,
    /// The gate lets this client run (`-r`, stages).
    pub(super) active: bool,
    /// Switched off by the gate: submit nothing more, close once idle.
    pub(super) parked: bool,
    /// Between the windows of a standing run (`windows`): submit nothing, keep the
    /// connection open.
    pub(super) paused: bool,
    /// Intended starts of paced requests the server refused (retried first; at most `-m`).
    pub(super) retry: Vec<Instant>,
    /// Free slots are being held back since then (request coalescing).
    pub(super) held_since: Option<Instant>,
    /// The server ended the connection cleanly while no request was due: reconnect (to this
    /// address) when the next one is due rather than at once, so that the new connection is
    /// not itself closed idle before it carries anything.
    pub(super) reconnect_to: Option<usize>,
    /// Requests submitted on the current connection (`--reconnect-every`).
    pub(super) issued_on_conn: u64,
    /// `--reconnect-every N` (0: off): the connection carries N requests, then is replaced.
    pub(super) reconnect_every: u64,
    /// The connection's session runs in early data (`--0rtt`, handshake not complete).
    pub(super) early_phase: bool,
}

impl Core {
    /// The client has requests to send: work left and not switched off by the gate.
    pub(super) fn wants_requests(&self) -> bool {
        !self.parked && !self.paused && (self.unbounded || self.req_left > 0)
    }

    /// `--reconnect-every`: the connection carried its share; no more requests on it.
    pub(super) fn conn_used_up(&self) -> bool {
        self.reconnect_every > 0 && self.issued_on_conn >= self.reconnect_every
    }

    /// [`Core::wants_requests`] and a free slot to put one in.
    pub(super) fn could_fill(&self) -> bool {
        self.wants_requests() && !self.free.is_empty()
    }
}

pub(super) struct Client {
    pub(super) gen: u32,
    /// Queued for the end-of-turn write.
    pub(super) dirty: bool,
    pub(super) conn: Option<Connection>,
    pub(super) core: Core,
    /// HTTP/3: quinn-proto's figures of the client's last QUIC connection.
    pub(super) quic: crate::h3::stats::QuicConnSample,
}

impl Client {
    /// A client with `todo` requests, `m` slots, not connected.
    pub(super) fn new(todo: u64, m: u32, unbounded: bool, now: Instant) -> Client {
        Client {
            gen: 0,
            dirty: false,
            conn: None,
            quic: Default::default(),
            core: Core {
                out: Vec::with_capacity(OUT_CAPACITY),
                out_pos: 0,
                slots: vec![
                    Slot {
                        start: now,
                        wall_us: 0,
                        status: 0,
                        in_use: false,
                        measured: false,
                        intended: None,
                        early: false,
                    };
                    m as usize
                ]
                .into_boxed_slice(),
                free: (0..m).rev().collect(),
                unstamped: Vec::with_capacity(m as usize),
                unbounded,
                req_left: todo,
                req_inflight: 0,
                req_success: 0,
                uri_idx: 0,
                start: None,
                end: None,
                connect_start: now,
                ttfb_done: false,
                completed_on_conn: 0,
                read_since_completion: 0,
                fails_without_progress: 0,
                active_deadline: None,
                finished: false,
                pace: ClientPace::default(),
                active: true,
                parked: false,
                paused: false,
                retry: Vec::with_capacity(m as usize),
                held_since: None,
                reconnect_to: None,
                issued_on_conn: 0,
                reconnect_every: 0,
                early_phase: false,
            },
        }
    }
}

/// Submits requests while the client has work, a slot is free, the session
/// accepts and the pacer lets a request go (h2load submits
/// `min(req_left, max_concurrent_streams)` at connect and one more per closed
/// stream). Returns how many were submitted.
pub(super) fn fill(
    core: &mut Core,
    session: &mut AnySession,
    stats: &mut WorkerStats,
    prep: &Prepared,
    active_timeout: Option<Duration>,
    measuring: bool,
    pacer: &mut Pacer,
) -> u32 {
    let nuris = prep.len();
    let mut submitted = 0;
    while core.wants_requests() && !core.conn_used_up() && session.can_submit() {
        let Some(slot) = core.free.pop() else { break };
        let retried = core.retry.pop();
        let intended = match retried {
            Some(i) => Some(i),
            None => match pacer.take(&mut core.pace, &mut stats.run.pacing, measuring) {
                Some(i) => i,
                None => {
                    core.free.push(slot);
                    break;
                }
            },
        };
        match session.submit(slot, core.uri_idx, &mut core.out) {
            Ok(()) => {}
            Err(SubmitError::WouldBlock | SubmitError::Exhausted) => {
                core.free.push(slot);
                match retried {
                    Some(i) => core.retry.push(i),
                    None => {
                        pacer.untake(&mut core.pace, &mut stats.run.pacing, measuring, intended)
                    }
                }
                break;
            }
        }
        submitted += 1;
        core.uri_idx += 1;
        if core.uri_idx >= nuris {
            core.uri_idx = 0;
        }
        if let Some(sl) = core.slots.get_mut(slot as usize) {
            *sl = Slot {
                start: sl.start,
                wall_us: 0,
                status: 0,
                in_use: true,
                measured: measuring,
                intended,
                early: core.early_phase,
            };
        }
        core.issued_on_conn += 1;
        core.unstamped.push(slot);
        core.req_inflight += 1;
        if measuring {
            stats.run.requests.started += 1;
        }
        if !core.unbounded {
            core.req_left -= 1;
            if core.req_left == 0 {
                if let Some(t) = active_timeout {
                    core.active_deadline = Some(Instant::now() + t);
                }
            }
        }
    }
    submitted
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::h1::H1Session;

    fn prepared() -> Arc<Prepared> {
        let cfg = crate::BenchConfig::new(vec![
            crate::Target::parse("http://127.0.0.1/a").unwrap(),
            crate::Target::parse("http://127.0.0.1/b").unwrap(),
        ]);
        Arc::new(Prepared::new(&cfg).unwrap())
    }

    #[test]
    fn fill_submits_into_free_slots_up_to_the_work_left() {
        let prep = prepared();
        let mut client = Client::new(5, 3, false, Instant::now());
        let mut session = AnySession::H1(H1Session::new(Arc::clone(&prep), 3, false));
        let mut stats = WorkerStats::new(5);
        let mut pacer = Pacer::Closed;
        let core = &mut client.core;
        let n = fill(
            core,
            &mut session,
            &mut stats,
            &prep,
            None,
            true,
            &mut pacer,
        );
        assert_eq!(n, 3, "one per slot (pipelining depth 3)");
        assert_eq!(
            (core.req_left, core.req_inflight, stats.run.requests.started),
            (2, 3, 3)
        );
        assert!(core.free.is_empty());
        assert_eq!(
            core.unstamped.len(),
            3,
            "stamped by the write that carries them"
        );
        assert!(core.slots.iter().all(|s| s.in_use && s.measured));
        // URIs taken in turn: /a, /b, /a.
        let text = String::from_utf8_lossy(&core.out);
        assert_eq!(text.matches("GET /a ").count(), 2, "{text}");
        assert_eq!(text.matches("GET /b ").count(), 1, "{text}");
        // No free slot: nothing more, and nothing allocated.
        assert_eq!(
            fill(
                core,
                &mut session,
                &mut stats,
                &prep,
                None,
                true,
                &mut pacer
            ),
            0
        );
    }

    #[test]
    fn last_request_arms_the_active_timeout_and_warm_up_is_not_measured() {
        let prep = prepared();
        let mut client = Client::new(2, 4, false, Instant::now());
        let mut session = AnySession::H1(H1Session::new(Arc::clone(&prep), 4, false));
        let mut stats = WorkerStats::new(2);
        let core = &mut client.core;
        let t = Some(Duration::from_secs(5));
        let n = fill(
            core,
            &mut session,
            &mut stats,
            &prep,
            t,
            false,
            &mut Pacer::Closed,
        );
        assert_eq!(n, 2);
        assert_eq!(core.req_left, 0);
        assert!(core.active_deadline.is_some());
        assert_eq!(stats.run.requests.started, 0, "not measuring: not counted");
        assert!(core.slots.iter().filter(|s| s.in_use).all(|s| !s.measured));
        assert!(!core.wants_requests());
    }

    #[test]
    fn parked_or_unbounded_clients() {
        let mut c = Client::new(0, 2, true, Instant::now());
        assert!(
            c.core.wants_requests() && c.core.could_fill(),
            "-D runs never run out"
        );
        c.core.parked = true;
        assert!(!c.core.wants_requests());
    }
}
