//! The options of a run as recorded in its result: the `options` object of the `--json`
//! document (and `shard.plan`), the CSV columns, and what `h2lab merge` reads back.
//!
//! [`RunOptions`] is the one model of them: it is derived from the engine's
//! [`BenchConfig`] (the parsed command line) once, serialised by serde directly (durations as
//! seconds, `-H` headers as `{name, value}` objects, `-r`/`--rate-period` as `rate` and
//! `rate_period_seconds`), and read back the same way.

use std::fmt::Write as _;
use std::time::Duration;

use h2lab_engine::{BaseUri, BenchConfig, ProtocolChoice, Scheme};
use serde::{Deserialize, Serialize};

/// The options a run used, as recorded in the JSON result (`options` object) and by the CLI.
///
/// Durations are kept as [`Duration`]; absent options are `None`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunOptions {
    /// URIs as given (before parsing), used round-robin.
    pub uris: Vec<String>,
    /// `-n`.
    pub requests: u64,
    /// `-c`.
    pub clients: u32,
    /// `-m`.
    pub max_concurrent_streams: u32,
    /// `-t`.
    pub threads: u32,
    /// `-D`.
    #[serde(default, rename = "duration_seconds", with = "seconds")]
    pub duration: Option<Duration>,
    /// `--warm-up-time`.
    #[serde(default, rename = "warm_up_seconds", with = "seconds")]
    pub warm_up: Option<Duration>,
    /// `-H` headers, lower-cased names.
    #[serde(with = "headers")]
    pub headers: Vec<(String, String)>,
    /// `-d` body length in bytes (the body itself is not recorded).
    pub body_bytes: Option<u64>,
    /// Protocol choice: `h2c` / `http/1.1` for cleartext, or the ALPN list for TLS.
    pub protocol: String,
    /// ALPN identifiers offered for TLS.
    pub alpn_list: Vec<String>,
    /// `-B`.
    pub base_uri: Option<String>,
    /// `--connect-to` as `host:port`.
    pub connect_to: Option<String>,
    /// `--sni`.
    pub sni: Option<String>,
    /// `-w`.
    pub window_bits: u8,
    /// `-W`.
    pub connection_window_bits: u8,
    /// `--header-table-size`.
    pub header_table_size: u32,
    /// `--encoder-header-table-size`.
    pub encoder_header_table_size: u32,
    /// `-T`.
    #[serde(
        default,
        rename = "connection_active_timeout_seconds",
        with = "seconds"
    )]
    pub connection_active_timeout: Option<Duration>,
    /// `-N`.
    #[serde(
        default,
        rename = "connection_inactivity_timeout_seconds",
        with = "seconds"
    )]
    pub connection_inactivity_timeout: Option<Duration>,
    /// `--require-protocol`.
    pub require_protocol: Option<String>,
    /// Longest hold of request coalescing; `None` unless `--coalesce` was given.
    #[serde(default, rename = "coalesce_hold_seconds", with = "seconds")]
    pub coalesce_hold: Option<Duration>,
    /// Longest read wait; `None` with `--read-wait 0`.
    #[serde(default, rename = "read_wait_seconds", with = "seconds")]
    pub read_wait: Option<Duration>,
    /// `--push accept`: HTTP/2 server push was accepted (SETTINGS_ENABLE_PUSH = 1). `false`
    /// (refused, h2load's behaviour) in results written before it was recorded.
    #[serde(default)]
    pub accept_push: bool,
    /// Load-shape options, when any was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadOptions>,
    /// HTTP/3 runs: the QPACK settings in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qpack: Option<QpackOptions>,
}

/// The QPACK settings of an HTTP/3 run (`h2lab_engine::h3::QpackSettings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct QpackOptions {
    /// `false` with `--no-qpack-dynamic-table` (no table either way).
    pub dynamic_table: bool,
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY announced (`--header-table-size`).
    pub max_table_capacity: u32,
    /// SETTINGS_QPACK_BLOCKED_STREAMS announced (100, h2load's).
    pub blocked_streams: u32,
    /// Largest table the request encoder uses within the server's
    /// (`--encoder-header-table-size`; 0: static table and literals).
    pub encoder_max_table_capacity: u32,
}

/// The load-shape options of a run (see `h2lab_engine::LoadShape`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadOptions {
    /// `--arrival-rate`.
    pub arrival_rate: Option<f64>,
    /// `--stages`: (duration, level).
    #[serde(with = "stages")]
    pub stages: Vec<(Duration, f64)>,
    /// `--queue-limit`.
    pub queue_limit: Option<u64>,
    /// `--rps`.
    pub rps: Option<f64>,
    /// `-r` and `--rate-period`.
    #[serde(flatten, with = "connection_rate")]
    pub connection_rate: Option<(u32, Duration)>,
    /// `--timing-script-file`: number of lines.
    pub timing_script_lines: Option<u64>,
    /// Time-series interval.
    #[serde(default, rename = "interval_seconds", with = "seconds")]
    pub interval: Option<Duration>,
}

