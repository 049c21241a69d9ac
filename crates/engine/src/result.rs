//! What a run produces: counters with h2load's meanings, histograms, TLS details.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::config::AppProtocol;

/// Request counters, with the meanings of h2load's `requests:` line.
///
/// Invariants after a run that was not interrupted: `succeeded + failed == total`
/// for `-n` runs (requests never issued because a client gave up count as
/// failed and errored, like h2load), `errored <= failed`, `timeout <= errored`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// Requests planned: `-n`, or for `-D` runs (and interrupted runs) the number done.
    pub total: u64,
    /// Requests sent (at least the request head was queued on a connection).
    pub started: u64,
    /// Requests finished, successfully or not.
    pub done: u64,
    /// Finished with a complete response whose status was 2xx or 3xx.
    pub succeeded: u64,
    /// Not succeeded: 4xx/5xx responses, errors, timeouts, requests never issued.
    pub failed: u64,
    /// Failed without a complete response (stream reset, connection lost,
    /// timeout, never issued).
    pub errored: u64,
    /// Failed because of `-T`/`-N` timeouts.
    pub timeout: u64,
    /// Finished with a complete response of any status (h2load's internal
    /// `req_success`): the numerator of `req/s` in the `finished in` line.
    pub completed: u64,
}

impl RequestCounts {
    /// Adds `o` into `self` (saturating).
    pub fn add(&mut self, o: &RequestCounts) {
        self.total = self.total.saturating_add(o.total);
        self.started = self.started.saturating_add(o.started);
        self.done = self.done.saturating_add(o.done);
        self.succeeded = self.succeeded.saturating_add(o.succeeded);
        self.failed = self.failed.saturating_add(o.failed);
        self.errored = self.errored.saturating_add(o.errored);
        self.timeout = self.timeout.saturating_add(o.timeout);
        self.completed = self.completed.saturating_add(o.completed);
    }
}

/// Final response status classes (interim 1xx responses are counted in `s1xx`
/// but never decide success, as in h2load).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusCounts {
    /// 1xx interim responses seen.
    pub s1xx: u64,
    /// 2xx final responses.
    pub s2xx: u64,
    /// 3xx final responses.
    pub s3xx: u64,
    /// 4xx final responses.
    pub s4xx: u64,
    /// 5xx final responses.
    pub s5xx: u64,
}

impl StatusCounts {
    /// Counts one response of status `status` in its class (statuses outside 100–599 are
    /// not counted).
    #[inline]
    pub fn count(&mut self, status: u16) {
        match status / 100 {
            1 => self.s1xx += 1,
            2 => self.s2xx += 1,
            3 => self.s3xx += 1,
            4 => self.s4xx += 1,
            5 => self.s5xx += 1,
            _ => {}
        }
    }

    /// Adds `o` into `self` (saturating).
    pub fn add(&mut self, o: &StatusCounts) {
        self.s1xx = self.s1xx.saturating_add(o.s1xx);
        self.s2xx = self.s2xx.saturating_add(o.s2xx);
        self.s3xx = self.s3xx.saturating_add(o.s3xx);
        self.s4xx = self.s4xx.saturating_add(o.s4xx);
        self.s5xx = self.s5xx.saturating_add(o.s5xx);
    }
}

/// Bytes received, with h2load's `traffic:` meanings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Traffic {
    /// All bytes read from the transport (after TLS decryption).
    pub bytes_total: u64,
    /// Response header bytes as received: HPACK-compressed header block
    /// bytes in HTTP/2; header field names + values in HTTP/1.1 (as h2load).
    pub bytes_head: u64,
    /// Decompressed header bytes (sum of name and value lengths).
    pub bytes_head_decomp: u64,
    /// Response body bytes (DATA payload in HTTP/2, de-chunked body in HTTP/1.1).
    pub bytes_body: u64,
}

impl Traffic {
    /// Adds `o` into `self` (saturating).
    pub fn add(&mut self, o: &Traffic) {
        self.bytes_total = self.bytes_total.saturating_add(o.bytes_total);
        self.bytes_head = self.bytes_head.saturating_add(o.bytes_head);
        self.bytes_head_decomp = self.bytes_head_decomp.saturating_add(o.bytes_head_decomp);
        self.bytes_body = self.bytes_body.saturating_add(o.bytes_body);
    }

    /// `1 - headers / decompressed headers`, 0 when nothing was received.
    pub fn header_space_savings(&self) -> f64 {
        if self.bytes_head_decomp == 0 {
            0.0
        } else {
            1.0 - self.bytes_head as f64 / self.bytes_head_decomp as f64
        }
    }
}

