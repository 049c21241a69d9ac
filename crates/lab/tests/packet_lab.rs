//! The lab commands end to end over the packet link (kernel TCP in network namespaces joined
//! by TUN devices): page (loss levels), compare (a shaped condition) and upstream; and the
//! relay when asked. Afterwards no thread of this process is left in a namespace the lab made
//! and no descriptor holds one (its TUN devices go with it).
//!
//! Packet mode needs root or an unprivileged user namespace: without either these tests skip
//! with a recorded line, but fail when `CI=true` (CI runs as root).

use std::collections::BTreeSet;

use h2lab_engine::StopFlag;
use h2lab_lab::compare::{self, CompareConfig, Preset};
use h2lab_lab::link::{LinkProfile, PathKind};
use h2lab_lab::netpath::{ModeChoice, PathMode};
use h2lab_lab::page::{self, PageConfig};
use h2lab_lab::proto::LabProtocol;
use h2lab_lab::upstream;
use h2lab_proxy::UpstreamProtocol;
use std::time::Duration;

/// Whether packet mode works here; otherwise records why and skips (fails under `CI=true`).
fn packet_available(test: &str) -> bool {
    let c = ModeChoice::resolve(PathMode::Packet);
    match c.fallback {
        None => true,
        Some(why) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: packet mode unavailable in CI: {why}"
            );
            eprintln!("skipped {test}: {why}");
            false
        }
    }
}

/// The network namespaces this process's threads are in and its descriptors hold.
fn namespaces_held() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for dir in ["/proc/self/task", "/proc/self/fd"] {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = if dir.ends_with("task") {
                e.path().join("ns/net")
            } else {
                e.path()
            };
            if let Ok(l) = std::fs::read_link(&p) {
                let l = l.to_string_lossy().into_owned();
                if l.starts_with("net:[") {
                    out.insert(l);
                }
            }
        }
    }
    out
}

/// This thread's own namespace.
fn own_namespace() -> String {
    std::fs::read_link("/proc/thread-self/ns/net")
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// After a run: this thread is back in its namespace, and no thread or descriptor of the
/// process holds another one (tests of this file run one at a time, see `SERIAL`).
fn assert_namespaces_gone(before: &str) {
    assert_eq!(own_namespace(), before, "the thread left the client side");
    let held = namespaces_held();
    let others: Vec<_> = held.iter().filter(|n| *n != before).collect();
    assert!(others.is_empty(), "namespaces still held: {others:?}");
}

/// The tests of this file one at a time (each checks that the process holds no namespace
/// of its own afterwards).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn page_loss_levels_run_over_the_packet_link() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !packet_available("page_loss_levels_run_over_the_packet_link") {
        return;
    }
    let ns = own_namespace();
    let cfg = PageConfig {
        repeat: 1,
        page_query: "n=20&min=1000&max=4000".into(),
        loss_levels: vec![LinkProfile::Wan, LinkProfile::Lossy3],
        ..PageConfig::default()
    };
    assert_eq!(cfg.mode, PathMode::Packet);
    let mut lines = Vec::new();
    let r = page::run(&cfg, &mut |l| lines.push(l.to_owned())).unwrap();
    assert_eq!(r.path.mode, PathMode::Packet);
    assert!(r.path.fallback.is_none());
    assert!(r
        .link_models
        .iter()
        .all(|m| m.path == PathKind::Packet && m.tcp == "kernel TCP" && m.tcp_model.is_none()));
    assert_eq!(r.loss.len(), 2);
    for l in &r.loss {
        for p in &l.protocols {
            assert!(p.error.is_none(), "{:?}: {:?}", p.proto, p.error);
            assert!(p.loads.iter().all(|x| x.failed == 0 && x.requests == 21));
        }
        let c = l.link_counts.path.expect("the level's path counters");
        assert_eq!(c.path, PathKind::Packet);
        assert!(c.up.packets > 0 && c.down.packets > 0, "{c:?}");
        assert_eq!(l.path_by_protocol.len(), 3, "{:?}", l.path_by_protocol);
        for p in &l.path_by_protocol {
            assert!(p.counters.down.packets > 0, "{p:?}");
        }
        // The whole level counts at least what the protocols' loads did.
        let sum: u64 = l
            .path_by_protocol
            .iter()
            .map(|p| p.counters.down.packets)
            .sum();
        assert!(c.down.packets >= sum, "{c:?} {sum}");
    }
    // Loss at 3%: the link dropped packets; at 0% none.
    let wan = r.loss[0].link_counts.path.unwrap();
    assert_eq!(wan.up.lost + wan.down.lost, 0);
    // Each side's congestion control is recorded per path.
    assert_eq!(r.path_sides.len(), 2, "{:?}", r.path_sides);
    assert!(r
        .path_sides
        .iter()
        .all(|(_, s)| !s.client_tcp_cc.is_empty() && !s.server_tcp_cc.is_empty()));
    let json: serde_json::Value = serde_json::from_str(&page::output::json(&r)).unwrap();
    assert_eq!(json["path"]["mode"], "packet");
    assert_eq!(json["path"]["label"], "packet link (kernel TCP)");
    assert_eq!(json["link_models"][0]["path"], "packet");
    assert!(json["loss"][1]["link_counts"]["path"]["down"]["packets"]
        .as_u64()
        .is_some_and(|n| n > 0));
    assert!(json["path_sides"][0][1]["server_tcp_cc"].is_string());
    let text = page::output::render_text(&r);
    assert!(text.contains("packet link (kernel TCP)"), "{text}");
    assert!(text.contains("queue drops"), "{text}");
    let html = h2lab_lab::html::page::render(&r);
    assert!(html.contains("packet link (kernel TCP)"));
    assert!(html.contains("What the path counted"));
    assert!(
        lines.iter().any(|l| l.contains("packet link (kernel TCP)")),
        "{lines:?}"
    );
    drop(r);
    assert_namespaces_gone(&ns);
}

