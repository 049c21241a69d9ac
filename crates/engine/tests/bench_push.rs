//! `h2lab bench --push accept|refuse` against `h2lab serve --push` (in-process, port 0):
//! refused by default, no pushed byte arrives; accepted, pushed streams and bytes are
//! counted apart, and h2load's request and body counters are the same either way.

use h2lab_engine::{BenchConfig, NoopObserver, RunResult, StopFlag};

/// A page with two CSS and one JS file: `serve --push` pushes three streams per page.
const PAGE: &str = "/page?n=2&seed=3&css=2&js=1&css_size=4k&js_size=8k";

fn bench(accept: bool) -> RunResult {
    let s = h2lab_server::spawn(h2lab_server::ServerConfig {
        push: true,
        ..h2lab_server::ServerConfig::local()
    })
    .unwrap();
    let addr = s.addr().unwrap();
    let mut cfg = BenchConfig::from_uris(&[format!("http://{addr}{PAGE}")], None).unwrap();
    cfg.requests = 10;
    cfg.clients = 1;
    cfg.max_concurrent_streams = 1;
    cfg.accept_push = accept;
    cfg.connection_inactivity_timeout = Some(std::time::Duration::from_secs(20));
    h2lab_engine::run(&cfg, &NoopObserver, &StopFlag::new()).unwrap()
}

#[test]
fn refused_push_sends_no_byte_and_accepted_push_is_counted_apart() {
    let refused = bench(false);
    let accepted = bench(true);
    for r in [&refused, &accepted] {
        assert_eq!(r.requests.total, 10);
        assert_eq!(r.requests.done, 10);
        assert_eq!(r.requests.succeeded, 10);
        assert_eq!(r.requests.completed, 10);
        assert_eq!(r.status.s2xx, 10);
        assert_eq!(r.errors.push_refused, 0);
    }
    assert_eq!((refused.pushed_streams, refused.pushed_bytes), (0, 0));
    // Three pushes per page (CSS ×2, JS ×1), the same assets each time.
    assert_eq!(accepted.pushed_streams, 30);
    assert!(accepted.pushed_bytes > 0, "no pushed byte");
    assert_eq!(accepted.pushed_bytes % 10, 0, "{}", accepted.pushed_bytes);
    // Pushed bodies stay out of h2load's body counter: the same page, the same bytes.
    assert_eq!(
        accepted.traffic.bytes_body, refused.traffic.bytes_body,
        "pushed bytes counted as response body"
    );
    // h2load's traffic counters stay h2load's: the frames that carried the pushes
    // (PUSH_PROMISE, and HEADERS and DATA on the promised streams) are counted apart, not in
    // `traffic: total` nor in its header bytes. The main responses are the same either way
    // (their HPACK encoding may differ by a few octets: the pushes' fields share the table).
    let slack = 16 * accepted.requests.completed;
    let near = |a: u64, b: u64| a.abs_diff(b) <= slack;
    assert!(
        near(accepted.traffic.bytes_total, refused.traffic.bytes_total),
        "traffic total {} with pushes accepted, {} refused",
        accepted.traffic.bytes_total,
        refused.traffic.bytes_total
    );
    assert!(
        near(accepted.traffic.bytes_head, refused.traffic.bytes_head),
        "header bytes {} with pushes accepted, {} refused",
        accepted.traffic.bytes_head,
        refused.traffic.bytes_head
    );
    // Every pushed body byte came in a frame counted apart, with its 9-octet frame head.
    assert!(
        accepted.pushed_frame_bytes >= accepted.pushed_bytes + 9 * 2 * accepted.pushed_streams,
        "{} frame bytes for {} pushed body bytes",
        accepted.pushed_frame_bytes,
        accepted.pushed_bytes
    );
    assert_eq!(refused.pushed_frame_bytes, 0);
}