/// Errors by kind, counted per event (a connection, a stream), not per request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    /// Connection attempts that failed (refused, unreachable, DNS gave no usable address).
    pub connect: u64,
    /// TLS handshake or record-layer failures.
    pub tls: u64,
    /// Connections dropped by `-T`/`-N`.
    pub timeout: u64,
    /// Protocol violations by the peer (malformed HTTP/1.1, HTTP/2 connection errors).
    pub protocol: u64,
    /// Connections lost with requests in flight (EOF, reset, write error).
    pub io: u64,
    /// HTTP/2 streams reset by the peer (RST_STREAM), by error code.
    pub stream_resets: BTreeMap<u32, u64>,
    /// GOAWAY frames received with an error code other than NO_ERROR, by code.
    pub goaway_errors: BTreeMap<u32, u64>,
    /// Server pushes refused (PUSH_PROMISE despite SETTINGS_ENABLE_PUSH=0).
    pub push_refused: u64,
    /// First error of each kind seen, for a human-readable summary (at most a few);
    /// formatted where reported.
    pub messages: Vec<RunError>,
}

impl ErrorCounts {
    /// Sum of all counted error events.
    pub fn total(&self) -> u64 {
        self.connect
            + self.tls
            + self.timeout
            + self.protocol
            + self.io
            + self.stream_resets.values().sum::<u64>()
            + self.goaway_errors.values().sum::<u64>()
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &ErrorCounts) {
        self.connect += other.connect;
        self.tls += other.tls;
        self.timeout += other.timeout;
        self.protocol += other.protocol;
        self.io += other.io;
        self.push_refused += other.push_refused;
        for (k, v) in &other.stream_resets {
            *self.stream_resets.entry(*k).or_default() += v;
        }
        for (k, v) in &other.goaway_errors {
            *self.goaway_errors.entry(*k).or_default() += v;
        }
        for m in &other.messages {
            if self.messages.len() < MAX_ERROR_MESSAGES && !self.messages.contains(m) {
                self.messages.push(m.clone());
            }
        }
    }
}

/// One failure seen during a run, kept for the summary (`error: ...` lines) and formatted
/// only where it is reported. The texts are h2lab's (h2load's where h2load has one).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunError {
    /// No address of the target accepted a connection.
    Connect {
        /// The last address tried.
        addr: String,
        /// Why (the system's words).
        cause: String,
    },
    /// A TLS handshake failed.
    TlsHandshake {
        /// Why.
        cause: String,
    },
    /// No protocol could be agreed, or the server broke the protocol.
    Protocol {
        /// What happened.
        cause: String,
    },
    /// A connection was lost with requests in flight (EOF, reset, write error).
    ConnectionLost {
        /// How it ended.
        cause: String,
    },
    /// `-T`: the connection was active for too long.
    ActiveTimeout,
    /// `-N`: the connection was inactive for too long.
    InactivityTimeout,
    /// The server closed the connection `times` times in a row before completing a request
    /// (the client then gave up).
    ClosedWithoutProgress {
        /// How many times.
        times: u32,
    },
    /// A message read back from a result document (`h2lab merge`): its kind is not known.
    Reported(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Connect { addr, cause } => write!(f, "could not connect to {addr}: {cause}"),
            RunError::TlsHandshake { cause } => write!(f, "TLS handshake failed: {cause}"),
            RunError::Protocol { cause } | RunError::ConnectionLost { cause } => f.write_str(cause),
            RunError::ActiveTimeout => f.write_str("connection active timeout (-T)"),
            RunError::InactivityTimeout => f.write_str("connection inactivity timeout (-N)"),
            RunError::ClosedWithoutProgress { times } => write!(
                f,
                "the server closed the connection {times} times in a row before completing a \
                 request"
            ),
            RunError::Reported(m) => f.write_str(m),
        }
    }
}

impl From<&str> for RunError {
    fn from(m: &str) -> Self {
        RunError::Reported(m.to_owned())
    }
}

impl From<String> for RunError {
    fn from(m: String) -> Self {
        RunError::Reported(m)
    }
}