#[test]
fn page_on_one_link_counts_each_protocols_packets_with_the_chosen_tcp() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !packet_available("page_on_one_link_counts_each_protocols_packets_with_the_chosen_tcp") {
        return;
    }
    let ns = own_namespace();
    let cfg = PageConfig {
        repeat: 1,
        page_query: "n=10&min=1000&max=2000".into(),
        protocols: Some(vec![LabProtocol::H1Tls, LabProtocol::H2]),
        // Reno: always allowed as a namespace default (the kernel's built-in).
        tcp_cc: Some("reno".into()),
        ..PageConfig::default()
    };
    let r = page::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.path.mode, PathMode::Packet);
    let (_, sides) = &r.path_sides[0];
    assert_eq!(
        (sides.client_tcp_cc.as_str(), sides.server_tcp_cc.as_str()),
        ("reno", "reno")
    );
    assert_eq!(r.path_counts.len(), 2, "{:?}", r.path_counts);
    assert!(r.path_counts.iter().all(|p| p.counters.up.packets > 0));
    let text = page::output::render_text(&r);
    assert!(
        text.contains("path during HTTP/2 (TLS) loads: packet link (kernel TCP): up"),
        "{text}"
    );
    assert!(h2lab_lab::html::page::render(&r).contains("What the path counted"));
    assert!(r
        .protocols
        .iter()
        .all(|p| p.error.is_none() && p.loads.len() == 1));
    drop(r);
    assert_namespaces_gone(&ns);
}

/// `--repeat-view --0rtt` over the packet link: the server inside the server namespace
/// accepts early data too (it is a server of its own, started with the same options), so
/// every repeat-view connection's 0-RTT is accepted.
#[test]
fn page_repeat_view_0rtt_is_accepted_over_the_packet_link() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !packet_available("page_repeat_view_0rtt_is_accepted_over_the_packet_link") {
        return;
    }
    let ns = own_namespace();
    let cfg = PageConfig {
        repeat: 1,
        page_query: "n=4&min=1000&max=2000".into(),
        protocols: Some(vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3]),
        repeat_view: true,
        zero_rtt: true,
        ..PageConfig::default()
    };
    let r = page::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.path.mode, PathMode::Packet);
    let v = r.repeat_view.as_ref().expect("a repeat-view report");
    assert_eq!(v.protocols.len(), 3);
    for p in &v.protocols {
        assert!(
            p.repeat_connections > 0,
            "{:?}: {:?}",
            p.proto,
            p.repeat.error
        );
        assert_eq!(
            (p.repeat_early_accepted, p.repeat_early_offered),
            (p.repeat_connections, p.repeat_connections),
            "{:?}",
            p.proto
        );
    }
    drop(r);
    assert_namespaces_gone(&ns);
}

