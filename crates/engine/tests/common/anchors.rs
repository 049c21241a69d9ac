//! One benchmark case against a real anchor server (started with `h2lab-testkit`),
//! run by the engine and, for comparison, by h2load with the same options.

#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::path::PathBuf;
use std::time::Duration;

use h2lab_engine::{AppProtocol, BaseUri, BenchConfig, ProtocolChoice, RunResult};
use h2lab_testkit::{AnchorServer, H2loadSummary};

/// One run: h2load's `-n -c -m [--h1] [-w -W] [-B unix:PATH] URL`, and what
/// every response must be.
#[derive(Debug, Clone)]
pub struct Case {
    /// The URI (for `-B unix:` runs its authority is only sent, not used).
    pub url: String,
    /// `-n`.
    pub n: u64,
    /// `-c`.
    pub c: u32,
    /// `-m`.
    pub m: u32,
    /// `--h1`.
    pub h1: bool,
    /// `-B unix:PATH`.
    pub unix: Option<PathBuf>,
    /// `-w`, `-W`.
    pub windows: Option<(u8, u8)>,
    /// Size of every response body.
    pub body_len: usize,
    /// The protocol the run must speak.
    pub proto: AppProtocol,
}

impl Case {
    /// `-n n -c c -m m url`, expecting `body_len`-byte bodies over `proto`.
    pub fn new(url: String, n: u64, c: u32, m: u32, body_len: usize, proto: AppProtocol) -> Case {
        Case {
            url,
            n,
            c,
            m,
            h1: proto == AppProtocol::Http11,
            unix: None,
            windows: None,
            body_len,
            proto,
        }
    }

    /// Adds `-B unix:path`.
    pub fn unix(mut self, path: impl Into<PathBuf>) -> Case {
        self.unix = Some(path.into());
        self
    }

    /// Adds `-w w -W conn`.
    pub fn windows(mut self, w: u8, conn: u8) -> Case {
        self.windows = Some((w, conn));
        self
    }

    /// The engine configuration for this case.
    pub fn config(&self) -> BenchConfig {
        let mut c = BenchConfig::from_uris(&[&self.url], None).unwrap();
        c.requests = self.n;
        c.clients = self.c;
        c.max_concurrent_streams = self.m;
        if self.h1 {
            c.protocol = ProtocolChoice::H1;
        }
        if let Some(p) = &self.unix {
            c.base_uri = Some(BaseUri::Unix(p.clone()));
        }
        if let Some((w, cw)) = self.windows {
            c.window_bits = w;
            c.connection_window_bits = cw;
        }
        // A safety net: a stuck connection fails the test instead of hanging it.
        c.connection_inactivity_timeout = Some(Duration::from_secs(30));
        c
    }

    /// The same run as h2load arguments.
    pub fn h2load_args(&self) -> Vec<String> {
        let mut a = vec![
            format!("-n{}", self.n),
            format!("-c{}", self.c),
            format!("-m{}", self.m),
        ];
        if self.h1 {
            a.push("--h1".into());
        }
        if let Some(p) = &self.unix {
            a.push(format!("-Bunix:{}", p.display()));
        }
        if let Some((w, cw)) = self.windows {
            a.push(format!("-w{w}"));
            a.push(format!("-W{cw}"));
        }
        a.push(self.url.clone());
        a
    }

