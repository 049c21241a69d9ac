//! The CPU split the experiments (`compare`, `upstream`) report.

use h2lab_lab::env::Isolation;

/// With two or more allowed CPUs, `iso` pinned the servers and the client to non-empty,
/// disjoint CPU sets (nothing to check on one CPU: nothing is pinned).
pub fn assert_split(iso: &Isolation) {
    if h2lab_lab::host::allowed_cpus().is_some_and(|c| c.len() >= 2) {
        assert!(!iso.server_cpus.is_empty(), "{iso:?}");
        assert!(!iso.client_cpus.is_empty(), "{iso:?}");
        assert!(
            iso.server_cpus.iter().all(|c| !iso.client_cpus.contains(c)),
            "{iso:?}"
        );
    }
}
