//! Hostile servers vs `h2lab bench`, through the real binary: scripted peers on raw sockets
//! break HTTP/2 and HTTP/1.1 in the ways broken or overloaded servers do. For each one the run
//! must end within its configured timeouts, print the report with the failures counted under
//! the right kind (failed, errored, timeout, error codes), exit with a status that says what
//! happened (0: something succeeded; 1: nothing did), keep its memory bounded, and not panic.

mod hostile;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use h2lab_wire::h2::testing::{self, kind, setting};
use hostile::{bench, close, drain, hpack_int, serve, Codes, H2Peer, Run};

/// Options of most runs: 20 requests over 2 clients, 4 streams each, -N 1s.
const BASE: &[&str] = &["-n", "20", "-c", "2", "-m", "4", "-N", "1s"];
/// No run may take longer (the timeouts are 1-2 s; the rest is process start-up).
const LIMIT: Duration = Duration::from_secs(20);
/// Peak RSS a run may reach (kB). A debug build against these peers stays near 10 MB; buffering
/// a 16 MiB frame per connection or decoding an HPACK bomb would not.
const MAX_RSS_KB: u64 = 48 * 1024;

/// What every run must show: no panic, the report printed with every request accounted for
/// (`succeeded + failed == total`, `timeout <= errored <= failed`), JSON consistent with the
/// text, bounded memory and time.
fn check(run: &Run, within: Duration) {
    assert!(!run.stderr.contains("panicked"), "{}", run.dump());
    assert!(run.code.is_some(), "killed by a signal\n{}", run.dump());
    assert!(
        run.elapsed < within,
        "took {:?}\n{}",
        run.elapsed,
        run.dump()
    );
    assert!(
        run.peak_rss_kb < MAX_RSS_KB,
        "peak RSS {} kB\n{}",
        run.peak_rss_kb,
        run.dump()
    );
    let (total, ok, failed) = (run.req("total"), run.req("succeeded"), run.req("failed"));
    let (errored, timeout) = (run.req("errored"), run.req("timeout"));
    if run.json["options"]["duration_seconds"].is_null() {
        // -n runs: every planned request ends up succeeded or failed.
        assert_eq!(ok + failed, total, "{}", run.dump());
    } else {
        // -D runs report total = done, like h2load.
        assert_eq!(total, run.req("done"), "{}", run.dump());
    }
    assert!(ok <= run.req("done") && run.req("done") <= run.req("started"));
    assert!(timeout <= errored && errored <= failed, "{}", run.dump());
    let line = format!(
        "requests: {total} total, {} started, {} done, {ok} succeeded, {failed} failed, \
         {errored} errored, {timeout} timeout",
        run.req("started"),
        run.req("done")
    );
    assert_eq!(run.requests_line(), line, "{}", run.dump());
    // Exit status: 0 when something succeeded, 1 when nothing did (with a one-line reason).
    if ok > 0 {
        assert_eq!(run.code, Some(0), "{}", run.dump());
    } else {
        assert_eq!(run.code, Some(1), "{}", run.dump());
        assert!(
            run.stderr
                .contains("h2lab bench: error: no request succeeded"),
            "{}",
            run.dump()
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.dump());
    }
}

fn h2c(addr: std::net::SocketAddr) -> String {
    format!("http://{addr}/")
}

/// A response header block whose first field is `:status 200` (static index 8), then `rest`.
fn status_200_then(rest: &[u8]) -> Vec<u8> {
    let mut b = vec![0x88];
    b.extend_from_slice(rest);
    b
}

/// Sends `block` on `stream` as HEADERS + CONTINUATION frames of at most 16 KiB each.
fn send_block(p: &mut H2Peer, stream: u32, block: &[u8], end_stream: bool) -> bool {
    let mut chunks = block.chunks(16 * 1024).peekable();
    let mut b = Vec::new();
    let first = chunks.next().unwrap_or_default();
    let only = chunks.peek().is_none();
    testing::headers_flags(&mut b, stream, first, end_stream, only);
    while let Some(c) = chunks.next() {
        testing::continuation(&mut b, stream, c, chunks.peek().is_none());
    }
    p.send(&b)
}

