//! `h2lab bench --shard i/N` and `--start-at`: one process's exact slice of a whole run, and
//! a common start for all of them.
//!
//! The slice of shard `i` of `N` (see [`slice()`]):
//! - connections (`-c`, or the top level of closed-model stages) and `-n` are split so that
//!   the shards add up to the whole exactly, the remainders going to the first shards; `-r`
//!   and `--queue-limit` likewise;
//! - the shard's connections are the lanes `i, i + N, i + 2N, …` of the whole run, and the open
//!   model's arrivals and the closed-model stage levels are dealt to the lanes of the *whole*
//!   schedule ([`ShardLanes`]): every arrival of the whole schedule is made by exactly one
//!   shard, and each shard's rate follows the whole shape (a ramp stays a ramp);
//! - `-i` URIs are dealt round-robin (line `k` to shard `k mod N`), so no two shards request
//!   the same entry. With a timing script every connection replays the whole script (as in one
//!   process), so the shards split the connections and each keeps every line: the work of the
//!   whole run, (connection, line) pairs, is partitioned without overlap and `-c` adds up;
//! - `-t` is per shard (at most the shard's connections).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use h2lab_engine::{BenchConfig, ShardLanes, StopFlag};

/// A parsed `--shard` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// The shard, `None` for `auto` (from `JOB_COMPLETION_INDEX`).
    pub index: Option<u32>,
    /// Number of shards.
    pub count: u32,
}

/// The environment variable a Kubernetes Indexed Job sets to the pod's index.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// Parses `--shard`: `i/N` (0-based `i`) or `auto/N`.
pub fn parse_shard(s: &str) -> Result<ShardSpec, String> {
    let bad = || format!("invalid shard {s:?}: expected i/N (0 <= i < N) or auto/N");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if count == 0 {
        return Err(bad());
    }
    let index = match i.trim() {
        "auto" => None,
        i => {
            let i: u32 = i.parse().map_err(|_| bad())?;
            if i >= count {
                return Err(bad());
            }
            Some(i)
        }
    };
    Ok(ShardSpec { index, count })
}

impl ShardSpec {
    /// The shard index, reading `JOB_COMPLETION_INDEX` for `auto` (`env` is the variable's
    /// value).
    pub fn resolve(&self, env: Option<&str>) -> Result<u32, String> {
        if let Some(i) = self.index {
            return Ok(i);
        }
        let v = env.ok_or_else(|| {
            format!(
                "--shard auto/{}: {INDEX_ENV} is not set (a Kubernetes Indexed Job sets it)",
                self.count
            )
        })?;
        match v.trim().parse::<u32>() {
            Ok(i) if i < self.count => Ok(i),
            _ => Err(format!(
                "--shard auto/{}: {INDEX_ENV}={v:?} is not an index below {}",
                self.count, self.count
            )),
        }
    }
}

/// `x` split `count` ways: part `index` (remainder to the first parts).
fn split(x: u64, index: u32, count: u32) -> u64 {
    let n = u64::from(count.max(1));
    x / n + u64::from(u64::from(index) < x % n)
}

/// Every `count`-th element from `index`.
fn deal<T: Clone>(v: &[T], index: u32, count: u32) -> Vec<T> {
    v.iter()
        .skip(index as usize)
        .step_by(count.max(1) as usize)
        .cloned()
        .collect()
}

/// The configuration of shard `index` of `count` of the whole run `whole` (validated).
/// `input_file`: the URIs came from `-i` (they are then dealt to shards).
pub fn slice(
    whole: &BenchConfig,
    input_file: bool,
    index: u32,
    count: u32,
) -> Result<BenchConfig, String> {
    let mut c = whole.clone();
    let lanes = whole.load.clients(whole);
    c.load.interval_histograms = true;
    // With a timing script every connection replays the whole script (h2load's model, `-n`
    // counting lines per connection): the shards split the connections, not the lines.
    let scripted = whole.load.timing_script.is_some();
    let clients = ShardLanes::clients_of(lanes, index, count);
    if lanes < count {
        return Err(format!(
            "--shard {index}/{count}: the run has {lanes} connection(s), fewer than {count} shards \
             (every shard needs at least one; raise -c or use fewer shards)"
        ));
    }
    c.clients = clients;
    if !whole.load.is_timed(whole) && !scripted {
        c.requests = split(whole.requests, index, count);
    }
    let mut threads = whole.threads.min(clients);
    if let Some((rate, period)) = whole.load.connection_rate {
        let r = u32::try_from(split(u64::from(rate), index, count)).unwrap_or(u32::MAX);
        if rate < count {
            return Err(format!(
                "--shard {index}/{count}: -r {rate} leaves shard {index} no connection rate (use \
                 -r {count} or more)"
            ));
        }
        threads = threads.min(r);
        c.load.connection_rate = Some((r.min(clients), period));
    }
    c.threads = threads.max(1);
    if let Some(q) = whole.load.queue_limit {
        // The shard's share of the bound, by its share of the lanes (adding up exactly).
        let below = |i: u32| -> u128 {
            let cum: u64 = (0..i)
                .map(|j| u64::from(ShardLanes::clients_of(lanes, j, count)))
                .sum();
            u128::from(q) * u128::from(cum) / u128::from(lanes.max(1))
        };
        let share = u64::try_from(below(index + 1) - below(index)).unwrap_or(u64::MAX);
        c.load.queue_limit = Some(share.max(1));
    }
    if input_file && !scripted {
        if whole.uris.len() < count as usize {
            return Err(format!(
                "--shard {index}/{count}: -i has {} URI(s), fewer than {count} shards (each shard \
                 takes every {count}th line)",
                whole.uris.len()
            ));
        }
        c.uris = deal(&whole.uris, index, count);
    }
    c.load.shard = Some(ShardLanes {
        index,
        count,
        whole_clients: lanes,
    });
    c.validate().map_err(|e| e.to_string())?;
    Ok(c)
}