#[test]
fn compare_shaped_conditions_run_over_the_packet_link() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !packet_available("compare_shaped_conditions_run_over_the_packet_link") {
        return;
    }
    let ns = own_namespace();
    let mut cfg = CompareConfig::preset(Preset::Tiny);
    cfg.axes.payloads = vec!["ping".parse().unwrap()];
    cfg.axes.sweep_payloads = cfg.axes.payloads.clone();
    cfg.axes.links = vec![LinkProfile::Loopback, LinkProfile::Lossy];
    cfg.axes.protocols = vec![LabProtocol::H2c, LabProtocol::H3];
    let mut start = String::new();
    let r = compare::run(
        &cfg,
        &StopFlag::new(),
        &mut |_, _, env| start = env.to_owned(),
        &mut |_| {},
    )
    .unwrap();
    assert!(start.contains("path: packet link (kernel TCP)"), "{start}");
    assert_eq!(r.path.choice.mode, PathMode::Packet);
    assert_eq!(r.path.sides.len(), 1, "{:?}", r.path.sides);
    for c in &r.cells {
        assert!(c.error.is_none(), "{:?} {:?}", c.key, c.error);
        let shaped = c.key.cond.link != LinkProfile::Loopback;
        assert_eq!(c.path.is_some(), shaped, "{:?}", c.key);
        if let Some(p) = c.path {
            assert_eq!(p.path, PathKind::Packet);
            assert!(p.up.packets > 0 && p.down.packets > 0, "{p:?}");
        }
        assert!(c.runs.iter().any(|s| s.completed > 0), "{:?}", c.key);
    }
    let json: serde_json::Value = serde_json::from_str(&compare::output::json(&r)).unwrap();
    assert_eq!(json["path"]["mode"], "packet");
    assert_eq!(json["link_models"][1]["tcp"], "kernel TCP");
    let text = compare::output::render_text(&r);
    assert!(text.contains("path: packet link (kernel TCP)"), "{text}");
    drop(r);
    assert_namespaces_gone(&ns);
}

#[test]
fn upstream_hop_runs_over_the_packet_link() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !packet_available("upstream_hop_runs_over_the_packet_link") {
        return;
    }
    let ns = own_namespace();
    let mut cfg = upstream::UpstreamConfig::quick();
    cfg.payloads = vec!["1k".parse().unwrap()];
    cfg.concurrency = vec![4];
    cfg.runs = 1;
    cfg.backends = 2;
    cfg.arms = vec![UpstreamProtocol::H1, UpstreamProtocol::H2cMux];
    cfg.warm_up = Duration::from_millis(100);
    cfg.duration = Duration::from_millis(300);
    assert_eq!(cfg.mode, PathMode::Packet);
    let r = upstream::run(&cfg, &StopFlag::new(), &mut |_| {}).unwrap();
    assert_eq!(r.path.mode, PathMode::Packet);
    assert!(r.path_sides.is_some());
    for a in &r.cells[0].arms {
        assert!(a.skipped.is_none(), "{:?}", a.skipped);
        assert!(a.rps.is_some_and(|x| x.median > 0.0), "{:?}", a.arm);
        let p = a.path.expect("the arm's path counters");
        assert_eq!(p.path, PathKind::Packet);
        assert!(p.up.packets > 0 && p.down.packets > 0, "{p:?}");
    }
    // The proxy counted its upstream connections (no relay to count them).
    assert!(r.connections.iter().all(|c| c.1.is_some_and(|n| n > 0)));
    let text = upstream::render(&r);
    assert!(text.contains("path: packet link (kernel TCP)"), "{text}");
    assert!(
        text.contains("What the proxy -> backends path counted"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&upstream::json(&r)).unwrap();
    assert_eq!(json["path"]["mode"], "packet");
    assert!(json["cells"][0]["arms"][0]["path"]["up"]["packets"].is_u64());
    assert!(upstream::html(&r).contains("packet link (kernel TCP)"));
    drop(r);
    assert_namespaces_gone(&ns);
}

#[test]
fn browser_arms_run_inside_the_client_namespace() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !packet_available("browser_arms_run_inside_the_client_namespace")
        || !h2lab_testkit::anchors_available(&["chromium"])
    {
        return;
    }
    let ns = own_namespace();
    let cfg = PageConfig {
        repeat: 1,
        page_query: "n=10&min=1k&max=2k&seed=1".into(),
        browser: Some(page::browser::BrowserConfig {
            binary: page::browser::find_browser("chromium").unwrap(),
            only: false,
        }),
        ..PageConfig::default()
    };
    let r = page::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.path.mode, PathMode::Packet);
    let br = &r.browser[0];
    // HTTP/1.1 (its own http/1.1-only listener on the server side), HTTP/2 and HTTP/3.
    assert_eq!(br.arms.len(), 3);
    for a in &br.arms {
        assert!(
            a.page.error.is_none(),
            "{:?}: {:?}",
            a.page.proto,
            a.page.error
        );
        assert_eq!(a.fallbacks, 0, "{:?}", a.page.proto);
        assert_eq!(a.resources, Some(10.0), "{:?}", a.page.proto);
    }
    drop(r);
    assert_namespaces_gone(&ns);
}

