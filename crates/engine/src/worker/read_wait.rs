//! Read waiting: an idle worker waits a moment before it reads, so that
//! responses arriving close together are read together.
//!
//! A worker that is faster than its server wakes for every segment the
//! server writes. Against nginx (which writes every stream's HEADERS and DATA
//! as segments of their own) that is about 1.5 wake-ups and reads per
//! request, and on Linux every read that frees more than one segment's worth
//! of the receive buffer makes the kernel send an ACK right away — a packet
//! the server's socket then has to process, charged to the client. Measured
//! with perf against nginx at `-c100 -m10`: the read path was 42% of the
//! client's CPU, 19% of it in that ACK, and sleeping/waking another 8%.
//!
//! So when a poll finds nothing to do, the worker sleeps a short time (not
//! woken by the sockets) and then polls again: the segments that arrived
//! meanwhile are read with one read per connection, one ACK, one wake-up —
//! what a NIC's interrupt moderation does for a real network.
//!
//! The cost is in the measurements: a response that arrives during the wait
//! is seen up to the wait's length later. The wait is therefore a fraction of
//! the worker's recent mean request time ([`FRACTION`], so a response is seen
//! at most 1% later, on average half that), capped by `--read-wait`
//! ([`crate::DEFAULT_READ_WAIT`]), and skipped when it would be shorter than
//! [`MIN_WAIT`] (sleeping that briefly costs more than it saves). At `-c1 -m1`
//! against a local server (request times of tens of microseconds) the worker
//! never waits; at `-c100 -m10` against nginx (milliseconds) it waits the
//! cap. `--read-wait 0` turns it off.
//!
//! Nor does it wait when reads already carry several responses each
//! (more than [`RESPONSES_PER_READ`] per read recently): a
//! server that answers a connection's streams in one write (nghttpd: 0.1
//! reads per response at `-m10`) leaves nothing to merge, and the sleep
//! would only add system calls.

use std::time::Duration;

/// The wait is at most this fraction of the recent mean request time.
pub(crate) const FRACTION: u32 = 100;
/// Shorter waits are not worth a sleep.
pub(crate) const MIN_WAIT: Duration = Duration::from_micros(5);
/// Weight of one completed request in the moving average: 1/32.
const SHIFT: u32 = 5;
/// No waiting while reads (that returned data) carry more than this many
/// completed responses each.
pub(crate) const RESPONSES_PER_READ: u64 = 4;
/// The read and completion counts are halved when completions reach this, so
/// they describe the last few thousand responses.
const WINDOW: u32 = 4096;

/// One worker's read-wait state: the cap and the moving average of request
/// times it is derived from (no shared state).
#[derive(Debug, Clone)]
pub(crate) struct ReadWait {
    max: Duration,
    /// Exponentially weighted mean request time, nanoseconds.
    mean_ns: u64,
    /// Reads that returned data, and completed responses (decaying counts).
    reads: u32,
    completions: u32,
}

impl ReadWait {
    /// Read waiting with `max` as the longest wait.
    pub(crate) fn new(max: Duration) -> ReadWait {
        ReadWait {
            max,
            mean_ns: 0,
            reads: 0,
            completions: 0,
        }
    }

    /// Records the time one request took (send to last byte). A time above
    /// twice the mean counts as twice the mean, so that one outlier (a 70 ms
    /// stall among 40 µs requests) does not make the next requests wait; a
    /// real change still doubles the mean within about 22 requests.
    pub(crate) fn observe(&mut self, request_time: Duration) {
        self.completions += 1;
        if self.completions >= WINDOW {
            self.completions /= 2;
            self.reads /= 2;
        }
        let ns = u64::try_from(request_time.as_nanos()).unwrap_or(u64::MAX);
        if self.mean_ns == 0 {
            self.mean_ns = ns.max(1);
            return;
        }
        let ns = ns.min(self.mean_ns.saturating_mul(2));
        if ns >= self.mean_ns {
            self.mean_ns += (ns - self.mean_ns) >> SHIFT;
        } else {
            self.mean_ns -= (self.mean_ns - ns) >> SHIFT;
        }
    }

    /// Records one read that returned data (one connection, one wake-up).
    pub(crate) fn read(&mut self) {
        self.reads = self.reads.saturating_add(1);
    }

    /// How long to wait before the next poll when the last one found
    /// nothing; `None` to poll (and block) at once.
    pub(crate) fn wait(&self) -> Option<Duration> {
        if u64::from(self.reads) * RESPONSES_PER_READ < u64::from(self.completions) {
            return None; // reads already carry several responses each
        }
        let w = Duration::from_nanos(self.mean_ns / u64::from(FRACTION)).min(self.max);
        (w >= MIN_WAIT).then_some(w)
    }
}

