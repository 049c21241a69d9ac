use std::io;

use h2lab_wire::h1::H1Error;

use super::*;

#[test]
fn alpn_rules_match_h2load() {
    let both = AlpnOffer::of(&["h2".into(), "http/1.1".into()]);
    assert_eq!(both.choose(Some(b"h2")).unwrap(), (AppProtocol::H2, false));
    // http/1.1 chosen although h2 was offered: a fallback.
    assert_eq!(
        both.choose(Some(b"http/1.1")).unwrap(),
        (AppProtocol::Http11, true)
    );
    // Nothing selected: http/1.1 when offered.
    assert_eq!(both.choose(None).unwrap(), (AppProtocol::Http11, true));

    let h2_only = AlpnOffer::of(&["h2".into()]);
    assert!(matches!(h2_only.choose(None), Err(ProtocolError::NoAlpn)));
    assert!(matches!(
        h2_only.choose(Some(b"spdy/3")),
        Err(ProtocolError::UnsupportedAlpn(p)) if p == b"spdy/3"
    ));

    let h1_only = AlpnOffer::of(&["http/1.1".into()]);
    assert_eq!(h1_only.choose(None).unwrap(), (AppProtocol::Http11, false));
    assert_eq!(
        h1_only.choose(Some(b"http/1.1")).unwrap(),
        (AppProtocol::Http11, false)
    );
}

#[test]
fn ends_are_classified_like_h2load_counts() {
    // Protocol violations (h2load: errored by the peer's fault).
    assert!(ConnEnd::Session(SessionError::H1(H1Error::InvalidStatus)).is_protocol());
    assert!(ConnEnd::Session(SessionError::UnexpectedUpgrade).is_protocol());
    assert!(ConnEnd::Negotiation(ProtocolError::NoAlpn).is_protocol());
    // Lost connections.
    assert!(!ConnEnd::ServerClosed.is_protocol());
    assert!(!ConnEnd::Truncated(SessionError::UnexpectedEof).is_protocol());
    assert!(!ConnEnd::Session(SessionError::UnexpectedEof).is_protocol());
    assert!(
        !ConnEnd::Transport(TransportError::Read(io::ErrorKind::ConnectionReset.into()))
            .is_protocol()
    );
    assert!(
        !ConnEnd::Transport(TransportError::Write(io::ErrorKind::BrokenPipe.into())).is_protocol()
    );
    assert!(ConnEnd::Transport(TransportError::Record(rustls::Error::DecryptError)).is_protocol());
    // The protocol error carried forward keeps its kind.
    assert!(matches!(
        ConnEnd::Session(SessionError::H1(H1Error::InvalidStatus)).into_protocol(),
        Some(ProtocolError::Session(SessionError::H1(
            H1Error::InvalidStatus
        )))
    ));
    assert!(ConnEnd::ServerClosed.into_protocol().is_none());
}

#[test]
fn messages_keep_their_wording() {
    let e = ConnEnd::Transport(TransportError::Write(io::ErrorKind::BrokenPipe.into()));
    assert!(e.to_string().starts_with("write: "), "{e}");
    let e = ConnEnd::Session(SessionError::H1(H1Error::InvalidStatus));
    assert!(
        e.to_string().starts_with("invalid HTTP/1.1 response: "),
        "{e}"
    );
    let e = ConnEnd::Tls(TransportError::HandshakeEof);
    assert_eq!(
        e.to_string(),
        "TLS handshake failed: connection closed during TLS handshake"
    );
}

#[test]
fn connect_walks_the_address_list() {
    // The first address refuses immediately (nothing listens), the second accepts.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let live = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let live_addr = live.local_addr().unwrap();
    let cfg = crate::BenchConfig::new(vec![crate::Target::parse("http://127.0.0.1/").unwrap()]);
    let dialer = Dialer {
        endpoint: Endpoint::Tcp(vec![dead_addr, live_addr]),
        tls: None,
        alpn: AlpnOffer::of(&[]),
        cleartext: AppProtocol::Http11,
        prep: Arc::new(Prepared::new(&cfg).unwrap()),
        max_streams: 1,
        h2: crate::fetch::FetchConfig::browser(
            crate::Target::parse("http://127.0.0.1/").unwrap(),
            crate::fetch::FetchProtocol::H2,
        )
        .h2,
        qpack: crate::h3::QpackSettings::STATIC,
        verbose: false,
        quic: None,
        zero_rtt: false,
        early_proto: std::cell::Cell::new(None),
        reconnect_every: 0,
        resumes: false,
    };
    let poll = mio::Poll::new().unwrap();
    // A non-blocking connect to loopback may only fail later (at `establish`):
    // walk on from whichever address failed, as the callers do.
    let mut from = 0;
    let conn = loop {
        let mut conn = dialer
            .connect(poll.registry(), Token(0), from, Instant::now())
            .unwrap();
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let r = loop {
            match conn.establish() {
                Ok(Establish::Waiting) if Instant::now() < deadline => std::thread::yield_now(),
                r => break r,
            }
        };
        match r {
            Ok(Establish::Ready) => break conn,
            Err(ConnEnd::Connect { addr_idx, .. }) => from = addr_idx + 1,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(conn.addr_idx, 1);
    assert_eq!(dialer.describe(conn.addr_idx), live_addr.to_string());
    assert_eq!(
        dialer.negotiate(&conn).unwrap(),
        (AppProtocol::Http11, false)
    );
}