#[test]
fn relay_mode_is_used_when_asked_and_says_tcp_is_modelled() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = PageConfig {
        repeat: 1,
        page_query: "n=10&min=1000&max=2000".into(),
        protocols: Some(vec![LabProtocol::H1Tls, LabProtocol::H2]),
        mode: PathMode::Relay,
        ..PageConfig::default()
    };
    let r = page::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.path.mode, PathMode::Relay);
    assert_eq!(r.path.label, "relay (modelled TCP)");
    assert!(r.path_sides.is_empty());
    assert_eq!(r.link_models[0].path, PathKind::Relay);
    assert!(r.link.contains("modelled TCP"), "{}", r.link);
    let json: serde_json::Value = serde_json::from_str(&page::output::json(&r)).unwrap();
    assert_eq!(json["path"]["label"], "relay (modelled TCP)");
    assert!(r
        .path_counts
        .iter()
        .all(|p| p.counters.path == PathKind::Relay && p.counters.down.tcp_chunks > 0));
}

/// The server namespaces' inodes named in a run's progress lines (`server 198.18.0.2 (...,
/// netns net:[N])`).
fn server_namespaces(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l.split("server 198.18.0.2 (").nth(1))
        .filter_map(|rest| rest.split("netns ").nth(1))
        .filter_map(|ns| ns.split(')').next())
        .map(str::to_owned)
        .collect()
}

/// Processes of the machine (anchor servers, browsers) still in one of `namespaces`.
fn processes_in(namespaces: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(l) = std::fs::read_link(e.path().join("ns/net")) else {
            continue;
        };
        if namespaces.contains(&l.to_string_lossy().into_owned()) {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            out.push(format!(
                "{} {}",
                e.file_name().to_string_lossy(),
                comm.trim()
            ));
        }
    }
    out
}

#[test]
fn page_render_runs_its_servers_and_anchors_on_the_server_side() {
    use h2lab_lab::page::render::{self, Arm, RenderConfig, RenderLink};
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !packet_available("page_render_runs_its_servers_and_anchors_on_the_server_side") {
        return;
    }
    let ns = own_namespace();
    let cfg = RenderConfig {
        pages: vec![(
            "small".into(),
            "n=10&seed=3&css=2&css_size=4k&js=2&js_size=4k".into(),
        )],
        links: vec![RenderLink {
            name: "lossy".into(),
            profile: LinkProfile::Lan,
            loss: 0.01,
        }],
        repeat: 1,
        timeout: Duration::from_secs(30),
        ..RenderConfig::default()
    };
    assert_eq!(cfg.mode, PathMode::Packet);
    let mut lines = Vec::new();
    let r = render::run(&cfg, &mut |l| lines.push(l.to_owned())).unwrap();
    assert_eq!(r.path.mode, PathMode::Packet);
    let l = &r.links[0];
    assert!(
        l.description.contains("packet link (kernel TCP)"),
        "{}",
        l.description
    );
    assert!(l.path_sides.is_some());
    // Every arm, the anchors' included (reached at 198.18.0.2 on the server side).
    let mut want = Arm::ALL.to_vec();
    if h2lab_lab::page::anchor::nghttpd_path().is_some() {
        want.extend([Arm::Nghttpd, Arm::NghttpdPush]);
    }
    if h2lab_lab::page::anchor::h2o_path().is_some() {
        want.push(Arm::H2o);
    }
    let arms: Vec<Arm> = l.arms.iter().map(|a| a.arm).collect();
    assert_eq!(arms, want, "{lines:?}");
    for a in &l.arms {
        assert!(a.error.is_none(), "{:?}: {:?}", a.arm, a.error);
        assert_eq!(a.loads.len(), 1, "{:?}", a.arm);
        let c = a.path.expect("the arm's path counters");
        assert_eq!(c.path, PathKind::Packet);
        assert!(c.up.packets > 0 && c.down.packets > 0, "{:?} {c:?}", a.arm);
    }
    let json: serde_json::Value = serde_json::from_str(&render::json(&r)).unwrap();
    assert_eq!(json["path"]["mode"], "packet");
    assert!(json["links"][0]["arms"][0]["path"]["down"]["packets"].is_u64());
    let text = render::render_text(&r);
    assert!(text.contains("path: packet link (kernel TCP)"), "{text}");
    assert!(text.contains("path during h2 prio on loads:"), "{text}");
    let servers = server_namespaces(&lines);
    assert_eq!(servers.len(), 1, "{lines:?}");
    drop(r);
    assert_namespaces_gone(&ns);
    assert_eq!(processes_in(&servers), Vec::<String>::new());
}

