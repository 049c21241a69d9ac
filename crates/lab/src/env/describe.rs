//! One-line descriptions of link profiles.

use std::net::SocketAddr;

use crate::link::{LinkConfig, LinkProfile};

/// One line describing a link profile and the model of TCP its relay applies (`wan: rtt
/// 40ms, down 50mbit, up 50mbit; TCP model cubic (beta 0.7, IW 10 segments)`).
pub fn describe_profile(p: LinkProfile) -> String {
    let shape = describe_profile_shape(p);
    match crate::link::LinkRecord::of(p).model_text() {
        Some(model) => format!("{shape}; {model}"),
        None => shape,
    }
}

/// One line describing a link profile's shape (`wan: rtt 40ms, down 50mbit, up 50mbit`).
pub fn describe_profile_shape(p: LinkProfile) -> String {
    if p == LinkProfile::Loopback {
        return "loopback: direct connection, no added delay".into();
    }
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    format!("{p}: {}", LinkConfig::profile(p, any, any).describe())
}
