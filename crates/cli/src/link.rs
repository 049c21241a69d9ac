//! `h2lab link`: runs the user-space network emulator (`h2lab_link`) in the foreground
//! until SIGINT/SIGTERM, relaying TCP (and UDP, for HTTP/3, unless `--no-udp`) from `--listen`
//! to `--upstream` with the configured RTT, bandwidth, queue, jitter and loss. Prints the listening address on start and the
//! link's counters on exit.
//!
//! Exit status: 0 after a signal; 1 on usage errors or when the link cannot start.

use std::net::TcpListener;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use h2lab_engine::StopFlag;
use h2lab_link::{self as link, LinkFlags, Shutdown};

use crate::compare::EXIT_FAILURE;

const PREFIX: &str = "h2lab link: error:";

/// `h2lab link` options.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Profiles: loopback (no shaping), lan (1 ms, 1 Gbit/s), wan (40 ms, \
    50 Mbit/s), mobile (80 ms, 12 Mbit/s down, 3 Mbit/s up); other flags override the \
    profile.\nUDP (HTTP/3) is relayed too, on the TCP port number when it is free for UDP \
    (otherwise on another port, printed at start): one upstream socket per client address and \
    port, closed after --udp-idle without traffic; loss drops datagrams and a full queue drops \
    at the tail (TCP loss is emulated as retransmission delay).\nTCP: the relay terminates TCP on \
    loopback, so it emulates each relayed connection's congestion window itself (--tcp-model, \
    default cubic: initial window 10 segments, slow start, window x0.7 per loss, once per \
    window; reno: x0.5); --tcp-model none relays at loopback TCP's pace (loss only delays).\nRates: bit, kbit, mbit, gbit (decimal, per second) or unlimited. Durations: \
    ns, us, ms, s.\nExample: h2lab link --listen 127.0.0.1:8443 --upstream 127.0.0.1:443 \
    --rtt 20ms --down 90mbit --up 12mbit --loss 0.5%\nPacket mode (--packet): the kernels' own TCP \
    and QUIC across the path, in two network namespaces (client 198.18.0.1, server 198.18.0.2) \
    joined by TUN devices; IP packets are delayed, queued (drop-tail) and dropped. Without \
    --packet the relay above models TCP (outputs say modelled TCP).\nExample: h2lab link \
    --packet --rtt 40ms --down 50mbit --loss 1% -- curl -s $H2LAB_URL (quote $H2LAB_URL for \
    the command's shell: sh -c 'curl -s \"$H2LAB_URL\"')"
)]
pub struct LinkArgs {
    /// Address to accept client connections on.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:0")]
    pub listen: String,

    /// Server to relay to (relay mode; packet mode runs its own server or --server-cmd).
    #[arg(long, value_name = "HOST:PORT", required_unless_present = "packet")]
    pub upstream: Option<String>,

    /// Packet mode: the kernels' own TCP and QUIC across the path. Client and server sides get
    /// network namespaces (198.18.0.1 and 198.18.0.2) joined by TUN devices; the link shapes
    /// IP packets. Runs `h2lab serve` in-process on the server side (or --server-cmd) and the
    /// command after `--` on the client side. Needs root or an unprivileged user namespace.
    #[arg(long)]
    pub packet: bool,

    /// Packet mode: run this shell command on the server side instead of the built-in server.
    #[arg(long, value_name = "CMD", requires = "packet")]
    pub server_cmd: Option<String>,

    /// Packet mode: TCP congestion control of both ends of every connection across the path
    /// (set on the route: any of /proc/sys/net/ipv4/tcp_available_congestion_control, e.g.
    /// cubic, reno, bbr) [default: the host's default].
    #[arg(long, value_name = "NAME", requires = "packet")]
    pub cc: Option<String>,

    /// Packet mode: bursty loss (Gilbert-Elliott) with this mean burst length in packets, at
    /// the mean rate --loss.
    #[arg(long, value_name = "PACKETS", requires = "packet")]
    pub loss_burst: Option<f64>,

    /// Packet mode: let jitter reorder packets (by default arrivals keep sending order).
    #[arg(long, requires = "packet")]
    pub reorder: bool,

    /// Packet mode: the command to run on the client side (after `--`); without one the path
    /// runs until SIGINT/SIGTERM.
    #[arg(last = true, value_name = "CMD", requires = "packet")]
    pub command: Vec<String>,

