//! `page --render` end to end on loopback links (a smoke test: every arm loads the page and
//! reports its times; the effect of priorities is measured, not asserted, here — the
//! server's `h2_priority` test checks it deterministically).

use std::time::Duration;

use h2lab_lab::link::LinkProfile;
use h2lab_lab::page::render::{self, Arm, RenderConfig, RenderLink};
use h2lab_lab::stats::ci::Outcome;

#[test]
fn every_arm_loads_the_page_with_css_and_js() {
    let cfg = RenderConfig {
        pages: vec![(
            "small".into(),
            "n=20&seed=3&css=2&css_size=8k&js=2&js_size=8k".into(),
        )],
        links: vec![RenderLink {
            name: "loopback".into(),
            profile: LinkProfile::Loopback,
            loss: 0.0,
        }],
        repeat: 1,
        timeout: Duration::from_secs(30),
        equivalence: h2lab_lab::stats::ci::DEFAULT_EQUIVALENCE,
        ..RenderConfig::default()
    };
    let r = render::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.links.len(), 1);
    let l = &r.links[0];
    assert_eq!((l.resources, l.render_blocking), (24, 4));
    let arms: Vec<Arm> = l.arms.iter().map(|a| a.arm).collect();
    assert_eq!(&arms[..4], &Arm::ALL);
    let mut anchors = Vec::new();
    if h2lab_lab::page::anchor::nghttpd_path().is_some() {
        anchors.extend([Arm::Nghttpd, Arm::NghttpdPush]);
    }
    if h2lab_lab::page::anchor::h2o_path().is_some() {
        anchors.push(Arm::H2o);
    }
    assert_eq!(&arms[4..], &anchors[..]);
    for a in &l.arms {
        assert!(a.error.is_none(), "{:?}: {:?}", a.arm, a.error);
        assert_eq!(a.loads.len(), 1);
        let (render_ms, page_ms) = a.loads[0];
        assert!(render_ms > 0.0 && render_ms <= page_ms, "{:?}", a.loads);
    }
    // The pushing arm pushed the 4 CSS/JS (4..12 KiB each), all used; no other h2lab arm
    // pushes (nghttpd's push arm, when installed, pushes the same files).
    for a in &l.arms {
        match a.arm {
            Arm::H2Push | Arm::NghttpdPush => {
                assert!(a.pushed_bytes >= 4 * 4096, "{a:?}");
                assert_eq!(a.pushed_wasted_bytes, 0, "{a:?}");
            }
            _ => assert_eq!((a.pushed_bytes, a.pushed_wasted_bytes), (0, 0)),
        }
    }
    // One load per arm: too few for a verdict.
    assert!(l.verdicts.iter().all(|v| v.outcome == Outcome::Undecided));
    let text = render::render_text(&r);
    // Four outcomes in compare's words: one round is undecided, with the rounds missing.
    assert!(
        text.contains("slight:") && text.contains("undecided:"),
        "{text}"
    );
    let verdicts: Vec<&str> = text.lines().filter(|l| l.ends_with(", 1 round")).collect();
    assert!(!verdicts.is_empty(), "{text}");
    assert!(
        verdicts
            .iter()
            .all(|l| l.contains(" undecided ") && l.contains("≈5 more")),
        "{text}"
    );
    // The introduction (wrapped) and the verdicts fit 120 columns.
    let intro = text.lines().take_while(|l| !l.starts_with("path:"));
    for l in intro.chain(verdicts.iter().copied()) {
        assert!(l.chars().count() <= 120, "{l}");
    }
    assert!(
        text.contains("h2 prio on")
            && text.contains("h2 push")
            && (h2lab_lab::page::anchor::h2o_path().is_none() || text.contains("h2 h2o"))
            && text.contains("24 sub-resources, 4 CSS/JS"),
        "{text}"
    );
    assert!(render::json(&r).contains("\"render_ms\""));
}
