//! The HTML reports render with their charts in a real browser (headless Chromium): the
//! DOM after layout has the SVG charts with sized data marks, and a screenshot is not blank
//! and shows the protocol colours. Skips without Chromium, except on CI (CI=true), where a
//! missing Chromium fails.

use std::path::Path;
use std::time::Duration;

use h2lab_engine::StopFlag;
use h2lab_lab::compare::axes::HeaderSet;
use h2lab_lab::compare::{CompareConfig, Preset};
use h2lab_lab::html;
use h2lab_lab::link::LinkProfile;
use h2lab_lab::page::users::{parse_stages, LoadTestConfig};
use h2lab_lab::page::{PageConfig, SlowConfig};
use h2lab_lab::proto::LabProtocol;
use h2lab_testkit::render_check as check;

fn chromium_available() -> bool {
    if check::find_chromium().is_some() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true but chromium is not installed (.ci/install-anchors.sh installs it)");
    }
    h2lab_testkit::note_skip("chromium");
    false
}

fn write(dir: &Path, html: &str) -> std::path::PathBuf {
    let p = dir.join("index.html");
    std::fs::write(&p, html).unwrap();
    p
}

#[test]
fn compare_report_shows_its_charts_in_chromium() {
    let mut cfg = CompareConfig::preset(Preset::Tiny);
    cfg.axes.protocols = vec![LabProtocol::H1, LabProtocol::H2, LabProtocol::H2c];
    cfg.axes.headers = vec![HeaderSet::None, HeaderSet::Large(4)];
    cfg.axes.concurrency = vec![10, 20];
    cfg.timing.runs = 2;
    cfg.timing.duration = Duration::from_millis(150);
    let r =
        h2lab_lab::compare::run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    let html = html::compare::render(&r);
    assert!(!html.contains("<script"), "the report has no scripts");
    assert!(!html.contains("src=\"http"), "the report loads nothing");
    let n_charts = html.matches("<svg xmlns").count();
    assert!(n_charts >= 8, "{n_charts} charts");
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let index = write(dir.path(), &html);
    let colors = [
        LabProtocol::H1.color(),
        LabProtocol::H2.color(),
        LabProtocol::H2c.color(),
    ];
    let c = check::check(&index, &colors, 2400).unwrap();
    eprintln!("{c:?}");
    assert_eq!(c.charts, n_charts, "{c:?}");
    assert_eq!(c.sized_charts, c.charts, "every chart is laid out: {c:?}");
    assert!(c.marks >= 30, "{c:?}");
    assert!(c.sized_marks * 10 >= c.marks * 9, "{c:?}");
    assert_eq!((c.width, c.height), (1280, 2400));
    let total = u64::from(c.width) * u64::from(c.height);
    assert!(c.non_background_pixels * 20 > total, "mostly blank: {c:?}");
    for (color, n) in colors.iter().zip(&c.color_pixels) {
        assert!(*n > 300, "{color} barely visible: {c:?}");
    }
}

#[test]
fn page_report_shows_its_charts_in_chromium() {
    let cfg = PageConfig {
        page_query: "n=45&min=1k&max=4k&seed=2".into(),
        link: LinkProfile::Lan,
        repeat: 2,
        load_test: Some(LoadTestConfig {
            stages: parse_stages("1s:2,500ms:2,500ms:0").unwrap(),
            think: Duration::from_millis(50),
            sample: Duration::from_millis(250),
            rounds: 1,
        }),
        ..PageConfig::default()
    };
    let mut r = h2lab_lab::page::run(&cfg, &mut |_| {}).unwrap();
    let slow = h2lab_lab::page::run(
        &PageConfig {
            link: LinkProfile::Loopback,
            repeat: 1,
            slow: Some(SlowConfig {
                requests: 14,
                delay: Duration::from_millis(100),
            }),
            ..PageConfig::default()
        },
        &mut |_| {},
    )
    .unwrap();
    r.slow = slow.slow;
    let html = html::page::render(&r);
    assert!(!html.contains("<script"));
    let n_charts = html.matches("<svg xmlns").count();
    // time, connections, header bytes, 2 waterfalls, slow bars, 2 slow waterfalls, 4 lines.
    assert_eq!(n_charts, 12, "{n_charts} charts");
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let index = write(dir.path(), &html);
    let colors = [LabProtocol::H1Tls.color(), LabProtocol::H2.color()];
    let c = check::check(&index, &colors, 3000).unwrap();
    eprintln!("{c:?}");
    assert_eq!(c.charts, n_charts, "{c:?}");
    assert_eq!(c.sized_charts, c.charts, "{c:?}");
    // Two waterfalls of 46 requests each, plus bars, lines and connection set-up marks.
    assert!(c.marks >= 2 * 46 + 10, "{c:?}");
    assert!(c.sized_marks * 10 >= c.marks * 9, "{c:?}");
    for (color, n) in colors.iter().zip(&c.color_pixels) {
        assert!(*n > 300, "{color} barely visible: {c:?}");
    }
}
