//! One browser load's Resource Timing, resource by resource: when each request was found
//! (`startTime`), sent (`requestStart`), its first octet (`responseStart`) and its end
//! (`responseEnd`), then the summary of where the page time went. A diagnostic for "why is
//! the browser slower than the simulated fetcher?".
//!
//! ```sh
//! cargo run -p h2lab-browser --example timeline -- h2 127.0.0.1:8443 /tmp/h2lab/cert.pem [/page] [CPUS]
//! ```
//!
//! `h1` adds `--disable-http2` (the server may offer `h2`); `h3` forces QUIC to the same port.
//! `H2LAB_BROWSER_ARGS` adds switches; `H2LAB_NO_CONNECTIONS=1` leaves DevTools' `Network`
//! domain off (no connection count, and none of its cost).

use std::time::Duration;

use h2lab_browser::{find_browser, load, BrowserSpec, LoadOptions, Protocol, Workload};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 {
        eprintln!("usage: timeline h1|h2|h3 IP:PORT CERT.pem [PATH] [CPU,CPU]");
        std::process::exit(2);
    }
    let protocol = match a[1].as_str() {
        "h1" => Protocol::H1,
        "h2" => Protocol::H2,
        _ => Protocol::H3,
    };
    let cpus = a
        .get(5)
        .map(|c| c.split(',').filter_map(|x| x.parse().ok()).collect());
    let mut extra: Vec<String> = std::env::var("H2LAB_BROWSER_ARGS")
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    if protocol == Protocol::H1 {
        extra.push("--disable-http2".to_string());
    }
    let o = LoadOptions {
        spec: BrowserSpec {
            binary: find_browser("chromium").expect("chromium"),
            cpus,
            extra_args: extra,
        },
        protocol,
        host: "localhost".into(),
        addr: a[2].parse().expect("IP:PORT"),
        spki_pin: h2lab_browser::spki::pin_of_pem_file(std::path::Path::new(&a[3]))
            .expect("certificate"),
        workload: Workload::Page(a.get(4).cloned().unwrap_or_else(|| "/page".into())),
        timeout: Duration::from_secs(60),
        count_connections: std::env::var_os("H2LAB_NO_CONNECTIONS").is_none(),
    };
    let l = load(&o).expect("load");
    let mut r = l.resources.clone();
    r.sort_by(|x, y| x.start_ms.total_cmp(&y.start_ms));
    println!("start\trequest\tfirst\tend\tproto\turl");
    for e in &r {
        println!(
            "{:.1}\t{:.1}\t{:.1}\t{:.1}\t{}\t{}",
            e.start_ms,
            e.request_start_ms,
            e.response_start_ms,
            e.response_end_ms,
            e.protocol,
            e.url
        );
    }
    let max = |f: fn(&h2lab_browser::ResourceEntry) -> f64| r.iter().map(f).fold(0.0, f64::max);
    let min =
        |f: fn(&h2lab_browser::ResourceEntry) -> f64| r.iter().map(f).fold(f64::INFINITY, f64::min);
    println!(
        "document responseEnd {:.1}  DOMContentLoaded {:.1}  load {:.1}  fcp {:?}  connections {} ({} DevTools Network events)",
        l.response_end_ms, l.dom_content_loaded_ms, l.load_ms, l.fcp_ms, l.connections,
        l.network_events
    );
    println!(
        "browser cpu during the load {:?} ms over {:.0} ms wall; since its start {:?} ms",
        l.cpu_ms.map(|c| c.round()),
        l.window_ms,
        l.process_cpu_ms.map(|c| c.round())
    );
    println!(
        "found {:.1}..{:.1}  sent {:.1}..{:.1}  first octet {:.1}..{:.1}  ended {:.1}..{:.1}",
        min(|e| e.start_ms),
        max(|e| e.start_ms),
        min(|e| e.request_start_ms),
        max(|e| e.request_start_ms),
        min(|e| e.response_start_ms),
        max(|e| e.response_start_ms),
        min(|e| e.response_end_ms),
        max(|e| e.response_end_ms),
    );
}