/// An HTTP/2 peer that runs `on_request(peer, stream)` for every request until EOF, recording
/// the GOAWAY codes the client sent.
fn h2_server<F>(settings: &'static [(u16, u32)], on_request: F) -> (String, Codes)
where
    F: Fn(&mut H2Peer, u32) -> bool + Send + Sync + 'static,
{
    let codes: Codes = Arc::new(Mutex::new(Vec::new()));
    let c2 = Arc::clone(&codes);
    let addr = serve(move |s, _| {
        let mut p = H2Peer::new(s);
        if p.handshake(settings) {
            while let Some(id) = p.request() {
                if !on_request(&mut p, id) {
                    break;
                }
            }
            p.drain();
        }
        c2.lock().unwrap().extend_from_slice(&p.goaways);
    });
    (h2c(addr), codes)
}

/// Polls until the clients' GOAWAY codes reached the scripts (they are recorded after EOF).
fn goaways_seen(codes: &Codes, want: u32) -> Vec<u32> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let v = codes.lock().unwrap().clone();
        if v.contains(&want) || std::time::Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ---- broken starts ----------------------------------------------------------------------

#[test]
fn garbage_instead_of_the_preface_is_a_protocol_error_with_a_hint() {
    // An HTTP/1.1-only server answering the h2c preface.
    let addr = serve(|mut s, _| {
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nBad Request");
        drain(&mut s);
    });
    let run = bench(BASE, &h2c(addr), LIMIT);
    check(&run, Duration::from_secs(5));
    assert_eq!(run.req("succeeded"), 0);
    assert_eq!(run.err("protocol"), 2, "{}", run.dump());
    assert!(
        run.stdout.contains("errors: 2 protocol\n"),
        "{}",
        run.dump()
    );
    assert!(
        run.stderr
            .contains("the server answered in HTTP/1.x: use --h1"),
        "{}",
        run.dump()
    );
}

#[test]
fn garbage_instead_of_settings_is_a_protocol_error() {
    // (first bytes the server sends, what the report must name)
    let cases: Vec<(Vec<u8>, &str)> = vec![
        // A valid frame, but not SETTINGS (RFC 9113 §3.4).
        (
            {
                let mut b = Vec::new();
                testing::ping(&mut b, false, [0; 8]);
                b
            },
            "first frame is not SETTINGS",
        ),
        // SETTINGS whose length is not a multiple of 6 (RFC 9113 §6.5).
        (
            {
                let mut b = Vec::new();
                testing::raw_frame(&mut b, kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0]);
                b
            },
            "FRAME_SIZE_ERROR",
        ),
        // Random bytes.
        (
            (0..64u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
            "connection error",
        ),
    ];
    for (bytes, want) in cases {
        let bytes = Arc::new(bytes);
        let b2 = Arc::clone(&bytes);
        let addr = serve(move |mut s, _| {
            let _ = s.write_all(&b2);
            drain(&mut s);
        });
        let run = bench(BASE, &h2c(addr), LIMIT);
        check(&run, Duration::from_secs(5));
        assert_eq!(run.err("protocol"), 2, "{}", run.dump());
        assert!(run.stderr.contains(want), "{want}: {}", run.dump());
    }
}

// ---- frame-level violations ---------------------------------------------------------------

#[test]
fn a_frame_larger_than_max_frame_size_is_rejected_from_its_header() {
    // The 9-byte header of a 16 MiB DATA frame is split across two reads: four bytes arrive
    // with our SETTINGS, the rest once the client acknowledged them. The client must reject
    // the frame from its header (RFC 9113 §4.2), not buffer its payload first: 8 clients
    // buffering 16 MiB each would blow the RSS bound.
    let addr = serve(|s, _| {
        let mut p = H2Peer::new(s);
        let mut head = Vec::new();
        testing::raw_frame(&mut head, kind::DATA, 0, 1, &[]);
        head[..3].copy_from_slice(&[0xff, 0xff, 0xff]);
        // Nothing we send may come between the two parts of the header: the client's
        // SETTINGS are not acknowledged.
        p.auto_ack = false;
        if !p.handshake_then(&[], &head[..4]) || !p.wait_settings_ack() {
            return;
        }
        if !p.send(&head[4..]) {
            return;
        }
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..256 {
            if !p.send(&chunk) {
                break;
            }
        }
        p.drain();
    });
    let run = bench(
        &["-n", "8", "-c", "8", "-N", "2s"],
        &h2c(addr),
        Duration::from_secs(30),
    );
    check(&run, Duration::from_secs(10));
    assert_eq!(run.err("protocol"), 8, "{}", run.dump());
    // Rejected from the header: at most one read buffer of payload per connection was read.
    let read = run.json["traffic"]["total_bytes"].as_u64().unwrap();
    assert!(read < 8 * 128 * 1024, "read {read} bytes\n{}", run.dump());
    assert!(
        run.stdout
            .contains("FRAME_SIZE_ERROR: RFC 9113 §4.2: frame exceeds SETTINGS_MAX_FRAME_SIZE"),
        "{}",
        run.dump()
    );
}

#[test]
fn a_truncated_frame_then_close_fails_the_requests_in_flight() {
    let addr = serve(|s, _| {
        let mut p = H2Peer::new(s);
        if !p.handshake(&[]) {
            return;
        }
        let Some(id) = p.request() else { return };
        let block = p.hpack.response_block(200, &[]);
        let mut b = Vec::new();
        testing::headers(&mut b, id, &block, false);
        testing::data(&mut b, id, &[b'x'; 100], true);
        b.truncate(b.len() - 60);
        p.send(&b);
        close(p.sock);
    });
    let run = bench(BASE, &h2c(addr), LIMIT);
    check(&run, Duration::from_secs(5));
    // Each client's only connection broke before anything completed: its requests in flight
    // are errored, the rest are never issued (h2load's process_abandoned_streams).
    assert_eq!(run.req("succeeded"), 0);
    assert_eq!(run.req("errored"), 20);
    assert_eq!(run.err("io"), 2, "{}", run.dump());
    assert!(
        run.stdout
            .contains("error: connection closed in the middle of a response"),
        "{}",
        run.dump()
    );
}

// ---- HPACK ---------------------------------------------------------------------------------

#[test]
fn invalid_hpack_is_a_compression_error_and_the_client_says_goaway() {
    let mut too_big = Vec::new();
    // Dynamic table size update (001xxxxx) to 64 KiB, above our SETTINGS_HEADER_TABLE_SIZE.
    hpack_int(65_536, 5, 0x20, &mut too_big);
    too_big.push(0x88);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        // Indexed field 300: beyond the static table and an empty dynamic table.
        ("bad index", vec![0xff, 0xad, 0x01], "index out of range"),
        // :status literal whose Huffman string is all ones (EOS / overlong padding).
        (
            "bad Huffman",
            vec![0x48, 0x84, 0xff, 0xff, 0xff, 0xff],
            "Huffman",
        ),
        ("size update above the limit", too_big, "size update"),
    ];
    for (what, block, want) in cases {
        let block = Arc::new(block);
        let (url, codes) = h2_server(&[], move |p, id| {
            let mut b = Vec::new();
            testing::headers(&mut b, id, &block, true);
            p.send(&b)
        });
        let run = bench(BASE, &url, LIMIT);
        check(&run, Duration::from_secs(5));
        assert_eq!(run.err("protocol"), 2, "{what}: {}", run.dump());
        assert!(
            run.stdout.contains("COMPRESSION_ERROR") && run.stdout.contains(want),
            "{what}: {}",
            run.dump()
        );
        // RFC 9113 §4.3: a decoding error is a connection error of type COMPRESSION_ERROR:
        // the client said so with GOAWAY before closing.
        let seen = goaways_seen(&codes, 0x9);
        assert!(seen.contains(&0x9), "{what}: GOAWAY codes {seen:?}");
    }
}

