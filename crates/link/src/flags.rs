//! [`LinkFlags`]: the command-line flags of `h2lab link`, as strings, turned into a
//! [`LinkConfig`]. The CLI declares the flags (with clap or otherwise) and calls
//! [`LinkFlags::to_config`]; all the parsing and validation lives here.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};

use super::config::{LinkConfig, LinkProfile};
use super::parse::{parse_bytes, parse_duration, parse_loss, parse_rate, ParseError};

/// The flags of `h2lab link`:
///
/// ```text
/// h2lab link --listen 127.0.0.1:8443 --upstream 127.0.0.1:443 \
///     [--profile loopback|lan|wan|mobile|lossy|lossy3] [--rtt 20ms] [--down 90mbit] [--up 12mbit] \
///     [--loss 0.5%] [--jitter 2ms] [--queue 256k] [--seed N] [--no-handshake] \
///     [--no-udp] [--udp-idle 30s] [--tcp-model cubic|reno|none]
/// ```
///
/// `--profile` sets RTT and rates first; the other flags override it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkFlags {
    /// `--listen HOST:PORT` (default `127.0.0.1:0`).
    pub listen: Option<String>,
    /// `--upstream HOST:PORT` (required).
    pub upstream: String,
    /// `--profile NAME`.
    pub profile: Option<String>,
    /// `--rtt DURATION`, e.g. `20ms`.
    pub rtt: Option<String>,
    /// `--down RATE`, e.g. `90mbit`, `1gbit`, `unlimited`.
    pub down: Option<String>,
    /// `--up RATE`.
    pub up: Option<String>,
    /// `--loss P`, e.g. `0.5%`.
    pub loss: Option<String>,
    /// `--jitter DURATION`.
    pub jitter: Option<String>,
    /// `--queue SIZE`, e.g. `256k`, `1m` (default: one BDP, at least 5 ms of traffic).
    pub queue: Option<String>,
    /// `--seed N` for the jitter and loss draws.
    pub seed: Option<u64>,
    /// `--no-handshake`: do not charge the TCP handshake's round trip.
    pub no_handshake: bool,
    /// `--no-udp`: relay TCP only.
    pub no_udp: bool,
    /// `--udp-idle DURATION`: how long a UDP flow lives without traffic (default 30s).
    pub udp_idle: Option<String>,
    /// `--tcp-model cubic|reno|none`: the congestion window emulated per relayed TCP
    /// connection (default `cubic`; see [`tcp_model`](super::tcp_model)).
    pub tcp_model: Option<String>,
}

/// A flag of `h2lab link` has an unusable value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagError {
    flag: &'static str,
    message: String,
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--{}: {}", self.flag, self.message)
    }
}

impl std::error::Error for FlagError {}

fn flag_err(flag: &'static str) -> impl Fn(ParseError) -> FlagError {
    move |e| FlagError {
        flag,
        message: e.to_string(),
    }
}

/// Resolves `HOST:PORT` to its first address.
pub fn resolve(addr: &str) -> Result<SocketAddr, String> {
    let mut addrs = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {addr:?}: {e}"))?;
    addrs
        .next()
        .ok_or_else(|| format!("{addr:?} resolves to no address"))
}

