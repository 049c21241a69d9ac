//! h2spec (all 145 generic, HTTP/2 and HPACK tests, plus the strict ones) against the h2c
//! port and the TLS port; every test must pass on both. Skipped, with a message, when h2spec
//! is not installed (`go install github.com/summerwind/h2spec/cmd/h2spec@latest`), except
//! under `CI=true`, where a missing h2spec fails the test.

mod common;

/// Runs h2spec; every test must pass. Returns its summary line.
fn run(bin: &std::path::Path, args: &[&str]) -> String {
    let o = h2lab_testkit::h2spec::run(bin, args);
    assert!(
        o.summary.contains(" 0 failed") && o.success,
        "h2spec {args:?}: {}\n{}",
        o.summary,
        o.failures.join("\n")
    );
    o.summary
}

/// The full suite: 145 tests, every one must pass (none skipped).
const ALL_PASS: &str = "145 tests, 145 passed, 0 skipped, 0 failed";

#[test]
fn h2spec_passes_on_h2c_and_tls() {
    let Some(bin) = h2lab_testkit::h2spec::find() else {
        return;
    };
    let (s, _dir) = common::start_tls(|c| c.threads = 2);
    let port = s.addr().unwrap().port().to_string();
    let tls_port = s.tls_addr().unwrap().port().to_string();
    let h2c = run(&bin, &["-h", "127.0.0.1", "-p", &port]);
    assert_eq!(h2c, ALL_PASS, "h2c");
    let tls = run(&bin, &["-t", "-k", "-h", "127.0.0.1", "-p", &tls_port]);
    assert_eq!(tls, ALL_PASS, "TLS");
    // The strict mode adds the SHOULD-level checks.
    for args in [
        &["-S", "-h", "127.0.0.1", "-p", &port][..],
        &["-S", "-t", "-k", "-h", "127.0.0.1", "-p", &tls_port],
    ] {
        let strict = run(&bin, args);
        assert!(
            strict.ends_with(" 0 skipped, 0 failed"),
            "{args:?}: {strict}"
        );
    }
}

#[test]
fn a_missing_tool_fails_under_ci_and_skips_otherwise() {
    let missing = [std::path::PathBuf::from("/nonexistent/h2lab-no-such-tool")];
    assert_eq!(common::tool_in(false, "no-such-tool", &missing), None);
    let r = std::panic::catch_unwind(|| common::tool_in(true, "no-such-tool", &missing));
    assert!(
        r.is_err(),
        "CI=true: a missing tool is a failure, not a skip"
    );
}