/// `:status 200`, then "x-bomb: <4000 x 'a'>" added to the dynamic table (index 62), then
/// `refs` references to it.
fn bomb_block(refs: usize) -> Vec<u8> {
    let mut b = status_200_then(&[0x40, 6]);
    b.extend_from_slice(b"x-bomb");
    hpack_int(4000, 7, 0, &mut b);
    b.extend_from_slice(&[b'a'; 4000]);
    b.extend(std::iter::repeat(0xbe).take(refs));
    b
}

#[test]
fn an_hpack_bomb_is_refused_per_stream_with_bounded_memory() {
    // 64 KB on the wire decoding to 240 MB per response: the decoder stops delivering at the
    // header list limit, keeps the HPACK context in sync and the stream is refused.
    let (url, _) = h2_server(&[], |p, id| {
        let block = bomb_block(60_000);
        send_block(p, id, &block, false) && {
            let mut b = Vec::new();
            testing::data(&mut b, id, b"boom", true);
            p.send(&b)
        }
    });
    let run = bench(BASE, &url, LIMIT);
    check(&run, Duration::from_secs(10));
    assert_eq!(run.req("succeeded"), 0);
    assert_eq!(run.resets("REFUSED_STREAM"), 20, "{}", run.dump());
    assert_eq!(run.err("protocol"), 0, "{}", run.dump());
    assert!(
        run.stdout
            .contains("errors: 20 stream reset (REFUSED_STREAM)"),
        "{}",
        run.dump()
    );
}

