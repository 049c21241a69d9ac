//! Shared helpers for the benchmarks (none yet).