#[test]
fn page_early_hints_runs_over_the_packet_link() {
    use h2lab_lab::page::hints::{self, HintsConfig};
    use h2lab_lab::page::render::RenderLink;
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !packet_available("page_early_hints_runs_over_the_packet_link") {
        return;
    }
    let ns = own_namespace();
    let browser = h2lab_testkit::anchors_available(&["chromium"])
        .then(|| page::browser::find_browser("chromium").ok())
        .flatten();
    let cfg = HintsConfig {
        page_query: "n=4&min=1k&max=2k&seed=1&css=1&css_size=4k&js=1&js_size=4k&think=20ms".into(),
        links: vec![RenderLink {
            name: "lan".into(),
            profile: LinkProfile::Lan,
            loss: 0.0,
        }],
        repeat: 1,
        timeout: Duration::from_secs(30),
        browser,
        ..HintsConfig::default()
    };
    let mut lines = Vec::new();
    let r = hints::run(&cfg, &mut |l| lines.push(l.to_owned())).unwrap();
    assert_eq!(r.path.mode, PathMode::Packet);
    let l = &r.links[0];
    assert!(l.description.contains("packet link (kernel TCP)"));
    // h1-tls, h2 and h3, each without and with hints (and Chromium's h2 and h3 arms).
    assert!(l.arms.len() >= 6, "{:?}", l.arms.len());
    for a in &l.arms {
        assert!(
            a.error.is_none(),
            "{:?} {}: {:?}",
            a.proto,
            a.browser,
            a.error
        );
        assert_eq!(a.loads.len(), 1, "{:?} {}", a.proto, a.browser);
        let c = a.path.expect("the arm's path counters");
        assert!(
            c.up.packets > 0 && c.down.packets > 0,
            "{:?} {c:?}",
            a.proto
        );
    }
    let text = hints::render_text(&r);
    assert!(text.contains("path: packet link (kernel TCP)"), "{text}");
    let servers = server_namespaces(&lines);
    drop(r);
    assert_namespaces_gone(&ns);
    assert_eq!(processes_in(&servers), Vec::<String>::new());
}

#[test]
fn page_render_on_the_relay_counts_each_arms_relay() {
    use h2lab_lab::page::render::{self, RenderConfig, RenderLink};
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = RenderConfig {
        pages: vec![(
            "small".into(),
            "n=6&seed=3&css=1&css_size=4k&js=1&js_size=4k".into(),
        )],
        links: vec![RenderLink {
            name: "lan".into(),
            profile: LinkProfile::Lan,
            loss: 0.0,
        }],
        repeat: 1,
        timeout: Duration::from_secs(30),
        mode: PathMode::Relay,
        ..RenderConfig::default()
    };
    let r = render::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.path.label, "relay (modelled TCP)");
    let l = &r.links[0];
    assert!(l.description.contains("modelled TCP"), "{}", l.description);
    assert!(l.path_sides.is_none());
    for a in &l.arms {
        assert!(a.error.is_none(), "{:?}: {:?}", a.arm, a.error);
        let c = a.path.expect("the arm's relay counters");
        assert_eq!(c.path, PathKind::Relay);
        assert!(c.down.tcp_chunks > 0, "{:?} {c:?}", a.arm);
    }
}

#[test]
fn page_early_hints_on_the_relay_reaches_every_protocol_through_its_relays() {
    use h2lab_lab::page::hints::{self, HintsConfig};
    use h2lab_lab::page::render::RenderLink;
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = HintsConfig {
        page_query: "n=4&min=1k&max=2k&seed=1&css=1&css_size=4k&js=1&js_size=4k&think=20ms".into(),
        links: vec![RenderLink {
            name: "lan".into(),
            profile: LinkProfile::Lan,
            loss: 0.0,
        }],
        repeat: 1,
        timeout: Duration::from_secs(30),
        mode: PathMode::Relay,
        ..HintsConfig::default()
    };
    let r = hints::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.path.label, "relay (modelled TCP)");
    let l = &r.links[0];
    assert!(l.path_sides.is_none());
    assert_eq!(l.arms.len(), 6);
    for a in &l.arms {
        assert!(a.error.is_none(), "{:?}: {:?}", a.proto, a.error);
        let c = a.path.expect("the arm's relay counters");
        assert_eq!(c.path, PathKind::Relay);
        // HTTP/3 crosses the relay's UDP side, the others its TCP side.
        if a.proto == LabProtocol::H3 {
            assert!(c.down.packets > 0, "{c:?}");
        } else {
            assert!(c.down.tcp_chunks > 0, "{:?} {c:?}", a.proto);
        }
    }
}