#[test]
fn a_header_list_over_the_limit_resets_that_stream_only() {
    // Every other response carries ~280 KB of decoded fields (70 references to a 4 KB entry:
    // 4 KB on the wire) against the 256 KiB limit; the others are normal. The connection
    // and its HPACK context survive, so the normal half succeeds.
    let (url, _) = h2_server(&[], |p, id| {
        if (id / 2) % 2 == 0 {
            send_block(p, id, &bomb_block(70), true)
        } else {
            p.respond(id, 200, b"fine")
        }
    });
    let run = bench(BASE, &url, LIMIT);
    check(&run, Duration::from_secs(5));
    assert_eq!(run.req("succeeded"), 10, "{}", run.dump());
    assert_eq!(run.resets("REFUSED_STREAM"), 10, "{}", run.dump());
    assert_eq!(run.err("protocol"), 0, "{}", run.dump());
    assert_eq!(run.json["status_codes"]["2xx"], 10, "{}", run.dump());
}

#[test]
fn a_header_block_over_the_block_limit_is_a_connection_error() {
    // 100 KB of literal fields across HEADERS + CONTINUATION: more than the 64 KiB the client
    // buffers for one field block (GOAWAY ENHANCE_YOUR_CALM).
    let (url, codes) = h2_server(&[], |p, id| {
        let mut block = vec![0x88];
        for i in 0..25 {
            block.extend(testing::literal_block(&[(&format!("x-{i}"), "v")]));
            block.push(0x00);
            block.push(0x03);
            block.extend_from_slice(b"x-f");
            hpack_int(4000, 7, 0, &mut block);
            block.extend_from_slice(&[b'v'; 4000]);
        }
        send_block(p, id, &block, true)
    });
    let run = bench(BASE, &url, LIMIT);
    check(&run, Duration::from_secs(5));
    assert_eq!(run.err("protocol"), 2, "{}", run.dump());
    assert!(run.stdout.contains("ENHANCE_YOUR_CALM"), "{}", run.dump());
    let seen = goaways_seen(&codes, 0xb);
    assert!(seen.contains(&0xb), "GOAWAY codes {seen:?}");
}

#[test]
fn endless_continuation_is_cut_off() {
    let (url, codes) = h2_server(&[], |p, id| {
        let mut b = Vec::new();
        testing::headers_flags(&mut b, id, &[0x88], true, false);
        if !p.send(&b) {
            return false;
        }
        // Until the client hangs up (bounded so a broken client cannot hang the test).
        for _ in 0..1_000_000 {
            let mut c = Vec::new();
            testing::continuation(&mut c, id, &[], false);
            if !p.send(&c) {
                return false;
            }
        }
        false
    });
    let run = bench(BASE, &url, LIMIT);
    check(&run, Duration::from_secs(5));
    assert_eq!(run.err("protocol"), 2, "{}", run.dump());
    assert!(run.stdout.contains("ENHANCE_YOUR_CALM"), "{}", run.dump());
    let seen = goaways_seen(&codes, 0xb);
    assert!(seen.contains(&0xb), "GOAWAY codes {seen:?}");
}

// ---- stream and connection management ----------------------------------------------------

