//! [`LinkConfig`]: what the emulated path looks like, and the named [`LinkProfile`]s.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use super::parse::{format_duration, format_rate};
use super::shaper::{self, DirectionParams, Nanos};
use super::tcp_model::TcpModelKind;

/// A direction of the link. "Up" is client to upstream (requests, uploads), "down" is upstream to
/// client (responses, downloads), as seen from the client's access line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to upstream.
    Up,
    /// Upstream to client.
    Down,
}

impl Direction {
    /// Both directions, `Up` first.
    pub const BOTH: [Direction; 2] = [Direction::Up, Direction::Down];

    /// 0 for `Up`, 1 for `Down`.
    pub fn index(self) -> usize {
        match self {
            Direction::Up => 0,
            Direction::Down => 1,
        }
    }
}

/// The emulated path between the clients that connect to `listen` and the server at `upstream`.
///
/// Build one with [`LinkConfig::new`] (a plain relay) or [`LinkConfig::profile`], then adjust
/// the public fields.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Where the link accepts client connections (port 0 picks a free port).
    pub listen: SocketAddr,
    /// The server every accepted connection is relayed to.
    pub upstream: SocketAddr,
    /// Added round-trip time; each direction is delayed by half of it.
    pub rtt: Duration,
    /// Rate of the upstream-to-client direction in bits per second; `None` is unlimited.
    pub down_bps: Option<u64>,
    /// Rate of the client-to-upstream direction in bits per second; `None` is unlimited.
    pub up_bps: Option<u64>,
    /// Loss probability in `[0, 1)`: per TCP segment, emulated as retransmission delay; per
    /// UDP datagram, a real drop (see [`shaper`](super::shaper)).
    pub loss: f64,
    /// Jitter amplitude: each chunk's one-way delay varies uniformly by up to this much either
    /// way. Never reorders bytes.
    pub jitter: Duration,
    /// Bottleneck queue per direction in bytes; `None` picks
    /// [`default_queue_bytes`](shaper::default_queue_bytes) (one BDP, at least 5 ms of traffic).
    pub queue_bytes: Option<usize>,
    /// Memory cap, per connection and direction, for bytes held by the relay on a link
    /// direction with no rate limit (where nothing else bounds them). It also caps such a
    /// direction's throughput at `max_in_flight / (rtt / 2)`. Shaped directions use the most
    /// their path can hold instead (see [`LinkConfig::buffer_limit`]).
    pub max_in_flight: usize,
    /// Charge the TCP handshake's round trip to each new connection (see
    /// [`Handshake`](shaper::Handshake)).
    pub emulate_handshake: bool,
    /// Seed for the jitter and loss draws: equal seeds give equal schedules.
    pub seed: u64,
    /// Relay UDP too (HTTP/3), on the TCP listener's port number when it is free (see
    /// [`udp`](super::udp)). On by default.
    pub udp: bool,
    /// A UDP flow (client address and port) with no datagram either way for this long loses
    /// its upstream socket.
    pub udp_idle: Duration,
    /// The congestion window emulated for each relayed TCP connection and direction (see
    /// [`tcp_model`](super::tcp_model)); [`TcpModelKind::None`] relays at the loopback TCP's
    /// pace (loss then only delays bytes). Applies only when the link adds an RTT.
    pub tcp_model: TcpModelKind,
}

/// The default [`LinkConfig::udp_idle`]: 30 seconds (QUIC's usual idle timeout).
pub const DEFAULT_UDP_IDLE: Duration = Duration::from_secs(30);

/// The default [`LinkConfig::max_in_flight`]: 16 MiB.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 16 << 20;

/// Bytes the relay reads ahead of the bottleneck queue per connection and direction (the
/// equivalent of the sender's socket buffer). Reading sockets in large steps keeps Linux from
/// stalling the sender on small receive-window updates; see the relay's documentation.
pub const PRE_QUEUE_BYTES: usize = 256 * 1024;

/// The configuration could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

fn nanos(d: Duration) -> Nanos {
    Nanos::try_from(d.as_nanos()).unwrap_or(Nanos::MAX)
}