    /// Runs the engine and checks exact counts: every request started, done
    /// and succeeded with a 2xx, `n × body_len` body bytes, no error of any
    /// kind, no reconnect, the expected protocol.
    pub fn run(&self, server: &AnchorServer) -> RunResult {
        let r = h2lab_engine::run(
            &self.config(),
            &h2lab_engine::NoopObserver,
            &h2lab_engine::StopFlag::new(),
        )
        .unwrap_or_else(|e| panic!("{self:?}: run failed: {e}\n{}", server.log_tail()));
        let ctx = format!(
            "{:?} {:?}\nresult: {:?} {:?} {:?}\nerrors: {:?}\nserver log:\n{}",
            server.kind(),
            self.h2load_args(),
            r.requests,
            r.status,
            r.traffic,
            r.errors,
            server.log_tail()
        );
        let q = &r.requests;
        let n = self.n;
        assert_eq!(
            (q.total, q.started, q.done, q.succeeded, q.completed),
            (n, n, n, n, n),
            "{ctx}"
        );
        assert_eq!((q.failed, q.errored, q.timeout), (0, 0, 0), "{ctx}");
        assert_eq!(
            (r.status.s1xx, r.status.s2xx, r.status.s3xx),
            (0, n, 0),
            "{ctx}"
        );
        assert_eq!((r.status.s4xx, r.status.s5xx), (0, 0), "{ctx}");
        assert_eq!(r.traffic.bytes_body, n * self.body_len as u64, "{ctx}");
        assert!(r.traffic.bytes_head > 0, "{ctx}");
        assert!(
            r.traffic.bytes_total > r.traffic.bytes_body + r.traffic.bytes_head,
            "{ctx}"
        );
        assert_eq!(r.errors.total(), 0, "{ctx}");
        assert_eq!((r.reconnects, r.goaways), (0, 0), "{ctx}");
        assert_eq!(r.app_protocol, Some(self.proto), "{ctx}");
        assert!(!r.protocol_fallback, "{ctx}");
        assert!(!r.interrupted, "{ctx}");
        assert_eq!(r.request_time.len(), n, "{ctx}");
        assert_eq!(r.client_rps.len(), self.c as usize, "{ctx}");
        if self.url.starts_with("https:") {
            let tls = r.tls.as_ref().expect("TLS details");
            assert!(tls.protocol.starts_with("TLSv1."), "{ctx}");
            let alpn = if self.proto == AppProtocol::H2 {
                "h2"
            } else {
                "http/1.1"
            };
            assert_eq!(tls.alpn.as_deref(), Some(alpn), "{ctx}");
        } else {
            assert!(r.tls.is_none(), "{ctx}");
        }
        r
    }

    /// Runs h2load with the same options; it must complete every request.
    pub fn h2load(&self, server: &AnchorServer) -> H2loadSummary {
        let args = self.h2load_args();
        let out = h2lab_testkit::h2load(&args).unwrap();
        let ctx = format!(
            "{:?} h2load {args:?}:\n{}{}\nserver log:\n{}",
            server.kind(),
            out.stdout,
            out.stderr,
            server.log_tail()
        );
        assert!(out.ran(), "{ctx}");
        assert_eq!(
            out.application_protocol.as_deref(),
            Some(self.proto.as_str()),
            "{ctx}"
        );
        let s = out.summary.clone().unwrap();
        assert_eq!(s.requests.succeeded, self.n, "{ctx}");
        s
    }

    /// Runs the engine, then h2load, and compares what both counted.
    ///
    /// Requests and body bytes must be equal. HTTP/1.1 header bytes (field
    /// names + values) and totals must be equal too. HTTP/2 header bytes
    /// are HPACK-compressed: a server re-sends the `date` field as a literal
    /// when the second changes (~30 bytes instead of a 1-byte index), so
    /// those may differ by that much per connection and per second.
    pub fn run_and_compare(&self, server: &AnchorServer) -> RunResult {
        let r = self.run(server);
        let h = self.h2load(server);
        let ctx = format!(
            "{:?} {:?}\nh2lab: {:?} {:?} {:?}\nh2load: {h:?}",
            server.kind(),
            self.h2load_args(),
            r.requests,
            r.status,
            r.traffic
        );
        let q = &r.requests;
        let hq = &h.requests;
        assert_eq!(
            (q.total, q.started, q.done, q.succeeded, q.failed, q.errored),
            (
                hq.total,
                hq.started,
                hq.done,
                hq.succeeded,
                hq.failed,
                hq.errored
            ),
            "{ctx}"
        );
        assert_eq!(r.status.s2xx, h.status_codes.s2xx, "{ctx}");
        assert_eq!(r.traffic.bytes_body, h.traffic.data, "{ctx}");
        if self.h1 {
            assert_eq!(r.traffic.bytes_head, h.traffic.headers, "{ctx}");
            assert_eq!(r.traffic.bytes_total, h.traffic.total, "{ctx}");
        } else {
            let secs = r.elapsed.as_secs() + h.finished_in.as_secs() + 2;
            let slack = u64::from(self.c) * secs * 32;
            assert!(
                r.traffic.bytes_head.abs_diff(h.traffic.headers) <= slack,
                "{ctx}"
            );
        }
        r
    }
}