#[test]
fn goaway_below_the_streams_in_flight_retries_them_elsewhere() {
    // (GOAWAY error code, name in the report)
    for (code, name) in [(0u32, None), (0x2, Some("INTERNAL_ERROR"))] {
        // Each connection answers its first request, then GOAWAY(last = that stream) while
        // the client has 3 more streams open, then closes: those were provably not
        // processed (RFC 9113 §6.8) and are retried on a new connection.
        let addr = serve(move |s, _| {
            let mut p = H2Peer::new(s);
            if !p.handshake(&[]) {
                return;
            }
            let Some(first) = p.request() else { return };
            // The rest of the client's first burst (up to 3 more streams) is in flight.
            assert!(p.buffered_requests() <= 3);
            p.respond(first, 200, b"ok");
            let mut b = Vec::new();
            testing::goaway(&mut b, first, code, b"going away");
            p.send(&b);
            close(p.sock);
        });
        let run = bench(BASE, &h2c(addr), LIMIT);
        check(&run, Duration::from_secs(10));
        assert_eq!(run.req("succeeded"), 20, "{}", run.dump());
        assert_eq!(run.req("started"), 20, "{}", run.dump());
        assert_eq!(run.req("failed"), 0, "{}", run.dump());
        // One connection per request; a client may finish (and close) before the GOAWAY
        // of its last connection arrives.
        let goaways = run.json["goaways"].as_u64().unwrap();
        assert!((18..=20).contains(&goaways), "{}", run.dump());
        assert_eq!(run.json["reconnects"], 18, "{}", run.dump());
        if let Some(name) = name {
            assert_eq!(
                run.json["errors"]["goaway_errors"][name],
                goaways,
                "{}",
                run.dump()
            );
            assert!(
                run.stdout.contains(&format!("{goaways} GOAWAY ({name})")),
                "{}",
                run.dump()
            );
        }
    }
}

#[test]
fn goaway_before_any_response_gives_up_with_a_reason() {
    // GOAWAY(last = 0) as soon as the requests arrive, on every connection: nothing is ever
    // processed. Each client retries a few times, then gives up and says why.
    let (url, _) = h2_server(&[], |p, _| {
        let mut b = Vec::new();
        testing::goaway(&mut b, 0, 0, b"");
        p.send(&b);
        false
    });
    let run = bench(BASE, &url, LIMIT);
    check(&run, Duration::from_secs(5));
    assert_eq!(run.req("started"), 0, "{}", run.dump());
    assert_eq!(run.req("errored"), 20, "{}", run.dump());
    assert_eq!(run.json["reconnects"], 4, "{}", run.dump());
    assert!(
        run.stderr
            .contains("closed the connection 3 times in a row before completing a request"),
        "{}",
        run.dump()
    );
}

#[test]
fn rst_stream_on_every_stream_counts_resets_by_code() {
    let (url, _) = h2_server(&[], |p, id| {
        let mut b = Vec::new();
        testing::rst_stream(&mut b, id, 0x2);
        p.send(&b)
    });
    let run = bench(BASE, &url, LIMIT);
    check(&run, Duration::from_secs(5));
    assert_eq!(run.req("done"), 20);
    assert_eq!(run.req("errored"), 20);
    assert_eq!(run.resets("INTERNAL_ERROR"), 20, "{}", run.dump());
    assert!(
        run.stdout
            .contains("errors: 20 stream reset (INTERNAL_ERROR)"),
        "{}",
        run.dump()
    );
}

#[test]
fn refusing_every_stream_ends_the_run() {
    // REFUSED_STREAM makes a request safe to retry (RFC 9113 §8.7); a server that refuses
    // everything must not make the client retry forever.
    let (url, _) = h2_server(&[], |p, id| {
        let mut b = Vec::new();
        testing::rst_stream(&mut b, id, 0x7);
        p.send(&b)
    });
    let run = bench(BASE, &url, LIMIT);
    check(&run, Duration::from_secs(10));
    assert_eq!(run.req("succeeded"), 0);
    assert_eq!(run.resets("REFUSED_STREAM"), 20, "{}", run.dump());
}