impl From<&BenchConfig> for RunOptions {
    fn from(c: &BenchConfig) -> Self {
        let uris = c
            .uris
            .iter()
            .map(|t| format!("{}://{}{}", t.scheme, t.authority(), t.path))
            .collect();
        let alpn = c.effective_alpn();
        let h3 = c.scheme() == Scheme::Https && alpn.iter().any(|p| p == "h3");
        let protocol = match c.scheme() {
            Scheme::Http => c.cleartext_protocol().as_str().to_string(),
            Scheme::Https => match &c.protocol {
                ProtocolChoice::H1 => "http/1.1".to_string(),
                _ => alpn.first().cloned().unwrap_or_default(),
            },
        };
        let base_uri = c.base_uri.as_ref().map(|b| match b {
            BaseUri::Unix(p) => format!("unix:{}", p.display()),
            BaseUri::Tcp { scheme, host, port } => {
                let mut s = String::new();
                if let Some(sc) = scheme {
                    let _ = write!(s, "{sc}://");
                }
                if host.contains(':') {
                    let _ = write!(s, "[{host}]:{port}");
                } else {
                    let _ = write!(s, "{host}:{port}");
                }
                s
            }
        });
        RunOptions {
            uris,
            requests: c.requests,
            clients: c.clients,
            max_concurrent_streams: c.max_concurrent_streams,
            threads: c.threads,
            duration: c.duration,
            warm_up: c.warm_up,
            headers: c.headers.clone(),
            body_bytes: c.body.as_ref().map(|b| b.len() as u64),
            protocol,
            alpn_list: if c.scheme() == Scheme::Https {
                alpn
            } else {
                Vec::new()
            },
            base_uri,
            connect_to: c.connect_to.as_ref().map(|(h, p)| {
                if *p == 0 {
                    h.clone()
                } else {
                    format!("{h}:{p}")
                }
            }),
            sni: c.sni.clone(),
            window_bits: c.window_bits,
            connection_window_bits: c.connection_window_bits,
            header_table_size: c.header_table_size,
            encoder_header_table_size: c.encoder_header_table_size,
            connection_active_timeout: c.connection_active_timeout,
            connection_inactivity_timeout: c.connection_inactivity_timeout,
            coalesce_hold: c.coalesce,
            read_wait: c.read_wait,
            accept_push: c.accept_push,
            require_protocol: c.require_protocol.map(|p| p.as_str().to_string()),
            qpack: h3.then(|| {
                let q = h2lab_engine::h3::QpackSettings::of(c);
                QpackOptions {
                    dynamic_table: c.qpack_dynamic_table,
                    max_table_capacity: q.max_table_capacity,
                    blocked_streams: q.blocked_streams,
                    encoder_max_table_capacity: q.encoder_table_capacity,
                }
            }),
            load: (c.load != h2lab_engine::LoadShape::default()).then(|| LoadOptions {
                arrival_rate: c.load.arrival_rate,
                stages: c
                    .load
                    .stages
                    .iter()
                    .map(|s| (s.duration, s.target))
                    .collect(),
                queue_limit: c.load.queue_limit,
                rps: c.load.rps,
                connection_rate: c.load.connection_rate,
                timing_script_lines: c.load.timing_script.as_ref().map(|s| s.len() as u64),
                interval: c.load.interval,
            }),
        }
    }
}

/// `Option<Duration>` as `Option<f64>` seconds; a negative or non-finite value reads as absent.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        d.map(|d| d.as_secs_f64()).serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.and_then(|s| Duration::try_from_secs_f64(s).ok()))
    }
}

/// `-H` headers as `[{"name": .., "value": ..}]`.
mod headers {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Header {
        name: String,
        value: String,
    }

