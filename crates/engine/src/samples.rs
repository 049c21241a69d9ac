//! Raw samples for h2load's `--output-file` document: bounded reservoirs of request, connect
//! and time-to-first-byte times, kept only when asked for ([`crate::BenchConfig::max_samples`]).
//!
//! h2load keeps at most 1,000,000 samples per run (`max(256, 1,000,000 / threads)` per
//! thread) with reservoir sampling (Algorithm R): the first `cap` samples are kept, then the
//! n-th replaces a random kept one with probability `cap / n`. The same here, with a
//! per-worker xorshift generator (nothing shared between threads). Without the option there is
//! no reservoir at all, so a run pays nothing per request.

use std::time::Duration;

/// A bounded uniform sample of a stream of values.
#[derive(Debug, Clone)]
pub struct Reservoir {
    cap: usize,
    seen: u64,
    values: Vec<f64>,
    rng: u64,
}

impl Reservoir {
    /// An empty reservoir keeping at most `cap` values; `seed` seeds its generator.
    pub fn new(cap: usize, seed: u64) -> Reservoir {
        Reservoir {
            cap,
            seen: 0,
            values: Vec::new(),
            rng: seed | 1,
        }
    }

    /// Offers one value.
    #[inline]
    pub fn push(&mut self, v: f64) {
        self.seen += 1;
        if self.values.len() < self.cap {
            self.values.push(v);
            return;
        }
        // xorshift64*; the modulo bias is negligible against 2^64.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let i = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % self.seen;
        if let Some(slot) = usize::try_from(i).ok().and_then(|i| self.values.get_mut(i)) {
            *slot = v;
        }
    }

    /// Values offered so far (kept or not).
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The kept values, in no particular order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Forgets everything offered so far.
    pub fn clear(&mut self) {
        self.seen = 0;
        self.values.clear();
    }
}

/// One worker's reservoirs (times in seconds, as h2load writes them).
#[derive(Debug, Clone)]
pub(crate) struct WorkerSamples {
    pub request: Reservoir,
    pub connect: Reservoir,
    pub ttfb: Reservoir,
}

impl WorkerSamples {
    pub(crate) fn new(cap: usize, worker: u32) -> WorkerSamples {
        let seed = 0x9e37_79b9_7f4a_7c15u64 ^ (u64::from(worker) << 32);
        WorkerSamples {
            request: Reservoir::new(cap, seed),
            connect: Reservoir::new(cap, seed.rotate_left(17)),
            ttfb: Reservoir::new(cap, seed.rotate_left(31)),
        }
    }
}

/// The raw samples of a run, each sorted ascending, in seconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    /// Request times of completed requests.
    pub request: Vec<f64>,
    /// Connect times (one per connection).
    pub connect: Vec<f64>,
    /// Times to first byte (one per connection).
    pub ttfb: Vec<f64>,
}

impl Samples {
    pub(crate) fn add(&mut self, w: &WorkerSamples) {
        self.request.extend_from_slice(w.request.values());
        self.connect.extend_from_slice(w.connect.values());
        self.ttfb.extend_from_slice(w.ttfb.values());
    }

    pub(crate) fn sort(&mut self) {
        for v in [&mut self.request, &mut self.connect, &mut self.ttfb] {
            v.sort_by(f64::total_cmp);
        }
    }
}

/// Per-worker cap for a run-wide `max` over `threads` workers, as h2load splits it.
pub(crate) fn per_worker_cap(max: usize, threads: u32) -> usize {
    (max / usize::try_from(threads.max(1)).unwrap_or(1)).max(256.min(max))
}

/// `d` in seconds.
#[inline]
pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_up_to_the_cap() {
        let mut r = Reservoir::new(5, 1);
        for i in 0..5 {
            r.push(f64::from(i));
        }
        assert_eq!(r.values(), &[0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(r.seen(), 5);
    }

    #[test]
    fn never_grows_past_the_cap_and_samples_uniformly() {
        let mut r = Reservoir::new(1000, 7);
        for i in 0..100_000 {
            r.push(f64::from(i));
        }
        assert_eq!(r.values().len(), 1000);
        assert_eq!(r.seen(), 100_000);
        // Uniform: about half of the kept values come from the first half of the stream.
        let low = r.values().iter().filter(|v| **v < 50_000.0).count();
        assert!((400..=600).contains(&low), "{low}");
        r.clear();
        assert_eq!((r.values().len(), r.seen()), (0, 0));
    }

    #[test]
    fn caps_split_like_h2load() {
        assert_eq!(per_worker_cap(1_000_000, 1), 1_000_000);
        assert_eq!(per_worker_cap(1_000_000, 3), 333_333);
        assert_eq!(per_worker_cap(1_000_000, 100_000), 256);
        assert_eq!(per_worker_cap(10, 4), 10);
    }
}