impl LinkConfig {
    /// A link with no added delay, rate limit, loss or jitter (the `loopback` profile).
    pub fn new(listen: SocketAddr, upstream: SocketAddr) -> Self {
        LinkConfig {
            listen,
            upstream,
            rtt: Duration::ZERO,
            down_bps: None,
            up_bps: None,
            loss: 0.0,
            jitter: Duration::ZERO,
            queue_bytes: None,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            emulate_handshake: true,
            seed: 0x6832_6c61_625f_6c6b,
            udp: true,
            udp_idle: DEFAULT_UDP_IDLE,
            tcp_model: TcpModelKind::default(),
        }
    }

    /// A link shaped like `profile`.
    pub fn profile(profile: LinkProfile, listen: SocketAddr, upstream: SocketAddr) -> Self {
        let mut c = LinkConfig::new(listen, upstream);
        profile.apply(&mut c);
        c
    }

    /// Checks the values: loss in `[0, 1)`, rates above zero, jitter and the UDP idle time
    /// not larger than a day.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(0.0..1.0).contains(&self.loss) || self.loss.is_nan() {
            return Err(ConfigError(format!(
                "loss must be in [0, 1), got {}",
                self.loss
            )));
        }
        for (name, bps) in [("down", self.down_bps), ("up", self.up_bps)] {
            if bps == Some(0) {
                return Err(ConfigError(format!(
                    "{name} rate must be positive (use None for unlimited)"
                )));
            }
        }
        let day = Duration::from_secs(86_400);
        if self.rtt > day || self.jitter > day {
            return Err(ConfigError("rtt and jitter must be below one day".into()));
        }
        if self.queue_bytes == Some(0) {
            return Err(ConfigError("queue_bytes must be positive".into()));
        }
        if self.max_in_flight == 0 {
            return Err(ConfigError("max_in_flight must be positive".into()));
        }
        if self.udp_idle.is_zero() || self.udp_idle > day {
            return Err(ConfigError(
                "udp_idle must be positive and below one day".into(),
            ));
        }
        Ok(())
    }

    /// The rate of one direction.
    pub fn bps(&self, dir: Direction) -> Option<u64> {
        match dir {
            Direction::Up => self.up_bps,
            Direction::Down => self.down_bps,
        }
    }

    /// The shaping parameters of one direction.
    pub fn direction_params(&self, dir: Direction) -> DirectionParams {
        let rtt = nanos(self.rtt);
        let bps = self.bps(dir);
        let mut p = DirectionParams::new(rtt / 2, bps);
        p.rtt = rtt;
        p.jitter = nanos(self.jitter);
        p.loss = self.loss;
        if let Some(q) = self.queue_bytes {
            p.queue_bytes = q;
        }
        p
    }

    /// The relay's memory cap for one connection-direction: [`PRE_QUEUE_BYTES`] plus
    /// `max_in_flight` on an unlimited direction, or plus, on a shaped one, the most the path
    /// can hold (queue + bytes in flight, including jitter, a retransmission round trip when
    /// there is loss, and 20 ms of slack; at least 256 KiB).
    pub fn buffer_limit(&self, dir: Direction) -> usize {
        let p = self.direction_params(dir);
        let path = match p.bps {
            None => self.max_in_flight,
            Some(bps) => {
                let mut hold = p
                    .one_way
                    .saturating_add(p.jitter)
                    .saturating_add(20_000_000);
                if p.loss > 0.0 {
                    hold = hold.saturating_add(p.rtt);
                }
                let path = p
                    .queue_bytes
                    .saturating_add(shaper::bytes_in(bps, hold))
                    .saturating_add(4 * p.chunk_bytes);
                path.max(256 << 10)
            }
        };
        path.saturating_add(PRE_QUEUE_BYTES)
    }

    /// The window model the relay applies: `None` when the link adds no RTT (a window of any
    /// size opens at once) or the model is [`TcpModelKind::None`].
    pub fn effective_tcp_model(&self) -> Option<TcpModelKind> {
        match self.tcp_model {
            TcpModelKind::None => None,
            _ if self.rtt.is_zero() => None,
            kind => Some(kind),
        }
    }

    /// A one-line description such as `rtt 40ms, down 50mbit, up 50mbit`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "rtt {}, down {}, up {}",
            format_duration(self.rtt),
            format_rate(self.down_bps),
            format_rate(self.up_bps)
        );
        if self.loss > 0.0 {
            s.push_str(&format!(", loss {}%", self.loss * 100.0));
        }
        if !self.jitter.is_zero() {
            s.push_str(&format!(", jitter {}", format_duration(self.jitter)));
        }
        s
    }
}

