//! h2spec (all 145 generic, HTTP/2 and HPACK tests, plus the strict ones) against the h2c
//! port and the TLS port. Skipped, with a message, when h2spec is not installed
//! (`go install github.com/summerwind/h2spec/cmd/h2spec@latest`).

mod common;

fn h2spec() -> Option<std::path::PathBuf> {
    let mut candidates = vec![
        std::path::PathBuf::from("/usr/local/bin/h2spec"),
        std::path::PathBuf::from("/usr/bin/h2spec"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(std::path::Path::new(&home).join("go/bin/h2spec"));
    }
    if let Some(gopath) = std::env::var_os("GOPATH") {
        candidates.push(std::path::Path::new(&gopath).join("bin/h2spec"));
    }
    let found = candidates.into_iter().find(|p| p.exists());
    if found.is_none() {
        eprintln!("SKIPPED: h2spec is not installed");
    }
    found
}

fn run(bin: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new(bin).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let summary = text
        .lines()
        .rev()
        .find(|l| l.contains(" tests, "))
        .unwrap_or("")
        .to_string();
    let failures: Vec<&str> = text.lines().filter(|l| l.contains('×')).collect();
    assert!(
        summary.contains(" 0 failed") && out.status.success(),
        "h2spec {args:?}: {summary}\n{}",
        failures.join("\n")
    );
    summary
}

#[test]
fn h2spec_passes_on_h2c_and_tls() {
    let Some(bin) = h2spec() else { return };
    let (s, _dir) = common::start_tls(|c| c.threads = 2);
    let port = s.addr().unwrap().port().to_string();
    let tls_port = s.tls_addr().unwrap().port().to_string();
    let h2c = run(&bin, &["-h", "127.0.0.1", "-p", &port]);
    assert!(h2c.starts_with("145 tests, 145 passed"), "{h2c}");
    let tls = run(&bin, &["-t", "-k", "-h", "127.0.0.1", "-p", &tls_port]);
    assert!(tls.starts_with("145 tests, 145 passed"), "{tls}");
    let strict = run(&bin, &["-S", "-h", "127.0.0.1", "-p", &port]);
    assert!(strict.contains(" 0 failed"), "{strict}");
}
