//! h2spec (all 145 tests) against the proxy's HTTP/2 front, h2c and TLS, with an `h2lab serve`
//! backend behind it. Skipped with a message when h2spec is not installed, except under
//! `CI=true`.

mod common;

/// Runs h2spec; all 145 tests must pass.
fn run(bin: &std::path::Path, args: &[&str]) {
    let o = h2lab_testkit::h2spec::run(bin, args);
    assert!(
        o.summary.contains("145 tests, 145 passed") && o.success,
        "h2spec {args:?}: {}\n{}",
        o.summary,
        o.failures.join("\n")
    );
}

#[test]
fn h2spec_on_the_h2c_and_tls_fronts() {
    let Some(bin) = h2lab_testkit::h2spec::find() else {
        return;
    };
    let b = common::backends(1);
    let dir = std::env::temp_dir().join(format!("h2lab-proxy-h2spec-{}", std::process::id()));
    for proto in [
        h2lab_proxy::UpstreamProtocol::H1,
        h2lab_proxy::UpstreamProtocol::H2cMux,
    ] {
        let p = common::proxy(&b, proto, |c| {
            c.tls_listen = Some("127.0.0.1:0".parse().unwrap());
            c.front.cert_dir = Some(dir.clone());
        });
        let port = p.addr().unwrap().port().to_string();
        run(&bin, &["-h", "127.0.0.1", "-p", &port, "-o", "5"]);
        let tls = p.tls_addr().unwrap().port().to_string();
        run(
            &bin,
            &["-h", "127.0.0.1", "-p", &tls, "-t", "-k", "-o", "5"],
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
