//! The `date` header value (RFC 9110 §5.6.7 IMF-fixdate), formatted once per second.

use std::time::{SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const DATE_LEN: usize = 29;

/// Per-worker cache of the current date string.
#[derive(Debug)]
pub struct DateCache {
    secs: u64,
    buf: [u8; DATE_LEN],
}

impl Default for DateCache {
    fn default() -> Self {
        let mut d = DateCache {
            secs: u64::MAX,
            buf: [b' '; DATE_LEN],
        };
        d.update();
        d
    }
}

impl DateCache {
    /// Re-formats if the wall-clock second changed. Call once per loop turn.
    pub fn update(&mut self) {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        if secs != self.secs {
            self.secs = secs;
            format_imf_fixdate(secs, &mut self.buf);
        }
    }

    /// The current value, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    pub fn get(&self) -> &[u8] {
        &self.buf
    }
}

/// Formats seconds since the Unix epoch as an IMF-fixdate.
pub fn format_imf_fixdate(secs: u64, out: &mut [u8; DATE_LEN]) {
    const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
    const MONTHS: [&[u8; 3]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (hh, mm, ss) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    let (year, month, day) = civil_from_days(days as i64);
    let wd = DAYS[(days % 7) as usize];
    let mon = MONTHS[(month as usize).saturating_sub(1).min(11)];
    let two = |v: u64| [b'0' + (v / 10 % 10) as u8, b'0' + (v % 10) as u8];
    let y = year.clamp(0, 9999) as u64;
    let mut i = 0;
    let mut put = |s: &[u8]| {
        out[i..i + s.len()].copy_from_slice(s);
        i += s.len();
    };
    put(wd);
    put(b", ");
    put(&two(day as u64));
    put(b" ");
    put(mon);
    put(b" ");
    put(&[
        b'0' + (y / 1000 % 10) as u8,
        b'0' + (y / 100 % 10) as u8,
        b'0' + (y / 10 % 10) as u8,
        b'0' + (y % 10) as u8,
    ]);
    put(b" ");
    put(&two(hh));
    put(b":");
    put(&two(mm));
    put(b":");
    put(&two(ss));
    put(b" GMT");
}

/// Howard Hinnant's days-to-civil algorithm: (year, month 1..=12, day 1..=31).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_example() {
        let mut b = [0u8; DATE_LEN];
        format_imf_fixdate(784_111_777, &mut b);
        assert_eq!(&b, b"Sun, 06 Nov 1994 08:49:37 GMT");
    }

    #[test]
    fn leap_day_and_epoch() {
        let mut b = [0u8; DATE_LEN];
        format_imf_fixdate(0, &mut b);
        assert_eq!(&b, b"Thu, 01 Jan 1970 00:00:00 GMT");
        format_imf_fixdate(1_709_210_096, &mut b);
        assert_eq!(&b, b"Thu, 29 Feb 2024 12:34:56 GMT");
    }
}