/// Parses `--start-at`: RFC 3339 (`2026-11-24T21:00:00Z`, fractions and `±HH:MM` offsets
/// allowed) or seconds since the Unix epoch (`1764018000`, `1764018000.5`).
pub fn parse_start_at(s: &str) -> Result<SystemTime, String> {
    let bad = || {
        format!(
            "invalid --start-at {s:?}: expected RFC 3339 (2026-11-24T21:00:00Z) or Unix seconds"
        )
    };
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = t.parse().map_err(|_| bad())?;
        let d = Duration::try_from_secs_f64(secs).map_err(|_| bad())?;
        return UNIX_EPOCH.checked_add(d).ok_or_else(bad);
    }
    let secs = rfc3339(t).ok_or_else(bad)?;
    let (whole, nanos) = secs;
    if whole < 0 {
        return Err(bad());
    }
    UNIX_EPOCH
        .checked_add(Duration::new(whole.unsigned_abs(), nanos))
        .ok_or_else(bad)
}

/// Days from 1970-01-01 to a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `(seconds since the epoch, nanoseconds)` of an RFC 3339 date-time.
fn rfc3339(s: &str) -> Option<(i64, u32)> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mdays = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo) || d < 1 || d > mdays[(mo - 1) as usize] {
        return None;
    }
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut nanos = 0u32;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let frac = s.get(start..i)?;
        if frac.is_empty() {
            return None;
        }
        let digits: String = frac.chars().chain("000000000".chars()).take(9).collect();
        nanos = digits.parse().ok()?;
    }
    let offset = match s.get(i..)? {
        "Z" | "z" => 0,
        o if o.len() == 6 && matches!(o.as_bytes()[0], b'+' | b'-') && o.as_bytes()[3] == b':' => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let v = oh * 3600 + om * 60;
            if o.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec.min(59) - offset;
    Some((secs, nanos))
}

/// Waits until `at` (polling the stop flag); returns how late the wait ended after `at`, or
/// `None` when the run was interrupted meanwhile.
pub fn wait_until(at: SystemTime, stop: &StopFlag) -> Option<Duration> {
    loop {
        if stop.is_stopped() {
            return None;
        }
        let now = SystemTime::now();
        match at.duration_since(now) {
            Ok(left) if !left.is_zero() => {
                std::thread::sleep(left.min(Duration::from_millis(100)));
            }
            _ => return Some(now.duration_since(at).unwrap_or(Duration::ZERO)),
        }
    }
}

