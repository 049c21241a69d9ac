//! A returning visit with the page fetcher: two fetchers sharing one [`TlsSessions`] store
//! against `h2lab serve --tls --h3` (loopback, port 0). The first visit's handshakes are
//! full ones and leave tickets in the store; the second visit's connections offer them and
//! (over TLS on TCP) resume. Without a shared store nothing is offered. Over HTTP/1.1,
//! HTTP/2 and HTTP/3.

use std::net::SocketAddr;
use std::sync::Arc;

use h2lab_engine::fetch::{FetchConfig, FetchProtocol, Fetcher, TlsSessions};
use h2lab_engine::Target;
use h2lab_server::ServerConfig;

fn visit(cfg: &FetchConfig) -> Vec<bool> {
    let mut f = Fetcher::new(cfg.clone(), &["/ping".to_owned()]).unwrap();
    let b = f.fetch(&[0], false).unwrap();
    assert_eq!(b.records[0].status, 200);
    let resumed = f.connections().iter().map(|c| c.resumed).collect();
    f.close();
    resumed
}

#[test]
fn a_second_visit_resumes_the_first_visits_tls_sessions() {
    let dir = std::env::temp_dir().join(format!("h2lab-fetch-resume-{}", std::process::id()));
    let s = h2lab_server::spawn(ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir.clone()),
        h3: true,
        ..ServerConfig::local()
    })
    .unwrap();
    let origin = Target::parse(&format!(
        "https://127.0.0.1:{}/",
        s.tls_addr().unwrap().port()
    ))
    .unwrap();
    for proto in [FetchProtocol::Http11, FetchProtocol::H2, FetchProtocol::H3] {
        let store = Arc::new(TlsSessions::new());
        let cfg = FetchConfig {
            sessions: Some(Arc::clone(&store)),
            ..FetchConfig::browser(origin.clone(), proto)
        };
        assert_eq!(
            visit(&cfg),
            [false],
            "{proto:?}: the first visit is a full handshake"
        );
        let first = store.counts();
        assert_eq!(first.offered, 0, "{proto:?}");
        assert!(first.stored >= 1, "{proto:?}: no ticket stored: {first:?}");
        let again = visit(&cfg);
        let second = store.counts();
        assert_eq!(
            second.offered, 1,
            "{proto:?}: the returning visit offers a ticket"
        );
        if proto != FetchProtocol::H3 {
            assert_eq!(again, [true], "{proto:?}: the server accepts it");
        }
        // A fetcher without the store: nothing offered, a full handshake.
        let cold = FetchConfig::browser(origin.clone(), proto);
        assert_eq!(visit(&cold), [false], "{proto:?}");
        assert_eq!(store.counts().offered, 1, "{proto:?}");
    }
    s.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