impl PartialEq<&str> for RunError {
    /// Whether the message reads `other` (compared as it is formatted, without allocating).
    fn eq(&self, other: &&str) -> bool {
        struct Rest<'a>(&'a str);
        impl std::fmt::Write for Rest<'_> {
            fn write_str(&mut self, s: &str) -> std::fmt::Result {
                self.0 = self.0.strip_prefix(s).ok_or(std::fmt::Error)?;
                Ok(())
            }
        }
        let mut rest = Rest(other);
        std::fmt::Write::write_fmt(&mut rest, format_args!("{self}")).is_ok() && rest.0.is_empty()
    }
}

/// How many distinct error messages a result keeps.
pub(crate) const MAX_ERROR_MESSAGES: usize = 8;

/// TLS session details, formatted the way h2load (OpenSSL) prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsInfo {
    /// `TLSv1.2` / `TLSv1.3`.
    pub protocol: String,
    /// Cipher suite in OpenSSL naming (`TLS_AES_128_GCM_SHA256`, `ECDHE-RSA-AES128-GCM-SHA256`).
    pub cipher: String,
    /// Key exchange as h2load's `Server Temp Key:` line (`X25519 253 bits`,
    /// `ECDH prime256v1 256 bits`).
    pub server_temp_key: Option<String>,
    /// Protocol selected by ALPN, if any.
    pub alpn: Option<String>,
}

/// What happened to the requests of an open-model run (`--arrival-rate`).
///
/// `scheduled = on_time + late + dropped + unsent` (up to requests still being handed to a
/// connection when a timed run ended).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacingCounts {
    /// Requests that became due during the measurement.
    pub scheduled: u64,
    /// Sent in the loop turn in which they became due (a slot was free).
    pub on_time: u64,
    /// Sent after waiting in the queue for a free slot (all `-c × -m` slots were busy).
    pub late: u64,
    /// Not sent: the queue was full when they became due.
    pub dropped: u64,
    /// Not sent: still queued when the run ended.
    pub unsent: u64,
    /// The queue bound (over all workers).
    pub queue_limit: u64,
}

impl PacingCounts {
    /// Requests that could not be sent on time: dropped or never sent.
    pub fn not_sent(&self) -> u64 {
        self.dropped + self.unsent
    }

    /// Adds `other` into `self` (the queue bounds add up too).
    pub fn merge(&mut self, other: &PacingCounts) {
        self.scheduled += other.scheduled;
        self.on_time += other.on_time;
        self.late += other.late;
        self.dropped += other.dropped;
        self.unsent += other.unsent;
        self.queue_limit += other.queue_limit;
    }
}

