//! `103 Early Hints` through the proxy (as nginx 1.29 passes them): an `h2lab serve
//! --early-hints` backend's interim response reaches HTTP/1.1 and HTTP/2 clients ahead of the
//! final one, over every upstream protocol that carries it; an HTTP/1.0 hop (upstream or
//! client) gets none (RFC 9110 §15.2).

mod common;

use std::time::Duration;

use common::h2raw::H2Raw;
use common::{proxy, Client};
use h2lab_proxy::UpstreamProtocol;
use h2lab_server::ServerConfig;

const PAGE: &str = "/page?n=2&css=1&js=1&think=10ms";

#[test]
fn early_hints_reach_http1_and_http2_clients() {
    let backend = vec![h2lab_server::spawn(ServerConfig {
        early_hints: true,
        ..ServerConfig::local()
    })
    .expect("backend")];
    for proto in [
        UpstreamProtocol::H1,
        UpstreamProtocol::H10,
        UpstreamProtocol::H2c,
        UpstreamProtocol::H2cMux,
    ] {
        let p = proxy(&backend, proto, |_| {});
        let addr = p.addr().unwrap();
        // The backend sends no 1xx to an HTTP/1.0 request: nothing to pass on.
        let hinted = proto != UpstreamProtocol::H10;

        let mut c = Client::connect(addr);
        let r = c.get(PAGE);
        assert_eq!(r.status, 200, "{proto:?}");
        if hinted {
            assert_eq!(r.interim.len(), 1, "{proto:?}: {:?}", r.interim);
            let (status, link) = &r.interim[0];
            assert_eq!(*status, 103);
            let link = link.as_deref().unwrap_or_default();
            assert!(
                link.contains(".css>; rel=preload; as=style") && link.contains("as=script"),
                "{proto:?}: {link}"
            );
        } else {
            assert!(r.interim.is_empty(), "{proto:?}: {:?}", r.interim);
        }
        // The connection goes on: the next response is whole.
        assert_eq!(c.get("/ping").body, b"pong");

        // An HTTP/1.0 client never gets a 1xx.
        let mut c10 = Client::connect(addr);
        let r = c10.send(&format!("GET {PAGE} HTTP/1.0\r\n\r\n"), b"", false);
        assert_eq!(r.status, 200);
        assert!(r.interim.is_empty(), "{proto:?}: {:?}", r.interim);

        // HTTP/2 front: an interim HEADERS, then the final one, on the same stream.
        let mut h2 = H2Raw::connect(addr, &[]);
        assert!(h2.request(1, "GET", PAGE, true));
        // Until the stream ends (END_STREAM); the limit only bounds a hang.
        let ended = h2.read_until(Duration::from_secs(60), |f| {
            f.iter().any(|f| f.stream == 1 && f.flags & 0x1 != 0)
        });
        assert!(ended, "{proto:?}: the response did not end");
        let statuses = h2.statuses();
        let want: Vec<(u32, u16)> = if hinted {
            vec![(1, 103), (1, 200)]
        } else {
            vec![(1, 200)]
        };
        assert_eq!(statuses, want, "{proto:?}");
        p.shutdown();
        p.join().unwrap();
    }
}
