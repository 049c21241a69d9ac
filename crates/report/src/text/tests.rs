//! Tests of the h2load-compatible text: line for line against h2load's wording.

use super::*;
use crate::model::{empty_result, RequestCounts, StatusCounts, Traffic};

#[test]
fn tls_and_protocol_lines() {
    let info = TlsInfo {
        protocol: "TLSv1.3".into(),
        cipher: "TLS_AES_256_GCM_SHA384".into(),
        server_temp_key: Some("X25519 253 bits".into()),
        alpn: Some("h2".into()),
    };
    assert_eq!(
        tls_lines(&info),
        "TLS Protocol: TLSv1.3\nCipher: TLS_AES_256_GCM_SHA384\nServer Temp Key: X25519 253 bits\n"
    );
    assert_eq!(
        app_protocol_line(AppProtocol::H2c),
        "Application protocol: h2c\n"
    );
    assert_eq!(
        app_protocol_line(AppProtocol::Http11),
        "Application protocol: http/1.1\n"
    );
    assert_eq!(progress_line(30), "progress: 30% done\n");
}

#[test]
fn phase_lines_like_h2load() {
    // From testdata/anchors/captures/h2load-duration-warmup.txt (-c 2).
    let mut out = String::new();
    let phases = [
        TimedRunPhase::WarmUpStarted,
        TimedRunPhase::ClientStarted {
            started: 1,
            total: 2,
        },
        TimedRunPhase::ClientStarted {
            started: 2,
            total: 2,
        },
        TimedRunPhase::MainStarted,
        TimedRunPhase::MainOver,
        TimedRunPhase::Stopped,
    ];
    for p in phases {
        out.extend(phase_lines(0, p));
    }
    assert_eq!(
        out,
        "Warm-up started for thread #0.\n\
             progress: 50% of clients started\n\
             progress: 100% of clients started\n\
             Warm-up phase is over for thread #0.\n\
             Main benchmark duration is started for thread #0.\n\
             Main benchmark duration is over for thread #0. Stopping all clients.\n\
             Stopped all clients for thread #0\n"
    );
    // Every tenth of the clients (integer percent), thread 0 only.
    let pcts: Vec<String> = (1..=25)
        .filter_map(|i| {
            phase_lines(
                0,
                TimedRunPhase::ClientStarted {
                    started: i,
                    total: 25,
                },
            )
        })
        .collect();
    assert_eq!(pcts.len(), 12);
    assert_eq!(pcts[0], "progress: 8% of clients started\n");
    assert_eq!(pcts[11], "progress: 96% of clients started\n");
    let eight: Vec<String> = (1..=8)
        .filter_map(|i| {
            phase_lines(
                0,
                TimedRunPhase::ClientStarted {
                    started: i,
                    total: 8,
                },
            )
        })
        .collect();
    assert_eq!(eight[0], "progress: 12% of clients started\n");
    assert_eq!(eight.len(), 8);
    assert_eq!(
        phase_lines(
            1,
            TimedRunPhase::ClientStarted {
                started: 2,
                total: 2
            }
        ),
        None
    );
    assert_eq!(
        phase_lines(3, TimedRunPhase::Stopped).as_deref(),
        Some("Stopped all clients for thread #3\n")
    );
}

#[test]
fn spawning_lines() {
    assert_eq!(
        spawning_line(0, 10, 1000, None, None),
        "spawning thread #0: 10 total client(s). 1000 total requests\n"
    );
    assert_eq!(
        spawning_line(
            0,
            2,
            0,
            Some(Duration::from_secs(1)),
            Some(Duration::from_secs(2))
        ),
        "spawning thread #0: 2 total client(s). Timing-based test with 1s of warm-up time \
             and 2s of main duration for measurements.\n"
    );
}

#[test]
fn rate_mode_spawning_line() {
    let line = spawning_line(0, 10, 100, None, None);
    assert_eq!(
        with_rate_mode(&line, 10, 2, Duration::from_secs(1)),
        "spawning thread #0: 10 total client(s). Up to 2 client(s) will be created every 1s \
             100 total requests\n"
    );
    assert_eq!(
        with_rate_mode(&line, 10, 3, Duration::from_millis(1500)),
        "spawning thread #0: 10 total client(s). Up to 3 client(s) will be created every \
             1500ms 100 total requests\n"
    );
    assert_eq!(with_rate_mode(&line, 10, 10, Duration::from_secs(1)), line);
}

