//! h2load's number formats (nghttp2 `util::dtos`, `util::format_duration`, `util::utos_funit`),
//! reimplemented so that h2lab's text output matches h2load's byte for byte.

/// Two fractional digits, rounded half away from zero on `100 * n` (h2load's `util::dtos`).
///
/// Negative and non-finite inputs are clamped to `0.00` (h2load never formats them).
pub fn dtos(n: f64) -> String {
    let scaled = (100.0 * n).round();
    let m = if scaled.is_finite() && scaled > 0.0 {
        // Saturating float-to-int conversion.
        scaled as u64
    } else {
        0
    };
    format!("{}.{:02}", m / 100, m % 100)
}

/// A whole-microsecond duration the way h2load prints `finished in`: `123us`, `4.56ms`, `7.08s`.
pub fn format_duration_us(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{}s", dtos(us as f64 / 1_000_000.0))
    } else if us >= 1_000 {
        format!("{}ms", dtos(us as f64 / 1_000.0))
    } else {
        format!("{us}us")
    }
}

/// A duration in (fractional) seconds the way h2load prints its latency table: microseconds are
/// truncated to an integer (`752us`), milliseconds and seconds get two decimals (`4.31ms`).
pub fn format_duration_secs(t: f64) -> String {
    if t >= 1.0 {
        format!("{}s", dtos(t))
    } else if t >= 0.001 {
        format!("{}ms", dtos(t * 1000.0))
    } else {
        let us = t * 1_000_000.0;
        let us = if us.is_finite() && us > 0.0 {
            us as u64
        } else {
            0
        };
        format!("{us}us")
    }
}

/// A duration in nanoseconds, formatted like [`format_duration_secs`].
pub fn format_duration_ns(ns: f64) -> String {
    format_duration_secs(ns / 1e9)
}

/// A byte count with a binary unit and two decimals (`1.09K`, `555.33M`, `3.93G`), or the plain
/// integer below 1024 (h2load's `util::utos_funit`).
pub fn utos_funit(n: u64) -> String {
    let (unit, bits) = if n >= 1 << 30 {
        ('G', 30)
    } else if n >= 1 << 20 {
        ('M', 20)
    } else if n >= 1 << 10 {
        ('K', 10)
    } else {
        return n.to_string();
    };
    format!("{}{}", dtos(n as f64 / (1u64 << bits) as f64), unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtos_rounds_to_two_digits() {
        assert_eq!(dtos(0.0), "0.00");
        assert_eq!(dtos(1.0), "1.00");
        assert_eq!(dtos(1.005), "1.00"); // 100.49999.. in binary
        assert_eq!(dtos(90.0), "90.00");
        assert_eq!(dtos(4.305), "4.31");
        assert_eq!(dtos(12.3456), "12.35");
        assert_eq!(dtos(-3.0), "0.00");
        assert_eq!(dtos(f64::NAN), "0.00");
    }

    #[test]
    fn utos_funit_matches_nghttp2_cases() {
        // The cases nghttp2's own unit test checks for util::utos_funit.
        assert_eq!(utos_funit(0), "0");
        assert_eq!(utos_funit(1023), "1023");
        assert_eq!(utos_funit(1024), "1.00K");
        assert_eq!(utos_funit(1025), "1.00K");
        assert_eq!(utos_funit(1119), "1.09K");
        assert_eq!(utos_funit(1300), "1.27K");
        assert_eq!(utos_funit(1 << 20), "1.00M");
        assert_eq!(utos_funit(1234567), "1.18M");
        assert_eq!(utos_funit(1 << 30), "1.00G");
        assert_eq!(utos_funit(1 << 40), "1024.00G");
        // From the real h2load output quoted in the spec.
        assert_eq!(utos_funit(4125025824), "3.84G");
        assert_eq!(utos_funit(11023424), "10.51M");
        assert_eq!(utos_funit(682970), "666.96K");
    }

    #[test]
    fn format_duration_units() {
        assert_eq!(format_duration_us(0), "0us");
        assert_eq!(format_duration_us(375), "375us");
        assert_eq!(format_duration_us(999), "999us");
        assert_eq!(format_duration_us(1000), "1.00ms");
        assert_eq!(format_duration_us(8940), "8.94ms");
        assert_eq!(format_duration_us(7_080_000), "7.08s");
        assert_eq!(format_duration_secs(0.0), "0us");
        assert_eq!(format_duration_secs(0.000_039_9), "39us");
        assert_eq!(format_duration_secs(0.004_31), "4.31ms");
        assert_eq!(format_duration_secs(1.5), "1.50s");
        assert_eq!(format_duration_ns(752_000.0), "752us");
        assert_eq!(format_duration_ns(1_180_000.0), "1.18ms");
    }
}
