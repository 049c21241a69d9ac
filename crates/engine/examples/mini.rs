//! Minimal driver for manual runs and CPU comparisons with h2load while the
//! real CLI (crates/cli) is built elsewhere:
//! `cargo run --release -p h2lab-engine --example mini -- -n 100000 -c 10 -m 10 [--h1] [-t 1] URL`

use std::time::Duration;

use h2lab_engine::{BenchConfig, NoopObserver, ProtocolChoice, StopFlag};

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut n, mut c, mut m, mut t) = (1u64, 1u32, 1u32, 1u32);
    let (mut h1, mut dur, mut url) = (false, None, None);
    let mut w = 30u8;
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_default();
        match a.as_str() {
            "-n" => n = val().parse().unwrap_or(1),
            "-c" => c = val().parse().unwrap_or(1),
            "-m" => m = val().parse().unwrap_or(1),
            "-t" => t = val().parse().unwrap_or(1),
            "-w" => w = val().parse().unwrap_or(30),
            "-D" => dur = val().parse::<u64>().ok().map(Duration::from_secs),
            "--h1" => h1 = true,
            u => url = Some(u.to_owned()),
        }
    }
    let Some(url) = url else {
        eprintln!("usage: mini [-n N] [-c C] [-m M] [-t T] [-D secs] [--h1] URL");
        std::process::exit(1);
    };
    let mut cfg = match BenchConfig::from_uris(&[url], None) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    cfg.requests = n;
    cfg.clients = c;
    cfg.max_concurrent_streams = m;
    cfg.threads = t;
    cfg.duration = dur;
    cfg.window_bits = w;
    if h1 {
        cfg.protocol = ProtocolChoice::H1;
    }
    match h2lab_engine::run(&cfg, &NoopObserver, &StopFlag::new()) {
        Ok(r) => {
            let q = &r.requests;
            println!(
                "protocol {:?} fallback {} tls {:?}",
                r.app_protocol, r.protocol_fallback, r.tls
            );
            println!(
                "finished in {:?}, {:.2} req/s; requests: {} total, {} started, {} done, {} succeeded, {} failed, {} errored, {} timeout",
                r.elapsed, r.req_per_sec(), q.total, q.started, q.done, q.succeeded, q.failed, q.errored, q.timeout
            );
            println!(
                "traffic: {} total, {} headers ({} decomp, savings {:.2}%), {} data",
                r.traffic.bytes_total,
                r.traffic.bytes_head,
                r.traffic.bytes_head_decomp,
                r.traffic.header_space_savings() * 100.0,
                r.traffic.bytes_body
            );
            let us = |h: &hdrhistogram::Histogram<u64>, q: f64| h.value_at_quantile(q) / 1000;
            println!(
                "request p50 {}us p99 {}us max {}us; connect p50 {}us; ttfb p50 {}us; errors {:?}",
                us(&r.request_time, 0.5),
                us(&r.request_time, 0.99),
                r.request_time.max() / 1000,
                us(&r.connect_time, 0.5),
                us(&r.ttfb, 0.5),
                r.errors
            );
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
