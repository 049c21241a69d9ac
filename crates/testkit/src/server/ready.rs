//! When a started anchor is ready: every listener accepts connections, each TCP one held by
//! the server's own processes, so that another process that took a port cannot pass for it.

use std::time::{Duration, Instant};

use super::running::AnchorServer;
use crate::net::{bound_by, Bound, Listener};

/// Why a start attempt is not ready.
pub(super) enum Ready {
    Exited,
    Timeout(Listener),
}

impl AnchorServer {
    pub(super) fn wait_ready(&mut self, timeout: Duration) -> Result<(), Ready> {
        let end = Instant::now() + timeout;
        let mut pending = self.layout.listeners();
        let mut pause = Duration::from_millis(2);
        loop {
            if let Some(child) = self.child.as_mut() {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    return Err(Ready::Exited);
                }
            }
            let group = self.processes();
            pending.retain(|l| !serves(l, &group));
            if pending.is_empty() {
                return Ok(());
            }
            if Instant::now() >= end {
                return Err(Ready::Timeout(pending.swap_remove(0)));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

/// Whether listener `l` is the server's (`group`: its processes) and accepts a connection: a
/// TCP port must be held in LISTEN state by one of them ([`bound_by`]); a UNIX socket is in
/// the server's own temp dir, so a connection suffices.
fn serves(l: &Listener, group: &[u32]) -> bool {
    match l {
        Listener::Tcp(a) => bound_by(group, Bound::TcpListen, a.port()) && l.accepts(),
        Listener::Unix(_) => l.accepts(),
    }
}