/// Everything a run measured, merged over all workers.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Measurement period: from start (or end of warm-up) to the last worker finishing.
    pub elapsed: Duration,
    /// Request counters.
    pub requests: RequestCounts,
    /// Status classes of final responses.
    pub status: StatusCounts,
    /// Interim (1xx) responses by code, ascending, codes seen only (`103 Early Hints`,
    /// `100 Continue`, ...): h2lab's own count, apart from the final status classes
    /// (h2load counts none).
    pub informational: Vec<(u16, u64)>,
    /// Bytes received.
    pub traffic: Traffic,
    /// Bytes sent: what the client handed to the transport (HTTP/1.1 requests, HTTP/2
    /// frames), before TLS encryption — the same layer as [`Traffic::bytes_total`].
    pub bytes_sent: u64,
    /// Bytes read (the layer of [`Traffic::bytes_total`]) that belong to the responses
    /// counted in [`RequestCounts::completed`]: when a counted response completes, what its
    /// connection read since the previous response completed on it (HTTP/1.1 and one
    /// stream per connection: exactly that response's head, body and framing; HTTP/3: the
    /// UDP payloads, as `bytes_total`). Unlike `bytes_total` it has the same edges as
    /// `completed`: bytes of responses still in flight when the measured period ends, or
    /// begun before it, are not in it. 0 where not known (results read back from JSON).
    pub response_bytes: u64,
    /// Request time in ns: first byte of the request written → last byte of
    /// the response, for requests that completed with a response.
    pub request_time: Histogram<u64>,
    /// Paced runs (`--arrival-rate`, `--rps`, timing script): request time in ns from the
    /// request's *intended* start (its due time on the schedule) to the last byte of the
    /// response — corrected for coordinated omission. Empty for closed-model runs.
    pub request_time_corrected: Histogram<u64>,
    /// Connect time in ns (TCP connect + TLS handshake), one sample per connection.
    pub connect_time: Histogram<u64>,
    /// Time to first response byte in ns, measured from the start of connecting
    /// (as h2load: first DATA, or a frame ending a stream), one sample per connection.
    pub ttfb: Histogram<u64>,
    /// Requests per second of each client (completed / client lifetime), like h2load.
    pub client_rps: Vec<f64>,
    /// Protocol spoken (from the first connection that negotiated one).
    pub app_protocol: Option<AppProtocol>,
    /// `h2` was offered over TLS but the server chose `http/1.1` (or no ALPN).
    pub protocol_fallback: bool,
    /// TLS details of the first TLS connection.
    pub tls: Option<TlsInfo>,
    /// Errors by kind.
    pub errors: ErrorCounts,
    /// GOAWAY frames received (any error code).
    pub goaways: u64,
    /// Connections re-established during the run (after GOAWAY, `Connection: close`, ...).
    pub reconnects: u64,
    /// How often an idle worker slept before reading (read waiting,
    /// [`BenchConfig::read_wait`](crate::BenchConfig::read_wait)); 0 when it
    /// was off or request times were too short for it.
    pub read_waits: u64,
    /// TLS handshakes that resumed a session (`--tls-resume`); connections of
    /// the warm-up included, like the connect times.
    pub tls_resumed: u64,
    /// Handshakes, resumptions and early data (`--tls-resume`, `--0rtt`); all zero
    /// without them.
    pub resume: crate::resume::ResumeStats,
    /// Pushed streams accepted (`--push accept`, [`BenchConfig::accept_push`](crate::BenchConfig::accept_push));
    /// 0 when push is refused. They are never used, so every pushed byte is wasted.
    pub pushed_streams: u64,
    /// Body bytes of the pushed responses (all unused). Not in h2load's traffic counters.
    pub pushed_bytes: u64,
    /// Octets of every frame that carried a push (PUSH_PROMISE and its CONTINUATIONs, and
    /// every frame on a promised stream; 9-octet frame heads included): read from the
    /// connection, but kept out of h2load's `traffic` counters, which count the requested
    /// responses (h2load never accepts push).
    pub pushed_frame_bytes: u64,
    /// The run was stopped early by the [`StopFlag`](crate::StopFlag).
    pub interrupted: bool,
    /// Open-model request accounting (`None` for other runs).
    pub pacing: Option<PacingCounts>,
    /// The time series (one row per interval), when one was recorded.
    pub timeseries: Vec<crate::interval::IntervalRow>,
    /// Raw samples (bounded reservoirs), only when
    /// [`BenchConfig::max_samples`](crate::BenchConfig::max_samples) was set.
    pub samples: Option<crate::samples::Samples>,
    /// QUIC figures (HTTP/3 runs only): datagrams, RTTs, packets, GRO.
    pub quic: Option<crate::h3::stats::QuicStats>,
}

impl RunResult {
    /// A result with nothing recorded: zero counters, empty histograms, no period. What a
    /// worker starts counting into, and what results are added to.
    pub fn empty() -> RunResult {
        RunResult {
            elapsed: Duration::ZERO,
            requests: RequestCounts::default(),
            status: StatusCounts::default(),
            informational: Vec::new(),
            traffic: Traffic::default(),
            bytes_sent: 0,
            response_bytes: 0,
            request_time: new_duration_histogram(),
            request_time_corrected: new_duration_histogram(),
            connect_time: new_duration_histogram(),
            ttfb: new_duration_histogram(),
            client_rps: Vec::new(),
            app_protocol: None,
            protocol_fallback: false,
            tls: None,
            errors: ErrorCounts::default(),
            goaways: 0,
            reconnects: 0,
            read_waits: 0,
            tls_resumed: 0,
            resume: Default::default(),
            pushed_streams: 0,
            pushed_bytes: 0,
            pushed_frame_bytes: 0,
            interrupted: false,
            pacing: None,
            timeseries: Vec::new(),
            samples: None,
            quic: None,
        }
    }

