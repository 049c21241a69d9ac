//! The lab's errors are typed: each failure is a [`LabError`] kind the caller can match, and
//! its text is the message the CLI prints.

use h2lab_engine::config::Scheme;
use h2lab_engine::StopFlag;
use h2lab_lab::compare::{self, CompareConfig, Preset};
use h2lab_lab::env::{LabEnv, Targets};
use h2lab_lab::error::LabError;
use h2lab_lab::link::LinkProfile;
use h2lab_lab::proto::LabProtocol;

#[test]
fn a_url_of_the_wrong_scheme_for_its_protocol() {
    let mut t = Targets::default();
    let e = t.set(LabProtocol::H2, "http://127.0.0.1:1/").unwrap_err();
    assert!(
        matches!(
            e,
            LabError::SchemeMismatch {
                proto: LabProtocol::H2,
                want: Scheme::Https,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "HTTP/2 (TLS) needs an https:// URL, got http://127.0.0.1:1/"
    );
    assert!(t.set(LabProtocol::H2c, "http://127.0.0.1:1/").is_ok());
}

#[test]
fn a_url_the_engine_rejects() {
    let e = Targets::from_url("ftp://127.0.0.1/").unwrap_err();
    assert!(matches!(e, LabError::Config(_)), "{e:?}");
    let mut t = Targets::default();
    let e = t.set(LabProtocol::H1, "not a url").unwrap_err();
    assert!(matches!(e, LabError::Config(_)), "{e:?}");
}

#[test]
fn no_target_for_a_protocol() {
    let mut env = LabEnv::external(Targets::from_url("http://127.0.0.1:1/").unwrap());
    let e = env
        .origin(LabProtocol::H2, LinkProfile::Loopback)
        .unwrap_err();
    assert!(matches!(e, LabError::NoTarget(LabProtocol::H2)), "{e:?}");
    assert!(env.origin(LabProtocol::H2c, LinkProfile::Loopback).is_ok());
}

#[test]
fn compare_with_nothing_to_measure() {
    let mut cfg = CompareConfig::preset(Preset::Tiny);
    // Only TLS protocols against a cleartext target: nothing can be measured, and the run
    // says so before it starts anything.
    cfg.targets = Some(Targets::from_url("http://127.0.0.1:1/").unwrap());
    cfg.axes.protocols = vec![LabProtocol::H2, LabProtocol::H1Tls];
    let e = compare::run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap_err();
    assert!(matches!(e, LabError::NothingToMeasure(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "none of the requested protocols can be measured against the target"
    );
}
