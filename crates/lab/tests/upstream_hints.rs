//! `h2lab upstream --early-hints` on a tiny matrix: backends sending `103 Early Hints` on
//! `/page`, the client counts the interim responses each upstream protocol's proxy passed
//! on (HTTP/1.1 and h2c upstreams do; an HTTP/1.0 upstream gets none from the backend), and
//! the report prints them.

use std::time::Duration;

use h2lab_engine::StopFlag;
use h2lab_lab::upstream::{self, UpstreamConfig};
use h2lab_proxy::UpstreamProtocol;

#[test]
fn the_proxy_passes_103_on_and_the_report_counts_it() {
    let mut cfg = UpstreamConfig::quick();
    cfg.early_hints = true;
    cfg.payloads = vec!["page=/page?n=1&css=1&js=1".parse().unwrap()];
    cfg.arms = vec![
        UpstreamProtocol::H1,
        UpstreamProtocol::H10,
        UpstreamProtocol::H2c,
    ];
    cfg.concurrency = vec![4];
    cfg.runs = 1;
    cfg.backends = 1;
    cfg.warm_up = Duration::from_millis(100);
    cfg.duration = Duration::from_millis(300);
    cfg.rtt = Duration::from_millis(2);
    let r = upstream::run(&cfg, &StopFlag::new(), &mut |_| {}).unwrap();
    let cell = &r.cells[0];
    for a in &cell.arms {
        assert_eq!(a.failed, 0, "{:?}", a.arm);
        if a.arm == UpstreamProtocol::H10 {
            assert_eq!(a.informational, 0, "no 1xx to an HTTP/1.0 request");
        } else {
            assert!(a.informational > 0, "{:?}: no 103 passed on", a.arm);
        }
    }
    let text = upstream::render(&r);
    assert!(
        text.contains("1xx through the proxy, page c=4: h1 "),
        "{text}"
    );
}