/// Named link shapes for the lab commands and `h2lab link --profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkProfile {
    /// No added delay or rate limit: a plain relay.
    Loopback,
    /// A local network: 1 ms RTT, 1 Gbit/s each way.
    Lan,
    /// A good broadband path: 40 ms RTT, 50 Mbit/s each way.
    Wan,
    /// A mobile (4G-like) path: 80 ms RTT, 12 Mbit/s down, 3 Mbit/s up.
    Mobile,
    /// The WAN path with 1% segment loss (HTTP/2's one connection against HTTP/1.1's six
    /// under loss: head-of-line blocking).
    Lossy,
    /// The WAN path with 3% loss (the loss experiment's worst level).
    Lossy3,
}

impl LinkProfile {
    /// Every profile, in increasing order of distance.
    pub const ALL: [LinkProfile; 6] = [
        LinkProfile::Loopback,
        LinkProfile::Lan,
        LinkProfile::Wan,
        LinkProfile::Mobile,
        LinkProfile::Lossy,
        LinkProfile::Lossy3,
    ];

    /// The profile's name as accepted by [`FromStr`].
    pub fn name(self) -> &'static str {
        match self {
            LinkProfile::Loopback => "loopback",
            LinkProfile::Lan => "lan",
            LinkProfile::Wan => "wan",
            LinkProfile::Mobile => "mobile",
            LinkProfile::Lossy => "lossy",
            LinkProfile::Lossy3 => "lossy3",
        }
    }

    /// Segment loss of the profile (0 except `lossy`: 1%, `lossy3`: 3%).
    pub fn loss(self) -> f64 {
        match self {
            LinkProfile::Lossy => 0.01,
            LinkProfile::Lossy3 => 0.03,
            _ => 0.0,
        }
    }

    /// The WAN profile with `percent` loss: 0 → `wan`, 1 → `lossy`, 3 → `lossy3`.
    pub fn wan_with_loss(percent: f64) -> Option<LinkProfile> {
        [LinkProfile::Wan, LinkProfile::Lossy, LinkProfile::Lossy3]
            .into_iter()
            .find(|p| (p.loss() * 100.0 - percent).abs() < 1e-9)
    }

    /// RTT, down rate and up rate of the profile.
    pub fn shape(self) -> (Duration, Option<u64>, Option<u64>) {
        const MBIT: u64 = 1_000_000;
        match self {
            LinkProfile::Loopback => (Duration::ZERO, None, None),
            LinkProfile::Lan => (
                Duration::from_millis(1),
                Some(1000 * MBIT),
                Some(1000 * MBIT),
            ),
            LinkProfile::Wan | LinkProfile::Lossy | LinkProfile::Lossy3 => {
                (Duration::from_millis(40), Some(50 * MBIT), Some(50 * MBIT))
            }
            LinkProfile::Mobile => (Duration::from_millis(80), Some(12 * MBIT), Some(3 * MBIT)),
        }
    }

    /// Sets `config`'s RTT and rates to the profile's, and its loss for `lossy` (jitter,
    /// and the loss of the other profiles, are kept).
    pub fn apply(self, config: &mut LinkConfig) {
        let (rtt, down, up) = self.shape();
        config.rtt = rtt;
        config.down_bps = down;
        config.up_bps = up;
        if self.loss() > 0.0 {
            config.loss = self.loss();
        }
    }
}