/// Seconds since the Unix epoch.
pub fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_values() {
        assert_eq!(
            parse_shard("1/4"),
            Ok(ShardSpec {
                index: Some(1),
                count: 4
            })
        );
        assert_eq!(parse_shard("auto/3").unwrap().index, None);
        for bad in ["", "4/4", "1", "a/2", "0/0", "-1/2", "1/x"] {
            assert!(parse_shard(bad).is_err(), "{bad:?}");
        }
        let auto = parse_shard("auto/3").unwrap();
        assert_eq!(auto.resolve(Some("2")), Ok(2));
        assert!(auto.resolve(Some("3")).is_err());
        assert!(auto.resolve(None).unwrap_err().contains(INDEX_ENV));
        assert_eq!(parse_shard("0/3").unwrap().resolve(Some("2")), Ok(0));
    }

    #[test]
    fn start_at_values() {
        let t = |s: &str| unix_seconds(parse_start_at(s).unwrap());
        assert_eq!(t("1764018000"), 1_764_018_000.0);
        assert_eq!(t("1764018000.5"), 1_764_018_000.5);
        assert_eq!(t("1970-01-01T00:00:00Z"), 0.0);
        assert_eq!(t("2000-03-01T00:00:00Z"), 951_868_800.0);
        assert_eq!(t("2026-11-24T21:00:00Z"), 1_795_554_000.0);
        assert_eq!(t("2026-11-24T22:00:00+01:00"), 1_795_554_000.0);
        assert_eq!(t("2026-11-24t20:30:00.25-00:30"), 1_795_554_000.25);
        for bad in [
            "",
            "soon",
            "2026-11-24",
            "2026-11-24T21:00:00",
            "2026-02-30T00:00:00Z",
            "2026-11-24T25:00:00Z",
            "2026-11-24T21:00:00.Z",
            "2026-11-24T21:00:00+0100",
            "1.2.3",
        ] {
            assert!(parse_start_at(bad).is_err(), "{bad:?}");
        }
    }

    fn whole(argv: &[&str]) -> BenchConfig {
        let mut cfg = BenchConfig::from_uris(&["http://127.0.0.1/a"], None).unwrap();
        cfg.requests = 1000;
        cfg.clients = 10;
        for pair in argv.chunks(2) {
            match pair {
                ["-n", v] => cfg.requests = v.parse().unwrap(),
                ["-c", v] => cfg.clients = v.parse().unwrap(),
                ["-t", v] => cfg.threads = v.parse().unwrap(),
                _ => panic!("{pair:?}"),
            }
        }
        cfg
    }

    #[test]
    fn counts_add_up_with_the_remainder_first() {
        let w = whole(&["-n", "1003", "-c", "10", "-t", "4"]);
        let parts: Vec<BenchConfig> = (0..3).map(|i| slice(&w, false, i, 3).unwrap()).collect();
        let n: Vec<u64> = parts.iter().map(|c| c.requests).collect();
        let c: Vec<u32> = parts.iter().map(|c| c.clients).collect();
        assert_eq!(n, [335, 334, 334]);
        assert_eq!(c, [4, 3, 3]);
        assert_eq!(
            parts[1].threads, 3,
            "-t is capped by the shard's connections"
        );
        assert!(slice(&w, false, 0, 11)
            .unwrap_err()
            .contains("fewer than 11 shards"));
        let mut r = w.clone();
        r.load.connection_rate = Some((5, Duration::from_secs(1)));
        r.threads = 1;
        let rates: Vec<u32> = (0..3)
            .map(|i| {
                slice(&r, false, i, 3)
                    .unwrap()
                    .load
                    .connection_rate
                    .unwrap()
                    .0
            })
            .collect();
        assert_eq!(rates, [2, 2, 1]);
        let mut q = w.clone();
        q.load.arrival_rate = Some(100.0);
        q.load.queue_limit = Some(7);
        let qs: u64 = (0..3)
            .map(|i| slice(&q, false, i, 3).unwrap().load.queue_limit.unwrap())
            .sum();
        assert_eq!(qs, 7);
    }

    #[test]
    fn uris_and_script_lines_are_dealt_without_overlap() {
        let mut w = BenchConfig::from_uris(
            &[
                "http://h/0",
                "http://h/1",
                "http://h/2",
                "http://h/3",
                "http://h/4",
            ],
            None,
        )
        .unwrap();
        w.clients = 2;
        w.requests = 10;
        let paths = |c: &BenchConfig| c.uris.iter().map(|t| t.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&slice(&w, true, 0, 2).unwrap()), ["/0", "/2", "/4"]);
        assert_eq!(paths(&slice(&w, true, 1, 2).unwrap()), ["/1", "/3"]);
        // URIs of the command line are not dealt.
        assert_eq!(paths(&slice(&w, false, 1, 2).unwrap()).len(), 5);
        w.load.timing_script = Some(
            (0..5)
                .map(|k| Duration::from_millis(k * 10))
                .collect::<Vec<_>>()
                .into(),
        );
        w.requests = 4;
        w.clients = 5;
        let s: Vec<_> = (0..2).map(|i| slice(&w, true, i, 2).unwrap()).collect();
        assert_eq!(s[0].clients + s[1].clients, 5, "-c is split with a script");
        for sh in &s {
            assert_eq!(
                paths(sh).len(),
                5,
                "every connection replays the whole script"
            );
            assert_eq!(sh.requests, 4, "-n counts lines per connection");
            assert_eq!(sh.load.timing_script.as_deref().map(<[_]>::len), Some(5));
        }
        assert!(
            slice(&w, false, 5, 6).is_err(),
            "5 connections for 6 shards"
        );
    }
}