impl LinkFlags {
    /// Builds and validates the configuration the flags describe.
    pub fn to_config(&self) -> Result<LinkConfig, FlagError> {
        let listen =
            resolve(self.listen.as_deref().unwrap_or("127.0.0.1:0")).map_err(|m| FlagError {
                flag: "listen",
                message: m,
            })?;
        let upstream = resolve(&self.upstream).map_err(|m| FlagError {
            flag: "upstream",
            message: m,
        })?;
        let mut c = LinkConfig::new(listen, upstream);
        if let Some(p) = &self.profile {
            let profile: LinkProfile = p.parse().map_err(|e: super::ConfigError| FlagError {
                flag: "profile",
                message: e.to_string(),
            })?;
            profile.apply(&mut c);
        }
        if let Some(v) = &self.rtt {
            c.rtt = parse_duration(v).map_err(flag_err("rtt"))?;
        }
        if let Some(v) = &self.down {
            c.down_bps = parse_rate(v).map_err(flag_err("down"))?;
        }
        if let Some(v) = &self.up {
            c.up_bps = parse_rate(v).map_err(flag_err("up"))?;
        }
        if let Some(v) = &self.loss {
            c.loss = parse_loss(v).map_err(flag_err("loss"))?;
        }
        if let Some(v) = &self.jitter {
            c.jitter = parse_duration(v).map_err(flag_err("jitter"))?;
        }
        if let Some(v) = &self.queue {
            c.queue_bytes = Some(parse_bytes(v).map_err(flag_err("queue"))?);
        }
        if let Some(seed) = self.seed {
            c.seed = seed;
        }
        c.emulate_handshake = !self.no_handshake;
        c.udp = !self.no_udp;
        if let Some(v) = &self.udp_idle {
            c.udp_idle = parse_duration(v).map_err(flag_err("udp-idle"))?;
        }
        if let Some(v) = &self.tcp_model {
            c.tcp_model = v.parse().map_err(|e: super::UnknownTcpModel| FlagError {
                flag: "tcp-model",
                message: e.to_string(),
            })?;
        }
        c.validate().map_err(|e| FlagError {
            flag: "link",
            message: e.to_string(),
        })?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn flags_to_config() {
        let f = LinkFlags {
            upstream: "127.0.0.1:8080".into(),
            profile: Some("wan".into()),
            rtt: Some("20ms".into()),
            up: Some("12mbit".into()),
            loss: Some("0.5%".into()),
            jitter: Some("2ms".into()),
            queue: Some("256k".into()),
            ..LinkFlags::default()
        };
        let c = f.to_config().unwrap();
        assert_eq!(c.rtt, Duration::from_millis(20));
        assert_eq!(c.down_bps, Some(50_000_000)); // from the profile
        assert_eq!(c.up_bps, Some(12_000_000));
        assert_eq!(c.loss, 0.005);
        assert_eq!(c.jitter, Duration::from_millis(2));
        assert_eq!(c.queue_bytes, Some(256 * 1024));
        assert_eq!(c.listen, "127.0.0.1:0".parse().unwrap());
        assert!(c.emulate_handshake);
        assert!(c.udp);
        assert_eq!(c.udp_idle, Duration::from_secs(30));
        let f = LinkFlags {
            upstream: "127.0.0.1:8080".into(),
            no_udp: true,
            udp_idle: Some("2s".into()),
            ..LinkFlags::default()
        };
        let c = f.to_config().unwrap();
        assert!(!c.udp);
        assert_eq!(c.udp_idle, Duration::from_secs(2));
        let f = LinkFlags {
            upstream: "127.0.0.1:8080".into(),
            udp_idle: Some("0s".into()),
            ..LinkFlags::default()
        };
        assert!(f.to_config().is_err());
        let f = LinkFlags {
            upstream: "127.0.0.1:8080".into(),
            tcp_model: Some("none".into()),
            ..LinkFlags::default()
        };
        assert_eq!(
            f.to_config().unwrap().tcp_model,
            super::super::TcpModelKind::None
        );
        let f = LinkFlags {
            upstream: "127.0.0.1:8080".into(),
            tcp_model: Some("vegas".into()),
            ..LinkFlags::default()
        };
        assert!(f
            .to_config()
            .unwrap_err()
            .to_string()
            .contains("--tcp-model"));
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let f = LinkFlags {
            upstream: "127.0.0.1:8080".into(),
            down: Some("90mbps".into()),
            ..LinkFlags::default()
        };
        let e = f.to_config().unwrap_err().to_string();
        assert!(e.starts_with("--down: "), "{e}");
        let f = LinkFlags {
            upstream: "127.0.0.1:8080".into(),
            profile: Some("moon".into()),
            ..LinkFlags::default()
        };
        assert!(f
            .to_config()
            .unwrap_err()
            .to_string()
            .starts_with("--profile: "));
        let f = LinkFlags {
            upstream: "no-port".into(),
            ..LinkFlags::default()
        };
        assert!(f
            .to_config()
            .unwrap_err()
            .to_string()
            .starts_with("--upstream: "));
    }
}