    /// Adds what `o` measured into `self`: counters (saturating), errors, histograms,
    /// interim responses code by code, pacing and QUIC figures; per-client rates are
    /// concatenated. The protocol and the TLS details are the first known (`self`'s, else
    /// `o`'s); `protocol_fallback` and `interrupted` are or-ed. The period, the time series
    /// and the raw samples are left to the caller: how periods combine depends on how the
    /// runs relate, and series and samples cannot be added.
    ///
    /// Fails only when a histogram of `o` holds values `self`'s cannot (they then grow:
    /// histograms read back from documents may have other bounds than the engine's).
    pub fn add(&mut self, o: &RunResult) -> Result<(), hdrhistogram::AdditionError> {
        let s = |x: &mut u64, y: u64| *x = x.saturating_add(y);
        self.requests.add(&o.requests);
        self.status.add(&o.status);
        if !o.informational.is_empty() {
            let mut sum: BTreeMap<u16, u64> = self.informational.iter().copied().collect();
            for &(code, n) in &o.informational {
                s(sum.entry(code).or_default(), n);
            }
            self.informational = sum.into_iter().collect();
        }
        self.traffic.add(&o.traffic);
        s(&mut self.bytes_sent, o.bytes_sent);
        s(&mut self.response_bytes, o.response_bytes);
        for (h, x) in [
            (&mut self.request_time, &o.request_time),
            (&mut self.request_time_corrected, &o.request_time_corrected),
            (&mut self.connect_time, &o.connect_time),
            (&mut self.ttfb, &o.ttfb),
        ] {
            h.auto(true);
            h.add(x)?;
        }
        self.client_rps.extend_from_slice(&o.client_rps);
        if self.app_protocol.is_none() {
            self.app_protocol = o.app_protocol;
        }
        self.protocol_fallback |= o.protocol_fallback;
        if self.tls.is_none() {
            self.tls = o.tls.clone();
        }
        self.errors.merge(&o.errors);
        s(&mut self.goaways, o.goaways);
        s(&mut self.reconnects, o.reconnects);
        s(&mut self.read_waits, o.read_waits);
        s(&mut self.tls_resumed, o.tls_resumed);
        self.resume.merge(&o.resume);
        s(&mut self.pushed_streams, o.pushed_streams);
        s(&mut self.pushed_bytes, o.pushed_bytes);
        s(&mut self.pushed_frame_bytes, o.pushed_frame_bytes);
        self.interrupted |= o.interrupted;
        if let Some(p) = &o.pacing {
            self.pacing
                .get_or_insert_with(PacingCounts::default)
                .merge(p);
        }
        if let Some(q) = &o.quic {
            self.quic.get_or_insert_with(Default::default).merge(q);
        }
        Ok(())
    }

    /// `completed / elapsed` (h2load's `req/s` in the `finished in` line).
    pub fn req_per_sec(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.requests.completed as f64 / s
        } else {
            0.0
        }
    }

    /// `bytes_total / elapsed` (h2load's `B/s`).
    pub fn bytes_per_sec(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.traffic.bytes_total as f64 / s
        } else {
            0.0
        }
    }
}