#[test]
fn a_send_window_that_never_opens_times_out() {
    // SETTINGS_INITIAL_WINDOW_SIZE = 0 and never a WINDOW_UPDATE: the request bodies can
    // never be sent; -N ends the connections.
    let dir = std::env::temp_dir().join(format!("h2lab-hostile-body-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body.bin");
    std::fs::write(&body, vec![b'b'; 1000]).unwrap();
    let (url, _) = h2_server(&[(setting::INITIAL_WINDOW_SIZE, 0)], |_, _| true);
    let run = bench(
        &[
            "-n",
            "8",
            "-c",
            "2",
            "-m",
            "4",
            "-N",
            "1s",
            "-d",
            body.to_str().unwrap(),
        ],
        &url,
        LIMIT,
    );
    check(&run, Duration::from_secs(5));
    assert!(run.elapsed >= Duration::from_secs(1), "{}", run.dump());
    assert_eq!(run.req("timeout"), 8, "{}", run.dump());
    assert_eq!(run.err("timeout"), 2, "{}", run.dump());
    assert!(
        run.stdout
            .contains("error: connection inactivity timeout (-N)"),
        "{}",
        run.dump()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_server_that_never_answers_times_out() {
    // (a) the kernel completes the TCP handshake but nobody ever accepts;
    // (b) accepted, read, never answered. For h2c, HTTP/1.1, and -T instead of -N.
    let unaccepted = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a = unaccepted.local_addr().unwrap();
    let b = serve(|mut s, _| drain(&mut s));
    let runs: [(&[&str], std::net::SocketAddr); 4] = [
        (BASE, a),
        (BASE, b),
        (&["-n", "20", "-c", "2", "-m", "4", "-N", "1s", "--h1"], b),
        (&["-n", "8", "-c", "2", "-m", "4", "-T", "1s"], b),
    ];
    for (args, addr) in runs {
        let run = bench(args, &h2c(addr), LIMIT);
        check(&run, Duration::from_secs(5));
        assert!(run.elapsed >= Duration::from_secs(1), "{}", run.dump());
        assert_eq!(run.req("succeeded"), 0);
        assert_eq!(run.req("timeout"), 8, "{args:?}: {}", run.dump());
        assert_eq!(run.err("timeout"), 2, "{args:?}: {}", run.dump());
        assert!(run.stdout.contains("errors: 2 timeout\n"), "{}", run.dump());
    }
    // -D against the silent server: the run ends with the duration, nothing succeeded.
    let run = bench(&["-D", "1s", "-c", "2"], &h2c(b), LIMIT);
    check(&run, Duration::from_secs(5));
    assert_eq!(run.req("done"), 0, "{}", run.dump());
    drop(unaccepted);
}

#[test]
fn every_request_answered_with_503_is_failed_not_errored() {
    let (url, _) = h2_server(&[], |p, id| p.respond(id, 503, b"overloaded"));
    let h1 = serve(|mut s, _| {
        let mut p = hostile_h1::Reader::new();
        while p.next_request(&mut s) {
            let r = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 10\r\n\r\noverloaded";
            if s.write_all(r).is_err() {
                return;
            }
        }
    });
    for (url, extra) in [(url, None), (h2c(h1), Some("--h1"))] {
        let mut args = BASE.to_vec();
        args.extend(extra);
        let run = bench(&args, &url, LIMIT);
        check(&run, Duration::from_secs(5));
        assert_eq!(run.req("done"), 20, "{}", run.dump());
        assert_eq!(run.req("failed"), 20);
        assert_eq!(run.req("errored"), 0, "{}", run.dump());
        assert_eq!(run.json["status_codes"]["5xx"], 20, "{}", run.dump());
        assert!(run
            .stdout
            .contains("status codes: 0 2xx, 0 3xx, 0 4xx, 20 5xx"));
        assert_eq!(run.json["errors"]["total"], 0, "{}", run.dump());
    }
}

#[test]
fn closing_after_n_responses_reconnects_and_counts_the_lost() {
    // HTTP/2: three responses per connection, then a plain close (no GOAWAY) with streams
    // in flight. HTTP/1.1: the same with pipelining. Requests in flight are lost (failed,
    // errored: h2load cannot know whether the server processed them); the run goes on.
    let h2 = serve(|s, _| {
        let mut p = H2Peer::new(s);
        if !p.handshake(&[]) {
            return;
        }
        for _ in 0..3 {
            let Some(id) = p.request() else { return };
            p.respond(id, 200, b"ok");
        }
        close(p.sock);
    });
    let h1 = serve(|mut s, _| {
        let mut p = hostile_h1::Reader::new();
        for _ in 0..3 {
            if !p.next_request(&mut s)
                || s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .is_err()
            {
                return;
            }
        }
        close(s);
    });
    for (addr, extra) in [(h2, None), (h1, Some("--h1"))] {
        let mut args = BASE.to_vec();
        args.extend(extra);
        let run = bench(&args, &h2c(addr), LIMIT);
        check(&run, Duration::from_secs(10));
        let ok = run.req("succeeded");
        assert!(ok >= 6, "{}", run.dump());
        assert!(
            run.json["reconnects"].as_u64().unwrap() >= 2,
            "{}",
            run.dump()
        );
        assert_eq!(run.req("failed"), run.req("errored"), "{}", run.dump());
        if run.req("failed") > 0 {
            assert!(run.err("io") > 0, "{}", run.dump());
        }
    }
    // Timing-based: the run continues across reconnects until the duration is over.
    let run = bench(&["-D", "1s", "-c", "2", "-m", "4"], &h2c(h2), LIMIT);
    check(&run, Duration::from_secs(5));
    assert!(run.req("succeeded") > 20, "{}", run.dump());
}

// ---- HTTP/1.1 framing ------------------------------------------------------------------

#[test]
fn bad_chunking_is_a_protocol_error() {
    for body in [
        &b"zz\r\nhello\r\n0\r\n\r\n"[..],
        &b"5\r\nhello0\r\n\r\n"[..],
        &b"ffffffffffffffffffff\r\n"[..],
    ] {
        let addr = serve(move |mut s, _| {
            let mut p = hostile_h1::Reader::new();
            if p.next_request(&mut s) {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
                let _ = s.write_all(body);
            }
            drain(&mut s);
        });
        let mut args = BASE.to_vec();
        args.push("--h1");
        let run = bench(&args, &h2c(addr), LIMIT);
        check(&run, Duration::from_secs(5));
        assert_eq!(run.err("protocol"), 2, "{:?}: {}", body, run.dump());
        assert!(
            run.stdout.contains("error: invalid HTTP/1.1 response"),
            "{}",
            run.dump()
        );
    }
}

#[test]
fn a_content_length_that_lies() {
    // Longer than the body, then close: truncated response (io error).
    let long = serve(|mut s, _| {
        let mut p = hostile_h1::Reader::new();
        if p.next_request(&mut s) {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..");
        }
        close(s);
    });
    let mut args = BASE.to_vec();
    args.push("--h1");
    let run = bench(&args, &h2c(long), LIMIT);
    check(&run, Duration::from_secs(5));
    assert_eq!(run.err("io"), 2, "{}", run.dump());
    assert!(
        run.stdout
            .contains("error: connection closed in the middle of a response"),
        "{}",
        run.dump()
    );
    // Longer than the body, connection kept open: -N.
    let stalled = serve(|mut s, _| {
        let mut p = hostile_h1::Reader::new();
        if p.next_request(&mut s) {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..");
        }
        drain(&mut s);
    });
    let run = bench(&args, &h2c(stalled), LIMIT);
    check(&run, Duration::from_secs(5));
    assert_eq!(run.err("timeout"), 2, "{}", run.dump());
    // Shorter than the body: the extra bytes are garbage where the next response should
    // start. The first response of each connection succeeds; the rest is a protocol error.
    let short = serve(|mut s, _| {
        let mut p = hostile_h1::Reader::new();
        while p.next_request(&mut s) {
            let r = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello, and some more bytes";
            if s.write_all(r).is_err() {
                return;
            }
        }
    });
    let run = bench(
        &["-n", "20", "-c", "2", "-m", "1", "-N", "1s", "--h1"],
        &h2c(short),
        LIMIT,
    );
    check(&run, Duration::from_secs(10));
    assert!(run.req("succeeded") >= 2, "{}", run.dump());
    assert!(run.err("protocol") >= 2, "{}", run.dump());
}

/// Minimal HTTP/1.1 request reading for the scripts (GET, no bodies).
mod hostile_h1 {
    use std::io::Read;
    use std::net::TcpStream;

    /// Buffers bytes and splits complete request heads.
    pub struct Reader {
        buf: Vec<u8>,
    }

    impl Reader {
        pub fn new() -> Reader {
            Reader { buf: Vec::new() }
        }

        /// Waits for the next complete request head; false at EOF.
        pub fn next_request(&mut self, s: &mut TcpStream) -> bool {
            loop {
                if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    self.buf.drain(..i + 4);
                    return true;
                }
                let mut tmp = [0u8; 16 * 1024];
                match s.read(&mut tmp) {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => self.buf.extend_from_slice(&tmp[..n]),
                }
            }
        }
    }
}