    #[derive(Serialize)]
    struct HeaderRef<'a> {
        name: &'a str,
        value: &'a str,
    }

    pub(super) fn serialize<S: Serializer>(
        h: &[(String, String)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(h.iter().map(|(name, value)| HeaderRef { name, value }))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(String, String)>, D::Error> {
        Ok(Vec::<Header>::deserialize(d)?
            .into_iter()
            .map(|h| (h.name, h.value))
            .collect())
    }
}

/// `--stages` as `[{"seconds": .., "target": ..}]`.
mod stages {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Stage {
        seconds: f64,
        target: f64,
    }

    pub(super) fn serialize<S: Serializer>(
        st: &[(Duration, f64)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(st.iter().map(|(d, target)| Stage {
            seconds: d.as_secs_f64(),
            target: *target,
        }))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(Duration, f64)>, D::Error> {
        Ok(Vec::<Stage>::deserialize(d)?
            .into_iter()
            .map(|s| {
                let d = Duration::try_from_secs_f64(s.seconds).unwrap_or(Duration::ZERO);
                (d, s.target)
            })
            .collect())
    }
}

/// `-r` and `--rate-period` as the two fields `rate` and `rate_period_seconds` (both null
/// without `-r`; a missing period reads as 1 s).
mod connection_rate {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Rate {
        #[serde(default)]
        rate: Option<u32>,
        #[serde(default)]
        rate_period_seconds: Option<f64>,
    }

    pub(super) fn serialize<S: Serializer>(
        r: &Option<(u32, Duration)>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        Rate {
            rate: r.map(|(r, _)| r),
            rate_period_seconds: r.map(|(_, p)| p.as_secs_f64()),
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<(u32, Duration)>, D::Error> {
        let r = Rate::deserialize(d)?;
        Ok(r.rate.map(|rate| {
            let period = r
                .rate_period_seconds
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .unwrap_or(Duration::from_secs(1));
            (rate, period)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h2lab_engine::AppProtocol;

    #[test]
    fn options_from_config() {
        let mut c = BenchConfig::from_uris(
            &["https://[::1]:8443/a?b", "/c"],
            Some("https://[::1]:8443"),
        )
        .unwrap();
        c.requests = 100;
        c.clients = 4;
        c.connect_to = Some(("127.0.0.1".into(), 0));
        c.body = Some(std::sync::Arc::from(&b"hello"[..]));
        c.require_protocol = Some(AppProtocol::H2);
        let o = RunOptions::from(&c);
        assert_eq!(
            o.uris,
            vec!["https://[::1]:8443/a?b", "https://[::1]:8443/c"]
        );
        assert_eq!(o.base_uri.as_deref(), Some("https://[::1]:8443"));
        assert_eq!(o.protocol, "h2");
        assert_eq!(o.alpn_list, vec!["h2", "http/1.1"]);
        assert_eq!(o.connect_to.as_deref(), Some("127.0.0.1"));
        assert_eq!(o.body_bytes, Some(5));
        assert_eq!(o.require_protocol.as_deref(), Some("h2"));
        assert_eq!((o.requests, o.clients), (100, 4));

        let mut c = BenchConfig::from_uris(&["http://h/"], None).unwrap();
        c.protocol = ProtocolChoice::H1;
        c.base_uri = Some(BaseUri::Unix("/tmp/s".into()));
        let o = RunOptions::from(&c);
        assert_eq!(o.protocol, "http/1.1");
        assert!(o.alpn_list.is_empty());
        assert_eq!(o.base_uri.as_deref(), Some("unix:/tmp/s"));
    }

    /// `--push accept` changes what the server sends: it is recorded, and read back.
    #[test]
    fn accepted_push_is_recorded() {
        let mut c = BenchConfig::from_uris(&["http://127.0.0.1/"], None).unwrap();
        let refused = serde_json::to_value(RunOptions::from(&c)).unwrap();
        assert_eq!(refused["accept_push"], false);
        c.accept_push = true;
        let o = RunOptions::from(&c);
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(v["accept_push"], true);
        let back: RunOptions = serde_json::from_value(v).unwrap();
        assert_eq!(back, o);
    }

    /// Reading is as lenient as it was with the hand-written conversion: optional durations may
    /// be missing, a negative one reads as absent, `-r` without a period reads as 1 s.
    #[test]
    fn reads_lenient_documents() {
        let o: RunOptions = serde_json::from_value(serde_json::json!({
            "uris": [], "requests": 1, "clients": 1, "max_concurrent_streams": 1, "threads": 1,
            "headers": [{"name": "a", "value": "b"}], "body_bytes": null, "protocol": "h2c",
            "alpn_list": [], "base_uri": null, "connect_to": null, "sni": null,
            "window_bits": 30, "connection_window_bits": 30, "header_table_size": 4096,
            "encoder_header_table_size": 4096, "require_protocol": null,
            "duration_seconds": -1.0,
            "load": {"arrival_rate": null, "stages": [{"seconds": -2.0, "target": 3.0}],
                     "queue_limit": null, "rps": null, "rate": 4,
                     "timing_script_lines": null, "interval_seconds": 0.5}
        }))
        .unwrap();
        assert_eq!(o.duration, None);
        assert_eq!(o.warm_up, None);
        assert_eq!(o.read_wait, None);
        assert!(!o.accept_push, "push refused unless recorded");
        assert_eq!(o.headers, vec![("a".to_string(), "b".to_string())]);
        let l = o.load.unwrap();
        assert_eq!(l.stages, vec![(Duration::ZERO, 3.0)]);
        assert_eq!(l.connection_rate, Some((4, Duration::from_secs(1))));
        assert_eq!(l.interval, Some(Duration::from_millis(500)));
    }
}