/// Lets this thread's sleeps end on time: Linux's default timer slack
/// (50 µs) would stretch a 10 µs wait to 60 µs. Elsewhere a no-op.
pub(crate) fn precise_sleeps() {
    #[cfg(target_os = "linux")]
    {
        // 1 µs; failing leaves the default slack (longer waits, still correct).
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1_000));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: Duration = Duration::from_micros(50);

    /// One response that arrived in a read of its own.
    fn seen(r: &mut ReadWait, each: Duration) {
        r.read();
        r.observe(each);
    }

    #[test]
    fn no_wait_before_any_request_completed() {
        assert_eq!(ReadWait::new(MAX).wait(), None);
    }

    #[test]
    fn waits_a_hundredth_of_the_mean_request_time() {
        let mut r = ReadWait::new(MAX);
        seen(&mut r, Duration::from_millis(2));
        assert_eq!(r.wait(), Some(Duration::from_micros(20)));
    }

    #[test]
    fn never_longer_than_the_cap() {
        let mut r = ReadWait::new(MAX);
        seen(&mut r, Duration::from_millis(20));
        assert_eq!(r.wait(), Some(MAX));
        let mut r = ReadWait::new(Duration::from_micros(7));
        seen(&mut r, Duration::from_millis(20));
        assert_eq!(r.wait(), Some(Duration::from_micros(7)));
    }

    #[test]
    fn fast_requests_never_wait() {
        // -c1 -m1 against a local server: tens of microseconds per request.
        let mut r = ReadWait::new(MAX);
        for _ in 0..1000 {
            seen(&mut r, Duration::from_micros(40));
        }
        assert_eq!(r.wait(), None);
        // Just below the threshold: 100 × 5 µs = 500 µs.
        let mut r = ReadWait::new(MAX);
        seen(&mut r, Duration::from_micros(499));
        assert_eq!(r.wait(), None);
        r = ReadWait::new(MAX);
        seen(&mut r, Duration::from_micros(500));
        assert_eq!(r.wait(), Some(MIN_WAIT));
    }

    #[test]
    fn a_zero_cap_turns_it_off() {
        let mut r = ReadWait::new(Duration::ZERO);
        seen(&mut r, Duration::from_secs(1));
        assert_eq!(r.wait(), None);
    }

    #[test]
    fn the_mean_follows_a_change_in_request_time() {
        let mut r = ReadWait::new(MAX);
        seen(&mut r, Duration::from_millis(5));
        assert!(r.wait().is_some());
        // The server gets fast: the wait goes away within a few hundred requests.
        let mut n = 0;
        while r.wait().is_some() {
            seen(&mut r, Duration::from_micros(30));
            n += 1;
            assert!(n < 500, "still waiting after {n} fast requests");
        }
        // And comes back when it gets slow again.
        for _ in 0..500 {
            seen(&mut r, Duration::from_millis(20));
        }
        assert_eq!(r.wait(), Some(MAX));
    }

    /// `n` responses of `each`, arriving `per_read` to a read.
    fn responses(r: &mut ReadWait, n: u32, per_read: u32, each: Duration) {
        for i in 0..n {
            if i % per_read == 0 {
                r.read();
            }
            r.observe(each);
        }
    }

    #[test]
    fn no_wait_while_reads_carry_several_responses() {
        // nghttpd at -m10: a connection's ten responses in one read.
        let mut r = ReadWait::new(MAX);
        responses(&mut r, 1000, 10, Duration::from_millis(5));
        assert_eq!(r.wait(), None);
        // nginx: HEADERS and DATA of each stream in segments of their own.
        let mut r = ReadWait::new(MAX);
        responses(&mut r, 1000, 1, Duration::from_millis(5));
        assert_eq!(r.wait(), Some(MAX));
        // Four responses per read is still worth merging; five is not.
        let mut r = ReadWait::new(MAX);
        responses(&mut r, 1000, 4, Duration::from_millis(5));
        assert_eq!(r.wait(), Some(MAX));
        responses(&mut r, 4000, 5, Duration::from_millis(5));
        assert_eq!(r.wait(), None);
        // The counts decay: when the server starts writing each response on
        // its own, waiting comes back within a window.
        responses(&mut r, 4096, 1, Duration::from_millis(5));
        assert_eq!(r.wait(), Some(MAX));
    }

    #[test]
    fn an_outlier_counts_as_twice_the_mean() {
        let mut r = ReadWait::new(Duration::from_secs(1));
        seen(&mut r, Duration::from_micros(1000));
        seen(&mut r, Duration::from_millis(70));
        // 1000 µs + (2000 − 1000) / 32 = 1031.25 µs; a hundredth of it.
        assert_eq!(r.wait(), Some(Duration::from_nanos(10_312)));
        // -c1 -m1: a stall among fast requests starts no waiting.
        let mut r = ReadWait::new(MAX);
        for _ in 0..100 {
            seen(&mut r, Duration::from_micros(40));
        }
        seen(&mut r, Duration::from_millis(70));
        assert_eq!(r.wait(), None);
    }

    /// The latency bias bound, over many request-time sequences: a wait (how late a
    /// response can be seen) is never longer than the cap, nor than 1% of the longest
    /// request time observed, nor shorter than `MIN_WAIT`.
    #[test]
    fn the_bias_is_bounded_by_the_cap_and_one_percent_of_request_times() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut waits = 0u32;
        for cap_us in [5u64, 20, 50, 1000] {
            let cap = Duration::from_micros(cap_us);
            for _ in 0..50 {
                let mut r = ReadWait::new(cap);
                let mut longest = Duration::ZERO;
                for _ in 0..2000 {
                    // 1 µs .. ~100 ms, spread over five orders of magnitude.
                    let t = Duration::from_nanos(
                        1_000 * 10u64.pow((next() % 6) as u32) * (1 + next() % 9) / 9,
                    );
                    longest = longest.max(t);
                    seen(&mut r, t);
                    if let Some(w) = r.wait() {
                        assert!(w <= cap, "{w:?} > cap {cap:?}");
                        assert!(w * FRACTION <= longest, "{w:?} > 1% of {longest:?}");
                        assert!(w >= MIN_WAIT);
                        waits += 1;
                    }
                }
            }
        }
        assert!(waits > 10_000, "the sequences hardly ever waited ({waits})");
    }
}
