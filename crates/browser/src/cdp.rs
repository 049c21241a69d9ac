//! The Chrome DevTools Protocol over `--remote-debugging-pipe`: each message is one JSON
//! object followed by a NUL octet, commands on the browser's fd 3, replies and events on its
//! fd 4. Commands carry an `id` the reply repeats; commands for a page carry the `sessionId`
//! of `Target.attachToTarget` (flat mode). Events met while waiting for a reply are kept in
//! order for [`Cdp::take_events`] and [`Cdp::wait_event`].
//!
//! A reader thread splits the browser's stream into messages and hands them over a channel;
//! it ends when the pipe closes (the browser exited or was killed).

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::BrowserError;

/// Splits `input` (the browser's fd 4) into messages; `Err` ends the stream.
fn reader<R: Read + Send + 'static>(input: R) -> Receiver<Result<Value, BrowserError>> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("h2lab-cdp".into())
        .spawn(move || {
            let mut r = BufReader::new(input);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Err(BrowserError::Closed));
                        return;
                    }
                    Ok(_) => {
                        if buf.last() == Some(&0) {
                            buf.pop();
                        }
                        let msg = serde_json::from_slice::<Value>(&buf).map_err(|e| {
                            BrowserError::Protocol(format!("not JSON ({e}): {} octets", buf.len()))
                        });
                        if tx.send(msg).is_err() {
                            return;
                        }
                    }
                }
            }
        })
        .expect("spawn the DevTools reader thread");
    rx
}

/// One DevTools connection over the two pipes.
pub struct Cdp<W: Write> {
    out: W,
    rx: Receiver<Result<Value, BrowserError>>,
    next_id: u64,
    events: Vec<Value>,
}

impl<W: Write> Cdp<W> {
    /// A connection writing commands to `out` and reading messages from `input`.
    pub fn new<R: Read + Send + 'static>(out: W, input: R) -> Self {
        Cdp {
            out,
            rx: reader(input),
            next_id: 1,
            events: Vec::new(),
        }
    }

    /// Sends `method` with `params` (to the page of `session`, or to the browser) and waits
    /// until `deadline` for its reply's `result`.
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Value, BrowserError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::from(s);
        }
        let mut bytes = serde_json::to_vec(&msg)
            .map_err(|e| BrowserError::Protocol(format!("encoding {method}: {e}")))?;
        bytes.push(0);
        self.out.write_all(&bytes)?;
        self.out.flush()?;
        loop {
            let m = self.recv(deadline, "reply")?;
            if m.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(e) = m.get("error") {
                    let text = e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_string();
                    return Err(BrowserError::Cdp(method.to_string(), text));
                }
                return Ok(m.get("result").cloned().unwrap_or(Value::Null));
            }
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
    }

    /// Waits until `deadline` for the event `method` (of any session), returning its
    /// `params`; earlier events stay in the buffer.
    pub fn wait_event(&mut self, method: &str, deadline: Instant) -> Result<Value, BrowserError> {
        if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
            return Ok(self.events[i]["params"].clone());
        }
        loop {
            let m = self.recv(deadline, "page event")?;
            let hit = m["method"] == method;
            let params = m["params"].clone();
            if m.get("method").is_some() {
                self.events.push(m);
            }
            if hit {
                return Ok(params);
            }
        }
    }

    /// Moves every event received so far out of the buffer (oldest first), after reading
    /// what the pipe already holds.
    pub fn take_events(&mut self) -> Vec<Value> {
        while let Ok(Ok(m)) = self.rx.try_recv() {
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
        std::mem::take(&mut self.events)
    }

    fn recv(&mut self, deadline: Instant, what: &'static str) -> Result<Value, BrowserError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => Err(BrowserError::Timeout(what, left)),
            Err(RecvTimeoutError::Disconnected) => Err(BrowserError::Closed),
        }
    }
}

/// The instant `d` from now (a deadline for [`Cdp::call`]).
pub fn deadline_in(d: Duration) -> Instant {
    Instant::now() + d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A browser stand-in: its messages, NUL-terminated, in one buffer.
    fn msgs(ms: &[Value]) -> std::io::Cursor<Vec<u8>> {
        let mut v = Vec::new();
        for m in ms {
            v.extend(serde_json::to_vec(m).unwrap());
            v.push(0);
        }
        std::io::Cursor::new(v)
    }

    #[test]
    fn replies_are_matched_by_id_and_events_kept() {
        let input = msgs(&[
            json!({"method": "Network.responseReceived", "params": {"requestId": "1"}}),
            json!({"id": 1, "result": {"ok": true}}),
            json!({"method": "Page.loadEventFired", "params": {"timestamp": 1.5}}),
        ]);
        let mut out = Vec::new();
        let mut c = Cdp::new(&mut out, input);
        let r = c
            .call(
                Some("S"),
                "Page.enable",
                json!({}),
                deadline_in(Duration::from_secs(5)),
            )
            .unwrap();
        assert_eq!(r["ok"], true);
        let ev = c
            .wait_event("Page.loadEventFired", deadline_in(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(ev["timestamp"], 1.5);
        let all = c.take_events();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0]["method"], "Network.responseReceived");
        drop(c);
        // The command went out as one NUL-terminated JSON object with the session.
        assert_eq!(out.last(), Some(&0));
        let sent: Value = serde_json::from_slice(&out[..out.len() - 1]).unwrap();
        assert_eq!(sent["id"], 1);
        assert_eq!(sent["method"], "Page.enable");
        assert_eq!(sent["sessionId"], "S");
    }

    #[test]
    fn an_error_reply_is_typed_and_a_closed_pipe_is_reported() {
        let input = msgs(&[json!({"id": 1, "error": {"code": -32000, "message": "nope"}})]);
        let mut c = Cdp::new(Vec::new(), input);
        let e = c
            .call(
                None,
                "Target.getTargets",
                json!({}),
                deadline_in(Duration::from_secs(5)),
            )
            .unwrap_err();
        assert!(
            matches!(e, BrowserError::Cdp(ref m, ref t) if m == "Target.getTargets" && t == "nope")
        );
        let e = c
            .call(
                None,
                "Browser.close",
                json!({}),
                deadline_in(Duration::from_secs(5)),
            )
            .unwrap_err();
        assert!(matches!(e, BrowserError::Closed));
    }
}