/// A new empty nanosecond histogram (1 ns .. 1 hour, 3 significant figures),
/// the kind every duration histogram in [`RunResult`] is. Larger values are
/// saturated when recorded.
pub fn new_duration_histogram() -> Histogram<u64> {
    // Constant, valid bounds: cannot fail.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_errors_keep_their_wording() {
        let cases: [(RunError, &str); 6] = [
            (
                RunError::Connect {
                    addr: "127.0.0.1:1".into(),
                    cause: "Connection refused (os error 111)".into(),
                },
                "could not connect to 127.0.0.1:1: Connection refused (os error 111)",
            ),
            (
                RunError::TlsHandshake {
                    cause: "bad certificate".into(),
                },
                "TLS handshake failed: bad certificate",
            ),
            (RunError::ActiveTimeout, "connection active timeout (-T)"),
            (
                RunError::InactivityTimeout,
                "connection inactivity timeout (-N)",
            ),
            (
                RunError::ClosedWithoutProgress { times: 3 },
                "the server closed the connection 3 times in a row before completing a request",
            ),
            (RunError::from("read back"), "read back"),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
            assert!(e == text, "{e:?}");
            assert!(e != "something else", "{e:?}");
            // A prefix or an extension of the text is not the text.
            assert!(e != &text[..text.len() - 1], "{e:?}");
            assert!(e != format!("{text}!").as_str(), "{e:?}");
        }
    }

    #[test]
    fn merged_error_lists_keep_the_first_of_each_kind() {
        let mut a = ErrorCounts {
            messages: vec![RunError::ActiveTimeout],
            ..ErrorCounts::default()
        };
        let b = ErrorCounts {
            messages: vec![RunError::ActiveTimeout, RunError::InactivityTimeout],
            ..ErrorCounts::default()
        };
        a.merge(&b);
        assert_eq!(
            a.messages,
            vec![RunError::ActiveTimeout, RunError::InactivityTimeout]
        );
    }

    /// Every field of a result is added up (or kept, or left to the caller, as
    /// [`RunResult::add`] says): the destructuring below names every field, so a field added
    /// to [`RunResult`] does not compile here until this test (and `add`) say what happens
    /// to it.
    #[test]
    fn adding_results_covers_every_field() {
        let mut x = RunResult::empty();
        x.elapsed = Duration::from_secs(3);
        x.requests = RequestCounts {
            total: 1,
            started: 2,
            done: 3,
            succeeded: 4,
            failed: 5,
            errored: 6,
            timeout: 7,
            completed: 8,
        };
        x.status = StatusCounts {
            s1xx: 1,
            s2xx: 2,
            s3xx: 3,
            s4xx: 4,
            s5xx: 5,
        };
        x.status.count(204);
        x.status.count(600);
        assert_eq!(x.status.s2xx, 3, "204 is a 2xx, 600 is in no class");
        x.informational = vec![(103, 2)];
        x.traffic = Traffic {
            bytes_total: 10,
            bytes_head: 11,
            bytes_head_decomp: 12,
            bytes_body: 13,
        };
        (x.bytes_sent, x.response_bytes) = (14, 15);
        for h in [
            &mut x.request_time,
            &mut x.request_time_corrected,
            &mut x.connect_time,
            &mut x.ttfb,
        ] {
            h.saturating_record(1000);
        }
        x.client_rps = vec![1.5];
        x.app_protocol = Some(AppProtocol::H2c);
        x.protocol_fallback = true;
        x.tls = Some(TlsInfo {
            protocol: "TLSv1.3".into(),
            cipher: "TLS_AES_128_GCM_SHA256".into(),
            server_temp_key: None,
            alpn: Some("h2".into()),
        });
        x.errors.io = 16;
        x.errors.stream_resets.insert(7, 1);
        (x.goaways, x.reconnects, x.read_waits, x.tls_resumed) = (17, 18, 19, 20);
        x.resume.handshakes = 21;
        (x.pushed_streams, x.pushed_bytes, x.pushed_frame_bytes) = (22, 23, 24);
        x.interrupted = true;
        x.pacing = Some(PacingCounts {
            scheduled: 25,
            ..PacingCounts::default()
        });
        x.timeseries = vec![crate::interval::IntervalRow::default()];
        x.quic = Some(crate::h3::stats::QuicStats {
            datagrams_sent: 26,
            ..Default::default()
        });

        let mut m = RunResult::empty();
        m.add(&x).unwrap();
        m.add(&x).unwrap();
        let RunResult {
            elapsed,
            requests,
            status,
            informational,
            traffic,
            bytes_sent,
            response_bytes,
            request_time,
            request_time_corrected,
            connect_time,
            ttfb,
            client_rps,
            app_protocol,
            protocol_fallback,
            tls,
            errors,
            goaways,
            reconnects,
            read_waits,
            tls_resumed,
            resume,
            pushed_streams,
            pushed_bytes,
            pushed_frame_bytes,
            interrupted,
            pacing,
            timeseries,
            samples,
            quic,
        } = m;
        // Left to the caller.
        assert_eq!(elapsed, Duration::ZERO);
        assert!(timeseries.is_empty() && samples.is_none());
        // Added up.
        assert_eq!(
            (requests.total, requests.completed, requests.timeout),
            (2, 16, 14)
        );
        assert_eq!((status.s1xx, status.s2xx, status.s5xx), (2, 6, 10));
        assert_eq!(informational, vec![(103, 4)]);
        assert_eq!((traffic.bytes_total, traffic.bytes_body), (20, 26));
        assert_eq!((bytes_sent, response_bytes), (28, 30));
        for h in [&request_time, &request_time_corrected, &connect_time, &ttfb] {
            assert_eq!(h.len(), 2);
        }
        assert_eq!(client_rps, vec![1.5, 1.5]);
        assert_eq!((errors.io, errors.stream_resets[&7]), (32, 2));
        assert_eq!(
            (goaways, reconnects, read_waits, tls_resumed),
            (34, 36, 38, 40)
        );
        assert_eq!(resume.handshakes, 42);
        assert_eq!(
            (pushed_streams, pushed_bytes, pushed_frame_bytes),
            (44, 46, 48)
        );
        assert_eq!(pacing.map(|p| p.scheduled), Some(50));
        assert_eq!(quic.map(|q| q.datagrams_sent), Some(52));
        // Kept (the first known) or or-ed.
        assert_eq!(app_protocol, Some(AppProtocol::H2c));
        assert_eq!(tls, x.tls);
        assert!(protocol_fallback && interrupted);
    }
}
