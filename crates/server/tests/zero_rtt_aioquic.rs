//! `serve --h3 --0rtt` against aioquic, an independent QUIC and HTTP/3 stack (Python; the
//! client is `tests/aioquic/zero_rtt.py`, installed by `.ci/install-anchors.sh`): a first
//! connection receives a session ticket, the next one resumes it and sends its requests in
//! 0-RTT, which the server accepts and answers early (`/info` says `"early_data":true`, the
//! server's early-data counters agree); an unsafe method in 0-RTT gets `425 Too Early` and
//! runs when sent after the handshake; a server without `--0rtt` resumes but its tickets
//! allow no early data, and a ticket the server cannot use is a rejection whose requests are
//! answered after the handshake.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::h3::start_h3;
use h2lab_server::RunningServer;

const ANSWERED: usize = 3;
const TOO_EARLY: usize = 4;

/// The Python interpreter that has aioquic (`H2LAB_PYTHON`, else `python3` on PATH). When
/// there is none: panics under `CI=true`, else records a skip and returns `None`.
fn aioquic() -> Option<PathBuf> {
    let python = std::env::var_os("H2LAB_PYTHON").unwrap_or_else(|| "python3".into());
    let ok = Command::new(&python)
        .args(["-c", "import aioquic"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(PathBuf::from(python));
    }
    assert!(
        !common::tools_required(),
        "aioquic is not installed for {python:?}; CI=true requires it (.ci/install-anchors.sh)"
    );
    h2lab_testkit::note_skip("aioquic");
    None
}

/// What one aioquic connection reported.
#[derive(Debug)]
struct Outcome {
    resumed: bool,
    /// 0-RTT keys were ready when the requests were sent: they went out as 0-RTT.
    early_keys: bool,
    early_data_accepted: bool,
    /// (status, body) per request, in order.
    responses: Vec<(u16, String)>,
}

/// Runs one connection of the client script against `server`'s HTTP/3 port.
fn connect(
    python: &Path,
    server: &RunningServer,
    ticket_in: Option<&Path>,
    ticket_out: Option<&Path>,
    zero_rtt: bool,
    requests: &[&str],
) -> Outcome {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/aioquic/zero_rtt.py");
    let mut c = Command::new(python);
    c.arg(script)
        .args(["--port", &server.h3_addr().unwrap().port().to_string()]);
    if let Some(t) = ticket_in {
        c.arg("--ticket-in").arg(t);
    }
    if let Some(t) = ticket_out {
        c.arg("--ticket-out").arg(t);
    }
    if zero_rtt {
        c.arg("--zero-rtt");
    }
    let out = c.args(requests).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    let flag = |k: &str| v[k].as_bool().unwrap();
    Outcome {
        resumed: flag("resumed"),
        early_keys: flag("early_keys"),
        early_data_accepted: flag("early_data_accepted"),
        responses: v["responses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let status = r["status"].as_u64().unwrap_or(0) as u16;
                (status, r["body"].as_str().unwrap_or("").to_owned())
            })
            .collect(),
    }
}

#[test]
fn aioquic_resumes_and_its_0rtt_get_is_answered_early_and_post_gets_425() {
    let Some(py) = aioquic() else { return };
    let (server, dir) = start_h3(|c| c.zero_rtt = true);
    let t1 = dir.path().join("t1");
    let t2 = dir.path().join("t2");
    let first = connect(&py, &server, None, Some(&t1), false, &["GET /info"]);
    assert!(!first.resumed && !first.early_keys, "{first:?}");
    assert_eq!(first.responses[0].0, 200, "{first:?}");
    assert!(!first.responses[0].1.contains("early_data"), "{first:?}");

    // Returning: the GET and a POST ride in 0-RTT; the GET is answered early, the POST
    // must not be replayable and gets 425.
    let second = connect(
        &py,
        &server,
        Some(&t1),
        Some(&t2),
        true,
        &["GET /info", "POST /info"],
    );
    assert!(second.early_keys, "0-RTT was sent: {second:?}");
    assert!(second.resumed && second.early_data_accepted, "{second:?}");
    assert_eq!(second.responses[0].0, 200, "{second:?}");
    assert!(
        second.responses[0].1.contains("\"early_data\":true"),
        "{second:?}"
    );
    assert_eq!(second.responses[1].0, 425, "{second:?}");
    let s = server.early_stats().snapshot();
    assert_eq!((s[ANSWERED], s[TOO_EARLY]), (1, 1), "{s:?}");

    // The POST sent again after the handshake (a fresh ticket, requests not in 0-RTT) runs.
    let third = connect(&py, &server, Some(&t2), None, false, &["POST /info"]);
    assert!(third.resumed && !third.early_keys, "{third:?}");
    assert_eq!(third.responses[0].0, 200, "{third:?}");
    assert!(!third.responses[0].1.contains("early_data"), "{third:?}");
    let s = server.early_stats().snapshot();
    assert_eq!((s[ANSWERED], s[TOO_EARLY]), (1, 1), "{s:?}");
}

#[test]
fn aioquic_against_a_server_without_0rtt_resumes_and_is_answered_after_the_handshake() {
    let Some(py) = aioquic() else { return };
    let (plain, dir) = start_h3(|_| {});
    let t = dir.path().join("t");
    connect(&py, &plain, None, Some(&t), false, &["GET /info"]);
    // The server's ticket allows no early data: the client resumes and waits for the
    // handshake before sending.
    let second = connect(&py, &plain, Some(&t), None, true, &["GET /info"]);
    assert!(second.resumed, "{second:?}");
    assert!(
        !second.early_keys && !second.early_data_accepted,
        "{second:?}"
    );
    assert_eq!(second.responses[0].0, 200, "{second:?}");
    assert!(!second.responses[0].1.contains("early_data"), "{second:?}");

    // A 0-RTT ticket from another server (whose ticket keys this one does not have): the
    // client sends its request in 0-RTT, the server rejects it with a full handshake, and
    // the client sends the request again after the handshake (RFC 9001 §4.6.2).
    let (other, dir2) = start_h3(|c| c.zero_rtt = true);
    let foreign = dir2.path().join("foreign");
    connect(&py, &other, None, Some(&foreign), false, &["GET /info"]);
    let rejected = connect(&py, &plain, Some(&foreign), None, true, &["GET /info"]);
    assert!(rejected.early_keys, "0-RTT was sent: {rejected:?}");
    assert!(
        !rejected.resumed && !rejected.early_data_accepted,
        "{rejected:?}"
    );
    assert_eq!(rejected.responses[0].0, 200, "{rejected:?}");
    assert!(
        !rejected.responses[0].1.contains("early_data"),
        "{rejected:?}"
    );
    assert_eq!(plain.early_stats().snapshot()[ANSWERED], 0);
}
