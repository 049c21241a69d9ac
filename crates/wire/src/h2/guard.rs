//! Flood and abuse accounting (RFC 9113 §10.5 "Denial-of-Service
//! Considerations").
//!
//! There is no clock in a sans-IO codec, so rates are measured against
//! *progress*: frames that carry requests, responses or body bytes. A peer
//! may send a few control frames between two such frames; a peer that sends
//! hundreds in a row is only consuming our resources. RFC 9113 §10.5: "An
//! endpoint that doesn't monitor use of these features exposes itself to a
//! risk of denial of service. Implementations SHOULD track the use of these
//! features and set limits on their use. An endpoint MAY treat activity that
//! is suspicious as a connection error (Section 5.4.1) of type
//! ENHANCE_YOUR_CALM."

use crate::frame::{ErrorCode, H2Error};

use super::settings::Limits;

/// Counters of one connection.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Guard {
    pings: u32,
    settings: u32,
    idle: u32,
    stream_errors: u32,
    /// Leaky bucket for rapid reset: +window per peer reset of an unfinished
    /// stream, -budget per stream the peer opens; over budget*window trips.
    reset_score: u64,
}

const fn calm(rule: &'static str) -> H2Error {
    H2Error::connection(ErrorCode::ENHANCE_YOUR_CALM, rule)
}

fn bump(counter: &mut u32, max: u32, rule: &'static str) -> Result<(), H2Error> {
    *counter = counter.saturating_add(1);
    if *counter > max {
        return Err(calm(rule));
    }
    Ok(())
}

impl Guard {
    /// A frame that did useful work arrived: forget the control-frame
    /// counts.
    #[inline]
    pub(crate) fn progress(&mut self) {
        self.pings = 0;
        self.settings = 0;
        self.idle = 0;
        self.stream_errors = 0;
    }

    /// A PING (not ACK) arrived; we owe a PING ACK (CVE-2019-9512).
    pub(crate) fn ping(&mut self, l: &Limits) -> Result<(), H2Error> {
        bump(
            &mut self.pings,
            l.max_pings_without_progress,
            "RFC 9113 §10.5: PING flood",
        )
    }

    /// A SETTINGS (not ACK) arrived; we owe a SETTINGS ACK (CVE-2019-9515).
    pub(crate) fn settings(&mut self, l: &Limits) -> Result<(), H2Error> {
        bump(
            &mut self.settings,
            l.max_settings_without_progress,
            "RFC 9113 §10.5: SETTINGS flood",
        )
    }

    /// A frame without useful effect arrived (empty DATA, PRIORITY, unknown
    /// type, frame ignored on a closed stream; CVE-2019-9516/9518).
    pub(crate) fn idle(&mut self, l: &Limits) -> Result<(), H2Error> {
        bump(
            &mut self.idle,
            l.max_idle_frames_without_progress,
            "RFC 9113 §10.5: flood of frames without effect",
        )
    }

    /// We sent an RST_STREAM because of the peer (stream error, refused
    /// stream; CVE-2019-9514).
    pub(crate) fn stream_error(&mut self, l: &Limits) -> Result<(), H2Error> {
        bump(
            &mut self.stream_errors,
            l.max_stream_errors_without_progress,
            "RFC 9113 §10.5: too many stream errors",
        )
    }

    /// The peer opened a stream.
    pub(crate) fn stream_opened(&mut self, l: &Limits) {
        self.reset_score = self
            .reset_score
            .saturating_sub(u64::from(l.rapid_reset_budget));
    }

    /// The peer reset a stream it opened before we finished it
    /// (CVE-2023-44487, "HTTP/2 Rapid Reset").
    pub(crate) fn peer_reset(&mut self, l: &Limits) -> Result<(), H2Error> {
        let window = u64::from(l.rapid_reset_window.max(1));
        self.reset_score = self.reset_score.saturating_add(window);
        if self.reset_score > u64::from(l.rapid_reset_budget).saturating_mul(window) {
            return Err(calm(
                "CVE-2023-44487: too many streams reset by the peer (rapid reset)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floods_trip_and_progress_resets() {
        let l = Limits {
            max_pings_without_progress: 3,
            ..Limits::new()
        };
        let mut g = Guard::default();
        for _ in 0..3 {
            g.ping(&l).unwrap();
        }
        g.progress();
        for _ in 0..3 {
            g.ping(&l).unwrap();
        }
        let e = g.ping(&l).unwrap_err();
        assert_eq!(e.code, ErrorCode::ENHANCE_YOUR_CALM);
        assert!(e.is_connection_error());
    }

    #[test]
    fn rapid_reset_bucket() {
        let l = Limits {
            rapid_reset_budget: 10,
            rapid_reset_window: 100,
            ..Limits::new()
        };
        // Attack: open + reset, repeatedly. Trips after about
        // budget * window / (window - budget) streams.
        let mut g = Guard::default();
        let mut n = 0;
        loop {
            g.stream_opened(&l);
            n += 1;
            if g.peer_reset(&l).is_err() {
                break;
            }
            assert!(n < 100);
        }
        assert!(n > 10, "{n}");
        // A client cancelling 1 stream in 20 never trips.
        let mut g = Guard::default();
        for i in 0..100_000 {
            g.stream_opened(&l);
            if i % 20 == 0 {
                g.peer_reset(&l).unwrap();
            }
        }
    }
}
