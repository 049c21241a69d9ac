//! A returning visit with the page fetcher sending 0-RTT ([`FetchConfig::zero_rtt`]) against
//! `h2lab serve --tls --h3 --0rtt` (loopback, port 0), over HTTP/1.1 and HTTP/2 on TLS 1.3
//! and HTTP/3 on QUIC: the first visit leaves tickets in a store made with
//! [`TlsSessions::with_early_data`]; the returning visit's request rides in early data and is
//! answered early (`/info` says `"early_data":true`, the connection records the acceptance).
//! A server that cannot use the tickets rejects the early data and the request is answered
//! after the handshake; a server without `--0rtt` gives tickets without early data, so
//! nothing is sent early.

use std::net::SocketAddr;
use std::sync::Arc;

use h2lab_engine::fetch::{FetchConfig, FetchProtocol, Fetcher, TlsSessions};
use h2lab_engine::Target;
use h2lab_server::{RunningServer, ServerConfig};

const PROTOS: [FetchProtocol; 3] = [FetchProtocol::Http11, FetchProtocol::H2, FetchProtocol::H3];

fn server(zero_rtt: bool, tag: &str) -> (RunningServer, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("h2lab-fetch-0rtt-{}-{tag}", std::process::id()));
    let s = h2lab_server::spawn(ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir.clone()),
        h3: true,
        zero_rtt,
        ..ServerConfig::local()
    })
    .unwrap();
    (s, dir)
}

fn config(s: &RunningServer, proto: FetchProtocol, store: &Arc<TlsSessions>) -> FetchConfig {
    let origin = Target::parse(&format!(
        "https://127.0.0.1:{}/",
        s.tls_addr().unwrap().port()
    ))
    .unwrap();
    FetchConfig {
        sessions: Some(Arc::clone(store)),
        zero_rtt: true,
        ..FetchConfig::browser(origin, proto)
    }
}

/// One visit fetching `/info`: its body and the connection's (resumed, early data).
fn visit(cfg: &FetchConfig) -> (String, bool, Option<bool>) {
    let mut f = Fetcher::new(cfg.clone(), &["/info".to_owned()]).unwrap();
    let b = f.fetch(&[0], true).unwrap();
    assert_eq!(b.records[0].status, 200, "{cfg:?}");
    assert_eq!(b.records[0].attempts, 1);
    let c = &f.connections()[0];
    let out = (
        String::from_utf8_lossy(&b.bodies[0]).into_owned(),
        c.resumed,
        c.early_data,
    );
    f.close();
    out
}

#[test]
fn a_returning_visit_sends_its_request_in_0rtt_and_the_server_answers_it_early() {
    let (s, dir) = server(true, "on");
    for proto in PROTOS {
        let store = Arc::new(TlsSessions::with_early_data());
        let cfg = config(&s, proto, &store);
        let (body, resumed, early) = visit(&cfg);
        assert!(!resumed && early.is_none(), "{proto:?}: a full handshake");
        assert!(!body.contains("early_data"), "{proto:?}: {body}");
        let (body, resumed, early) = visit(&cfg);
        assert_eq!(early, Some(true), "{proto:?}: 0-RTT accepted");
        assert!(resumed, "{proto:?}");
        assert!(body.contains("\"early_data\":true"), "{proto:?}: {body}");
        // Without `zero_rtt` the same store resumes but sends nothing early.
        let plain = FetchConfig {
            zero_rtt: false,
            ..cfg.clone()
        };
        let (body, _, early) = visit(&plain);
        assert_eq!(early, None, "{proto:?}");
        assert!(!body.contains("early_data"), "{proto:?}: {body}");
    }
    // The server's own count: one early answer per protocol.
    assert_eq!(s.early_stats().snapshot()[3], 3);
    s.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rejected_or_refused_early_data_still_gets_the_request_answered() {
    let (on, dir_on) = server(true, "issuer");
    let (off, dir_off) = server(false, "plain");
    for proto in PROTOS {
        // Tickets from one server, offered to another that cannot decrypt them: the early
        // data is rejected (a full handshake) and the request is sent again after it.
        let store = Arc::new(TlsSessions::with_early_data());
        visit(&config(&on, proto, &store));
        let (body, resumed, early) = visit(&config(&off, proto, &store));
        assert_eq!(early, Some(false), "{proto:?}: rejected");
        assert!(!resumed, "{proto:?}");
        assert!(!body.contains("early_data"), "{proto:?}: {body}");
        // The server without --0rtt's own tickets allow no early data: resumed, none sent.
        let store = Arc::new(TlsSessions::with_early_data());
        let cfg = config(&off, proto, &store);
        visit(&cfg);
        let (body, resumed, early) = visit(&cfg);
        assert_eq!(early, None, "{proto:?}: nothing sent early");
        if proto != FetchProtocol::H3 {
            assert!(resumed, "{proto:?}");
        }
        assert!(!body.contains("early_data"), "{proto:?}: {body}");
    }
    assert_eq!(off.early_stats().snapshot()[3], 0);
    on.shutdown();
    off.shutdown();
    let _ = std::fs::remove_dir_all(&dir_on);
    let _ = std::fs::remove_dir_all(&dir_off);
}