    /// Named shape: loopback, lan, wan, mobile, lossy (wan with 1% loss), lossy3 (3% loss).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    /// Round-trip time added (half each way), e.g. 20ms.
    #[arg(long, value_name = "DURATION")]
    pub rtt: Option<String>,

    /// Downstream rate (server to client), e.g. 90mbit.
    #[arg(long, value_name = "RATE")]
    pub down: Option<String>,

    /// Upstream rate (client to server), e.g. 12mbit.
    #[arg(long, value_name = "RATE")]
    pub up: Option<String>,

    /// Packet loss, e.g. 0.5%: retransmission delay and a window cut on TCP, dropped datagrams on UDP.
    #[arg(long, value_name = "PERCENT")]
    pub loss: Option<String>,

    /// Delay jitter (never reorders), e.g. 2ms.
    #[arg(long, value_name = "DURATION")]
    pub jitter: Option<String>,

    /// Bottleneck queue size, e.g. 256k [default: one BDP, at least 5 ms of traffic].
    #[arg(long, value_name = "SIZE")]
    pub queue: Option<String>,

    /// Seed of the jitter and loss draws.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Do not charge the TCP handshake's round trip.
    #[arg(long)]
    pub no_handshake: bool,

    /// Relay TCP only (UDP is relayed by default, for HTTP/3).
    #[arg(long)]
    pub no_udp: bool,

    /// Idle time after which a UDP flow's upstream socket is closed [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub udp_idle: Option<String>,

    /// Congestion window emulated per relayed TCP connection: cubic, reno or none.
    #[arg(long, value_name = "MODEL", default_value = "cubic")]
    pub tcp_model: String,
}

/// Runs `h2lab link` and returns the exit status.
pub fn main(a: LinkArgs) -> ExitCode {
    if a.packet {
        return crate::link_packet::main(a);
    }
    let flags = flags(&a);
    let cfg = match flags.to_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{PREFIX} {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    relay(cfg)
}

/// The shape flags as the link library takes them.
pub fn flags(a: &LinkArgs) -> LinkFlags {
    LinkFlags {
        listen: Some(a.listen.clone()),
        // Packet mode has no upstream; the relay's parser still wants an address.
        upstream: a.upstream.clone().unwrap_or_else(|| "127.0.0.1:9".into()),
        profile: a.profile.clone(),
        rtt: a.rtt.clone(),
        down: a.down.clone(),
        up: a.up.clone(),
        loss: a.loss.clone(),
        jitter: a.jitter.clone(),
        queue: a.queue.clone(),
        seed: a.seed,
        no_handshake: a.no_handshake,
        no_udp: a.no_udp,
        udp_idle: a.udp_idle.clone(),
        tcp_model: Some(a.tcp_model.clone()),
    }
}

fn relay(cfg: link::LinkConfig) -> ExitCode {
    let listener = match TcpListener::bind(cfg.listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{PREFIX} cannot listen on {}: {e}", cfg.listen);
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let shutdown = Shutdown::new();
    let l = match link::Link::new(listener, &cfg, shutdown.clone()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{PREFIX} {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let stats = l.stats();
    let stop = StopFlag::new();
    if let Err(e) = crate::signals::stop_on_signals(&stop) {
        eprintln!("{PREFIX} cannot install signal handlers: {e}");
        return ExitCode::from(EXIT_FAILURE);
    }
    println!(
        "h2lab link: {} -> {} ({})",
        l.local_addr(),
        cfg.upstream,
        cfg.describe()
    );
    if let Some(udp) = l.udp_addr() {
        println!("h2lab link: udp {udp} -> {}", cfg.upstream);
    }
    let model = cfg.effective_tcp_model();
    println!("h2lab link: path {}", link::PathKind::Relay.describe());
    println!(
        "h2lab link: modelled TCP: tcp model {}",
        model.map_or("none", |m| m.name())
    );
    // Forward the signal flag to the link's shutdown trigger.
    let watcher = {
        let shutdown = shutdown.clone();
        std::thread::spawn(move || {
            while !stop.is_stopped() && !shutdown.is_triggered() {
                std::thread::sleep(Duration::from_millis(50));
            }
            shutdown.trigger();
        })
    };
    let r = l.run();
    shutdown.trigger();
    let _ = watcher.join();
    println!("{}", stats.snapshot());
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{PREFIX} {e}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}