/// Parses the loss experiment's levels (`0,1,3`: percentages, `%` optional) into the WAN
/// profiles with that loss ([`LinkProfile::wan_with_loss`]), without duplicates.
pub fn parse_loss_levels(s: &str) -> Result<Vec<LinkProfile>, ConfigError> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let pct: f64 = part
            .trim_end_matches('%')
            .parse()
            .map_err(|_| ConfigError(format!("bad loss level {part:?} (expected 0, 1 or 3)")))?;
        let p = LinkProfile::wan_with_loss(pct).ok_or_else(|| {
            ConfigError(format!(
                "loss level {part:?} has no link profile (expected 0, 1 or 3; `h2lab link \
                 --loss` takes any value)"
            ))
        })?;
        if !v.contains(&p) {
            v.push(p);
        }
    }
    if v.is_empty() {
        return Err(ConfigError("empty loss list".into()));
    }
    Ok(v)
}

impl fmt::Display for LinkProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LinkProfile {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase();
        if s == "lossy1" {
            return Ok(LinkProfile::Lossy);
        }
        LinkProfile::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                ConfigError(format!(
                    "unknown link profile {s:?} (expected loopback, lan, wan, mobile, lossy or lossy3)"
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr() -> SocketAddr {
        "127.0.0.1:0".parse().unwrap()
    }

    #[test]
    fn profiles() {
        let c = LinkConfig::profile("WAN".parse().unwrap(), addr(), addr());
        assert_eq!(c.rtt, Duration::from_millis(40));
        assert_eq!(c.describe(), "rtt 40ms, down 50mbit, up 50mbit");
        let m = LinkConfig::profile(LinkProfile::Mobile, addr(), addr());
        assert_eq!((m.down_bps, m.up_bps), (Some(12_000_000), Some(3_000_000)));
        assert!("dialup".parse::<LinkProfile>().is_err());
        let l = LinkConfig::profile(LinkProfile::Lossy, addr(), addr());
        assert_eq!(l.describe(), "rtt 40ms, down 50mbit, up 50mbit, loss 1%");
        let l = LinkConfig::profile("lossy3".parse().unwrap(), addr(), addr());
        assert_eq!(l.describe(), "rtt 40ms, down 50mbit, up 50mbit, loss 3%");
        assert_eq!("lossy1".parse::<LinkProfile>().unwrap(), LinkProfile::Lossy);
        assert_eq!(LinkProfile::wan_with_loss(0.0), Some(LinkProfile::Wan));
        assert_eq!(LinkProfile::wan_with_loss(3.0), Some(LinkProfile::Lossy3));
        assert_eq!(LinkProfile::wan_with_loss(2.0), None);
        assert_eq!(
            parse_loss_levels("0, 1%,3,1").unwrap(),
            vec![LinkProfile::Wan, LinkProfile::Lossy, LinkProfile::Lossy3]
        );
        assert!(parse_loss_levels("2").is_err());
        assert!(parse_loss_levels("").is_err());
        for p in LinkProfile::ALL {
            assert_eq!(p.name().parse::<LinkProfile>().unwrap(), p);
            LinkConfig::profile(p, addr(), addr()).validate().unwrap();
        }
    }

    #[test]
    fn validation() {
        let mut c = LinkConfig::new(addr(), addr());
        c.loss = 1.0;
        assert!(c.validate().is_err());
        c.loss = f64::NAN;
        assert!(c.validate().is_err());
        c.loss = 0.01;
        c.up_bps = Some(0);
        assert!(c.validate().is_err());
    }

    #[test]
    fn direction_params_split_the_rtt() {
        let mut c = LinkConfig::profile(LinkProfile::Mobile, addr(), addr());
        c.jitter = Duration::from_millis(2);
        let up = c.direction_params(Direction::Up);
        assert_eq!(up.one_way, 40_000_000);
        assert_eq!(up.rtt, 80_000_000);
        assert_eq!(up.bps, Some(3_000_000));
        assert_eq!(up.jitter, 2_000_000);
        // The buffer limit covers queue + in-flight bytes.
        let down = c.direction_params(Direction::Down);
        assert!(c.buffer_limit(Direction::Down) >= down.queue_bytes + 12_000_000 / 8 * 42 / 1000);
    }
}
