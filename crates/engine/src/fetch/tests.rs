use super::*;
use crate::transport::Endpoint;

fn cfg(url: &str) -> FetchConfig {
    FetchConfig::browser(Target::parse(url).unwrap(), FetchProtocol::Http11)
}

#[test]
fn endpoint_prefers_unix_socket_then_connect_to_then_every_resolved_address() {
    let mut c = cfg("http://localhost:8080/");
    c.unix_socket = Some(PathBuf::from("/tmp/x.sock"));
    let to = vec![
        SocketAddr::from(([127, 0, 0, 2], 9)),
        SocketAddr::from(([127, 0, 0, 3], 9)),
    ];
    c.connect_to.clone_from(&to);
    assert!(
        matches!(endpoint(&c).unwrap(), Endpoint::Unix(p) if p == std::path::Path::new("/tmp/x.sock"))
    );
    c.unix_socket = None;
    assert!(matches!(endpoint(&c).unwrap(), Endpoint::Tcp(v) if v == to));
    c.connect_to.clear();
    let Endpoint::Tcp(v) = endpoint(&c).unwrap() else {
        panic!("expected TCP addresses");
    };
    assert!(!v.is_empty());
    assert!(
        v.iter().all(|a| a.ip().is_loopback() && a.port() == 8080),
        "{v:?}"
    );
}

#[test]
fn unresolvable_origin_is_a_resolve_error() {
    assert!(matches!(
        endpoint(&cfg("http://no-such-host.invalid/")),
        Err(EngineError::Resolve { .. })
    ));
}
