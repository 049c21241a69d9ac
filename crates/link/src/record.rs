//! What a link profile was, for the lab's results: its shape and the model of TCP the relay
//! applied to the relayed TCP connections ([`tcp_model`](super::tcp_model)), so a reader of a
//! loss result knows the model behind it (`links` in `compare`'s and `page`'s results.json,
//! and the conditions text of their reports).

use serde::Serialize;

use super::config::{LinkConfig, LinkProfile};
use super::path::PathKind;
use super::shaper::MSS;
use super::tcp_model::{TcpModelKind, INITIAL_WINDOW};

/// The TCP congestion-window model of a link (see [`tcp_model`](super::tcp_model)).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TcpModelRecord {
    /// `cubic` (CUBIC's TCP-friendly region) or `reno` (NewReno).
    pub model: &'static str,
    /// The multiplicative decrease at a loss (the window becomes `beta` × the window).
    pub beta: f64,
    /// Growth per RTT in congestion avoidance, in segments.
    pub alpha: f64,
    /// The initial window in segments (RFC 6928).
    pub initial_window_segments: usize,
    /// The segment size the model counts in (bytes).
    pub mss_bytes: usize,
}

impl TcpModelRecord {
    /// The record of `kind`, or `None` for [`TcpModelKind::None`].
    pub fn of(kind: TcpModelKind) -> Option<TcpModelRecord> {
        (kind != TcpModelKind::None).then(|| TcpModelRecord {
            model: kind.name(),
            beta: kind.beta(),
            alpha: kind.alpha(),
            initial_window_segments: INITIAL_WINDOW / MSS,
            mss_bytes: MSS,
        })
    }

    /// `TCP model cubic (beta 0.7, IW 10 segments)`.
    pub fn describe(&self) -> String {
        format!(
            "TCP model {} (beta {}, IW {} segments)",
            self.model, self.beta, self.initial_window_segments
        )
    }
}

/// A link profile as the lab used it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkRecord {
    /// The profile's name (`loopback`, `lan`, `wan`, `mobile`, `lossy`, `lossy3`).
    pub profile: &'static str,
    /// Whether connections crossed the link's relay (`loopback` connects directly).
    pub relayed: bool,
    /// The path the connections crossed: `direct`, `packet` or `relay`.
    pub path: PathKind,
    /// What TCP was on that path: `kernel TCP` or `modelled TCP` (the relay).
    pub tcp: &'static str,
    /// Round-trip time added (ms).
    pub rtt_ms: f64,
    /// Downstream (server to client) rate in bit/s; `None`: unlimited.
    pub down_bps: Option<u64>,
    /// Upstream rate in bit/s; `None`: unlimited.
    pub up_bps: Option<u64>,
    /// Loss probability per TCP segment and per UDP datagram (0.01 is 1%).
    pub loss: f64,
    /// Jitter added (ms).
    pub jitter_ms: f64,
    /// The model of TCP's congestion window applied to relayed TCP connections; `None` when
    /// none applies (no relay, no added RTT, or `--tcp-model none`). QUIC over the UDP relay
    /// runs its own congestion control.
    pub tcp_model: Option<TcpModelRecord>,
}

impl LinkRecord {
    /// The record of `profile` as the lab configures it ([`LinkConfig::profile`]).
    pub fn of(profile: LinkProfile) -> LinkRecord {
        let any = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        LinkRecord::of_config(profile, &LinkConfig::profile(profile, any, any))
    }

    /// The record of `profile` configured as `c`.
    pub fn of_config(profile: LinkProfile, c: &LinkConfig) -> LinkRecord {
        let relayed = profile != LinkProfile::Loopback;
        let path = if relayed {
            PathKind::Relay
        } else {
            PathKind::Direct
        };
        LinkRecord {
            profile: profile.name(),
            relayed,
            path,
            tcp: path.tcp(),
            rtt_ms: c.rtt.as_secs_f64() * 1e3,
            down_bps: c.down_bps,
            up_bps: c.up_bps,
            loss: c.loss,
            jitter_ms: c.jitter.as_secs_f64() * 1e3,
            tcp_model: c
                .effective_tcp_model()
                .filter(|_| relayed)
                .and_then(TcpModelRecord::of),
        }
    }

    /// The model text for a report's conditions: `modelled TCP: TCP model cubic (beta 0.7,
    /// IW 10 segments)`, or `modelled TCP: no TCP model` on a relayed link without one; `None`
    /// unrelayed.
    pub fn model_text(&self) -> Option<String> {
        if !self.relayed {
            return None;
        }
        let model = self
            .tcp_model
            .as_ref()
            .map_or_else(|| "no TCP model".to_owned(), TcpModelRecord::describe);
        Some(format!("{}: {model}", self.tcp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_carry_the_shape_and_the_tcp_model() {
        let wan = LinkRecord::of(LinkProfile::Lossy3);
        assert_eq!(wan.profile, "lossy3");
        assert!(wan.relayed);
        assert_eq!(wan.rtt_ms, 40.0);
        assert_eq!(wan.down_bps, Some(50_000_000));
        assert!((wan.loss - 0.03).abs() < 1e-12);
        let m = wan.tcp_model.as_ref().unwrap();
        assert_eq!(
            (m.model, m.beta, m.initial_window_segments),
            ("cubic", 0.7, 10)
        );
        assert_eq!(
            wan.model_text().unwrap(),
            "modelled TCP: TCP model cubic (beta 0.7, IW 10 segments)"
        );
        assert_eq!((wan.path, wan.tcp), (PathKind::Relay, "modelled TCP"));
        let lo = LinkRecord::of(LinkProfile::Loopback);
        assert!(!lo.relayed && lo.tcp_model.is_none() && lo.model_text().is_none());
        let any = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let mut c = LinkConfig::profile(LinkProfile::Wan, any, any);
        c.tcp_model = TcpModelKind::Reno;
        let reno = LinkRecord::of_config(LinkProfile::Wan, &c);
        assert_eq!(reno.tcp_model.as_ref().unwrap().beta, 0.5);
        c.tcp_model = TcpModelKind::None;
        let none = LinkRecord::of_config(LinkProfile::Wan, &c);
        assert_eq!(none.model_text().unwrap(), "modelled TCP: no TCP model");
        let json = serde_json::to_value(&wan).unwrap();
        assert_eq!(json["tcp_model"]["model"], "cubic");
        assert_eq!(json["tcp_model"]["beta"], 0.7);
        assert_eq!(json["path"], "relay");
        assert_eq!(json["tcp"], "modelled TCP");
    }
}