/// A paced (open-model) run: the corrected row first, then the row from the send, the
/// note and the open-model line.
#[test]
fn paced_summary() {
    let mut r = RunResult {
        elapsed: Duration::from_secs(1),
        pacing: Some(crate::model::PacingCounts {
            scheduled: 100,
            on_time: 90,
            late: 5,
            dropped: 3,
            unsent: 2,
            queue_limit: 40,
        }),
        ..empty_result()
    };
    r.request_time.record(1_000_000).unwrap();
    r.request_time_corrected.record(400_000_000).unwrap();
    let t = latency_table(&r);
    let lines: Vec<&str> = t.lines().collect();
    assert!(
        lines[1].starts_with("time for request:   399.90ms"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("time from send  :     1.00ms"),
        "{}",
        lines[2]
    );
    assert!(lines[3].starts_with("time for connect:"));
    assert_eq!(lines.len(), 6);
    let extra = extra_lines(&r);
    assert!(extra.starts_with(CORRECTED_NOTE));
    assert!(extra.contains(
        "open model: 100 scheduled, 90 sent on time, 5 late (waited for a free slot), 5 not \
             sent on time (3 dropped with the queue of 40 full, 2 still queued at the end)\n"
    ));
}

/// A real h2load 1.52 run (`h2load -n1000 -c10 -m10 http://127.0.0.1:18081/a` against
/// nghttpd, 653-byte body) printed:
/// ```text
/// finished in 8.94ms, 111869.34 req/s, 72.86MB/s
/// requests: 1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed, 0 errored, 0 timeout
/// status codes: 1000 2xx, 0 3xx, 0 4xx, 0 5xx
/// traffic: 666.96KB (682970) total, 11.46KB (11730) headers (space savings 92.43%), 637.70KB (653000) data
/// ```
#[test]
fn counters_match_real_h2load_output() {
    let r = RunResult {
        elapsed: Duration::from_micros(8939),
        requests: RequestCounts {
            total: 1000,
            started: 1000,
            done: 1000,
            succeeded: 1000,
            completed: 1000,
            ..Default::default()
        },
        status: StatusCounts {
            s2xx: 1000,
            ..Default::default()
        },
        traffic: Traffic {
            bytes_total: 682_970,
            bytes_head: 11_730,
            bytes_head_decomp: 155_000,
            bytes_body: 653_000,
        },
        ..empty_result()
    };
    assert_eq!(
            counters(&r),
            "finished in 8.94ms, 111869.34 req/s, 72.86MB/s\n\
             requests: 1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed, 0 errored, 0 timeout\n\
             status codes: 1000 2xx, 0 3xx, 0 4xx, 0 5xx\n\
             traffic: 666.96KB (682970) total, 11.46KB (11730) headers (space savings 92.43%), 637.70KB (653000) data\n"
        );
}

/// The same run's table rows, from h2load's statistics, must come out with h2load's columns
/// unchanged and the percentile columns appended.
#[test]
fn rows_match_real_h2load_output() {
    let req = DistributionSummary {
        count: 1000,
        min: 39_000.0,
        max: 4_310_000.0,
        mean: 752_000.0,
        sd: 1_180_000.0,
        within_sd: 90.0,
        percentiles: [120_000.0, 3_900_000.0, 4_250_000.0, 4_300_000.0],
    };
    let mut s = String::new();
    row(&mut s, "time for request: ", &req, &format_duration_ns);
    assert_eq!(
        s,
        concat!(
            "time for request:       39us      4.31ms       752us      1.18ms    90.00%",
            "       120us      3.90ms      4.25ms      4.30ms\n"
        )
    );
    let rps = DistributionSummary {
        count: 10,
        min: 11723.01,
        max: 12947.89,
        mean: 12106.89,
        sd: 338.30,
        within_sd: 80.0,
        percentiles: [12000.0, 12500.0, 12947.89, 12947.89],
    };
    let mut s = String::new();
    row(&mut s, "req/s           : ", &rps, &|v| format!("{v:.2}"));
    assert_eq!(
        s,
        concat!(
            "req/s           :   11723.01    12947.89    12106.89      338.30    80.00%",
            "    12000.00    12500.00    12947.89    12947.89\n"
        )
    );
}

#[test]
fn table_header_extends_h2loads() {
    let t = latency_table(&empty_result());
    let header = t.lines().next().unwrap();
    assert_eq!(
        header,
        concat!(
            "                     min         max         mean         sd        +/- sd",
            "         p50         p90         p99       p99.9"
        )
    );
    // Columns are right-aligned: every row ends where the header ends.
    for line in t.lines() {
        assert_eq!(line.len(), header.len(), "{line:?}");
    }
}

#[test]
fn push_line_only_when_pushed() {
    let mut r = empty_result();
    assert!(!extra_lines(&r).contains("push:"));
    r.pushed_streams = 2;
    r.pushed_bytes = 300;
    r.pushed_frame_bytes = 400;
    assert_eq!(
        extra_lines(&r),
        "push: 2 streams pushed, 300 bytes pushed (all unused), 400 bytes of push frames \
         (not in traffic)\n"
    );
}

#[test]
fn resumed_handshakes_line() {
    let mut r = empty_result();
    assert!(!extra_lines(&r).contains("TLS:"));
    r.tls_resumed = 2;
    for _ in 0..3 {
        r.connect_time.record(1000).unwrap();
    }
    assert_eq!(
        extra_lines(&r),
        "TLS: 2 of 3 handshakes resumed a session\n"
    );
}

/// A whole summary, golden, with distributions whose statistics are exact.
#[test]
fn full_summary_golden() {
    let mut r = RunResult {
        elapsed: Duration::from_millis(2000),
        requests: RequestCounts {
            total: 100,
            started: 100,
            done: 100,
            succeeded: 97,
            failed: 3,
            errored: 2,
            timeout: 1,
            completed: 97,
        },
        status: StatusCounts {
            s2xx: 97,
            s4xx: 1,
            ..Default::default()
        },
        traffic: Traffic {
            bytes_total: 70_000,
            bytes_head: 1_000,
            bytes_head_decomp: 4_000,
            bytes_body: 65_300,
        },
        client_rps: vec![20.0, 30.0],
        protocol_fallback: true,
        goaways: 1,
        reconnects: 1,
        interrupted: true,
        ..empty_result()
    };
    for _ in 0..97 {
        r.request_time.record(2_000_000).unwrap();
    }
    r.connect_time.record(100_000).unwrap();
    r.connect_time.record(100_000).unwrap();
    r.ttfb.record(3_000_000).unwrap();
    r.ttfb.record(3_000_000).unwrap();
    r.errors.connect = 2;
    r.errors.timeout = 1;
    r.errors.stream_resets.insert(7, 3);
    r.errors.goaway_errors.insert(0x1, 1);
    r.errors.goaway_errors.insert(0x42, 0);
    r.errors
        .messages
        .push("connect to 127.0.0.1:1: Connection refused (os error 111)".into());
    let expected = "\n\
finished in 2.00s, 48.50 req/s, 34.18KB/s
requests: 100 total, 100 started, 100 done, 97 succeeded, 3 failed, 2 errored, 1 timeout
status codes: 97 2xx, 0 3xx, 1 4xx, 0 5xx
traffic: 68.36KB (70000) total, 1000B (1000) headers (space savings 75.00%), 63.77KB (65300) data
                     min         max         mean         sd        +/- sd         p50         p90         p99       p99.9
time for request:     2.00ms      2.00ms      2.00ms         0us   100.00%      2.00ms      2.00ms      2.00ms      2.00ms
time for connect:      100us       100us       100us         0us   100.00%       100us       100us       100us       100us
time to 1st byte:     3.00ms      3.00ms      3.00ms         0us   100.00%      3.00ms      3.00ms      3.00ms      3.00ms
req/s           :      20.00       30.00       25.00        7.07   100.00%       20.00       30.00       30.00       30.00
warning: h2 was offered but the server selected http/1.1; these results are for HTTP/1.1 (use --require-protocol h2 to make this an error)
connections: 1 GOAWAY received, 1 reconnects
errors: 2 connect, 1 timeout, 3 stream reset (REFUSED_STREAM), 1 GOAWAY (PROTOCOL_ERROR)
error: connect to 127.0.0.1:1: Connection refused (os error 111)
interrupted: the run was stopped by a signal; the numbers above cover the work done until then
";
    assert_eq!(summary(&r), expected);
}
