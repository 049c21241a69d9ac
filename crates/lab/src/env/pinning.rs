//! How the in-process servers and the client share the CPUs: [`Pinning`] (what the flags
//! ask for), [`pin_servers`] (pins the servers' threads while they start, then the client's)
//! and [`Isolation`] (the split a run used, recorded in results.json).

use serde::Serialize;

use crate::host;

/// Where the built-in server's threads and the client's threads run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Pinning {
    /// With two or more CPUs: the server on the first half of the allowed CPUs, the client
    /// (and the links) on the rest ([`default_split`]).
    #[default]
    Auto,
    /// No pinning: the scheduler places every thread.
    Off,
    /// These CPU sets (either may be empty: that side is not pinned).
    Cpus {
        /// The server's CPUs.
        server: Vec<usize>,
        /// The client's CPUs.
        client: Vec<usize>,
    },
}

/// The CPU split a run used (recorded in results.json).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Isolation {
    /// CPUs the built-in server's threads were pinned to (empty: not pinned).
    pub server_cpus: Vec<usize>,
    /// CPUs the client threads (and the links) were pinned to (empty: not pinned).
    pub client_cpus: Vec<usize>,
    /// One line for the terminal and the report.
    pub note: String,
}

/// The default split of `allowed` CPUs: the server gets the first half (at least one),
/// the client the rest; `None` with fewer than two CPUs.
pub fn default_split(allowed: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    if allowed.len() < 2 {
        return None;
    }
    let half = allowed.len() / 2;
    Some((allowed[..half].to_vec(), allowed[half..].to_vec()))
}

/// Restores the calling thread's CPUs when dropped (see [`pin_servers`]).
#[derive(Debug, Default)]
pub struct PinGuard {
    /// The thread moved to the client CPUs and the CPUs it had before.
    pinned: Option<(u32, Vec<usize>)>,
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        if let Some((tid, cpus)) = self.pinned.take() {
            if host::current_tid() == Some(tid) && !cpus.is_empty() {
                let _ = host::pin(0, &cpus);
            }
        }
    }
}

/// Splits the CPUs as `pinning` says between in-process servers and the client: pins the
/// calling thread to the server CPUs while `start` runs (the threads it starts inherit the
/// set: servers, proxies, relays), then moves it to the client CPUs, which the client's
/// worker threads started later inherit. Returns what `start` returned, the split with its
/// one-line note (the `cpus:` line, results.json's `isolation`), and a guard that gives the
/// calling thread its CPUs back when dropped (drop it after the servers have stopped).
pub fn pin_servers<T>(pinning: &Pinning, start: impl FnOnce() -> T) -> (T, Isolation, PinGuard) {
    let allowed = host::allowed_cpus().unwrap_or_default();
    let split = match pinning {
        Pinning::Off => None,
        Pinning::Auto => default_split(&allowed),
        Pinning::Cpus { server, client } => Some((server.clone(), client.clone())),
    };
    let me = host::current_tid();
    let mut isolation = Isolation {
        note: match (pinning, allowed.len()) {
            (Pinning::Off, _) => "not pinned (--no-pin)".into(),
            (Pinning::Auto, n) if n < 2 => {
                "not pinned: one CPU, the server and the client share it".into()
            }
            _ => String::new(),
        },
        ..Isolation::default()
    };
    if let Some((sv, _)) = split.as_ref().filter(|(sv, _)| !sv.is_empty()) {
        match host::pin(0, sv) {
            Ok(()) => isolation.server_cpus = sv.clone(),
            Err(e) => isolation.note = format!("not pinned: {e}"),
        }
    }
    let started = start();
    let mut guard = PinGuard::default();
    if let (Some((_, cl)), Some(tid)) = (&split, me) {
        // Back to all allowed CPUs, then to the client's.
        let target = if cl.is_empty() { &allowed } else { cl };
        if !target.is_empty() && host::pin(0, target).is_ok() && !cl.is_empty() {
            isolation.client_cpus = cl.clone();
            guard.pinned = Some((tid, allowed.clone()));
        }
    }
    if isolation.note.is_empty() {
        let list = |v: &[usize]| {
            if v.is_empty() {
                "any CPU".to_owned()
            } else {
                format!("CPU {}", host::format_cpu_list(v))
            }
        };
        isolation.note = format!(
            "server threads on {}, client threads on {}",
            list(&isolation.server_cpus),
            list(&isolation.client_cpus)
        );
    }
    (started, isolation, guard)
}
