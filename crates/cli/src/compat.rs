//! h2load 1.69/1.70 options beyond the 1.52 set: `-f/--max-frame-size`, `--ciphers`,
//! `--tls13-ciphers`, `--groups` (rustls' names), h2lab's `--tls-resume`, and the options h2lab
//! accepts but cannot honour yet (`--tls-session-file`, `--ktls`), and the
//! HTTP/3 ones (`--h3`, `--no-udp-gso`, `--max-udp-payload-size`, `--qlog-file-base`, and
//! h2lab's `--no-qpack-dynamic-table`);
//! which fail with one line saying so instead of clap's "unexpected argument".

use std::path::PathBuf;

use clap::Args;
use h2lab_engine::tls_opts::{self, TlsOptions};
use h2lab_engine::BenchConfig;

use crate::values::parse_size;

/// The options of this module (flattened into `h2lab bench`).
#[derive(Debug, Clone, Default, Args)]
pub struct CompatArgs {
    /// SETTINGS_MAX_FRAME_SIZE to advertise: the largest frame the server may send
    /// (16384..16777215).
    #[arg(short = 'f', long = "max-frame-size", value_name = "SIZE", default_value = "16K",
          value_parser = parse_frame_size)]
    pub max_frame_size: u32,

    /// TLS 1.2 cipher suites to allow, in preference order, separated by ':' (rustls' names,
    /// e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, or their OpenSSL names, e.g.
    /// ECDHE-RSA-AES128-GCM-SHA256) [default: all rustls supports].
    #[arg(long = "ciphers", value_name = "SUITE")]
    pub ciphers: Option<String>,

    /// TLS 1.3 cipher suites to allow, in preference order (TLS13_AES_128_GCM_SHA256 or
    /// TLS_AES_128_GCM_SHA256, ...) [default: all rustls supports].
    #[arg(long = "tls13-ciphers", value_name = "SUITE")]
    pub tls13_ciphers: Option<String>,

    /// Key exchange groups to offer, in preference order (X25519, secp256r1/P-256,
    /// secp384r1/P-384) [default: all rustls supports].
    #[arg(long = "groups", value_name = "GROUPS")]
    pub groups: Option<String>,

    /// Resume TLS sessions within the run: connections made after a handshake completed
    /// (reconnects, -r, stages) resume a session of an earlier connection instead of a full
    /// handshake. h2lab's option; h2load does full handshakes unless --tls-session-file.
    #[arg(long = "tls-resume")]
    pub tls_resume: bool,

    /// 0-RTT: resume sessions within the run (as --tls-resume) and send each resumed
    /// connection's first requests as TLS 1.3 early data (HTTP/1.1 and HTTP/2 over TLS) or
    /// QUIC 0-RTT (HTTP/3); rejected early data and `425 Too Early` answers are sent again
    /// after the handshake. h2lab's option; changes what the server sees.
    #[arg(long = "0rtt")]
    pub zero_rtt: bool,

    /// Close each connection after N requests and open a new one (which resumes with
    /// --tls-resume or --0rtt), so that handshakes are part of the measurement. h2lab's
    /// option [default: connections live as long as the server lets them].
    #[arg(long = "reconnect-every", value_name = "N", value_parser = parse_reconnect_every)]
    pub reconnect_every: Option<u64>,

    /// Not supported yet: rustls cannot save or load TLS sessions (see --tls-resume).
    #[arg(long = "tls-session-file", value_name = "PATH")]
    pub tls_session_file: Option<PathBuf>,

    /// Not supported yet (kernel TLS).
    #[arg(long = "ktls")]
    pub ktls: bool,

    /// HTTP/3 over QUIC (the same as --alpn-list=h3; https:// URIs). Its QUIC rows'
    /// `packets recv` counts received datagrams (quinn-proto has no received-packet counter).
    #[arg(long = "h3")]
    pub h3: bool,

    /// HTTP/3: write a qlog (JSON-SEQ, quinn-proto's events) per connection to
    /// PATH.<thread>.<client>.sqlog (h2load's naming; a reconnection overwrites its client's
    /// file). Only effective with HTTP/3.
    // This doc comment is --help text: <thread> and <client> are not HTML.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long = "qlog-file-base", value_name = "PATH")]
    pub qlog_file_base: Option<PathBuf>,

    /// HTTP/3: do not batch UDP sends with GSO.
    #[arg(long = "no-udp-gso")]
    pub no_udp_gso: bool,

    /// HTTP/3: the UDP payload size to use (1200..=65527; path MTU discovery off)
    /// [default: 1200, then path MTU discovery].
    #[arg(long = "max-udp-payload-size", value_name = "SIZE", value_parser = parse_udp_payload)]
    pub max_udp_payload_size: Option<u16>,

    /// HTTP/3: no QPACK dynamic table either way (announce a table of 0 and 0 blocked
    /// streams; requests use the static table and literals). h2lab's option; by default, as
    /// h2load, the client announces --header-table-size and 100 blocked streams, and its
    /// requests use the table the server allows, up to --encoder-header-table-size.
    #[arg(long = "no-qpack-dynamic-table")]
    pub no_qpack_dynamic_table: bool,
}

fn parse_udp_payload(s: &str) -> Result<u16, String> {
    let n = parse_size(s)?;
    u16::try_from(n)
        .ok()
        .filter(|n| (1200..=65527).contains(n))
        .ok_or_else(|| "between 1200 and 65527".into())
}

fn parse_reconnect_every(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("a number of requests, 1 or more".into()),
    }
}

fn parse_frame_size(s: &str) -> Result<u32, String> {
    let n = parse_size(s)?;
    if n < 16_384 {
        return Err("minimum 16384".into());
    }
    u32::try_from(n)
        .ok()
        .filter(|n| *n <= 16_777_215)
        .ok_or_else(|| "maximum 16777215".into())
}

/// The first option given that h2lab does not support yet, with its one-line message.
fn unsupported(a: &CompatArgs) -> Option<String> {
    let not_yet = |opt: &str, why: &str| Some(format!("{opt}: not supported yet ({why})"));
    if a.tls_session_file.is_some() {
        return not_yet(
            "--tls-session-file",
            "rustls cannot save or load TLS sessions; --tls-resume resumes sessions within a run",
        );
    }
    if a.ktls {
        return not_yet("--ktls", "kernel TLS");
    }
    None
}

/// Applies the options to the engine configuration; one-line errors.
pub fn apply(a: &CompatArgs, cfg: &mut BenchConfig) -> Result<(), String> {
    if let Some(msg) = unsupported(a) {
        return Err(msg);
    }
    cfg.max_frame_size = a.max_frame_size;
    if a.h3 {
        if cfg.protocol == h2lab_engine::ProtocolChoice::H1 {
            return Err("--h3 and --h1 conflict".into());
        }
        cfg.alpn_list = vec!["h3".to_owned()];
    }
    cfg.no_udp_gso = a.no_udp_gso;
    cfg.max_udp_payload_size = a.max_udp_payload_size;
    cfg.qpack_dynamic_table = !a.no_qpack_dynamic_table;
    cfg.qlog_file_base = a.qlog_file_base.clone();
    cfg.tls = TlsOptions {
        ciphers: a
            .ciphers
            .as_deref()
            .map(|s| tls_opts::parse_ciphers(s, false))
            .transpose()
            .map_err(|e| e.to_string())?,
        tls13_ciphers: a
            .tls13_ciphers
            .as_deref()
            .map(|s| tls_opts::parse_ciphers(s, true))
            .transpose()
            .map_err(|e| e.to_string())?,
        groups: a
            .groups
            .as_deref()
            .map(tls_opts::parse_groups)
            .transpose()
            .map_err(|e| e.to_string())?,
        resume: a.tls_resume,
        zero_rtt: a.zero_rtt,
    };
    cfg.reconnect_every = a.reconnect_every;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::command::{Cli, Command};
    use clap::error::ErrorKind;
    use clap::Parser;

    fn build(argv: &[&str]) -> Result<h2lab_engine::BenchConfig, String> {
        let mut full = vec!["h2lab", "bench"];
        full.extend_from_slice(argv);
        let cli = Cli::try_parse_from(full).map_err(|e| e.to_string())?;
        let Command::Bench(args) = cli.command else {
            return Err("not bench".into());
        };
        crate::bench::build_config(&args)
    }

    /// `--0rtt` and `--reconnect-every`: off by default; `--0rtt` implies resumption; a
    /// connection must carry at least one request.
    #[test]
    fn zero_rtt_and_reconnect_every() {
        let cfg = build(&["https://127.0.0.1/"]).unwrap();
        assert!(!cfg.tls.zero_rtt && !cfg.tls.resumes());
        assert_eq!(cfg.reconnect_every, None);
        let cfg = build(&["--0rtt", "--reconnect-every", "3", "https://127.0.0.1/"]).unwrap();
        assert!(cfg.tls.zero_rtt && cfg.tls.resumes());
        assert_eq!(cfg.reconnect_every, Some(3));
        let e = build(&["--reconnect-every", "0", "https://127.0.0.1/"]).unwrap_err();
        assert!(e.contains("1 or more"), "{e}");
    }

    /// h2load 1.70's `--help` (tests/data, its source named there): the long options.
    fn h2load_long_options() -> Vec<(String, Option<String>)> {
        let help = include_str!("../tests/data/h2load-1.70-help.txt");
        let mut out = Vec::new();
        for line in help.lines().filter(|l| !l.starts_with('#')) {
            let rest = line.strip_prefix("  ").unwrap_or("");
            let rest = if rest.starts_with('-') && rest.get(2..4) == Some(", ") {
                &rest[4..]
            } else {
                rest
            };
            let Some(opt) = rest.strip_prefix("--") else {
                continue;
            };
            let end = opt
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(opt.len());
            let value = opt[end..]
                .strip_prefix('=')
                .map(|v| v.split_whitespace().next().unwrap_or("").to_string());
            out.push((opt[..end].to_string(), value));
        }
        out
    }

    #[test]
    fn every_h2load_170_long_option_is_known() {
        let opts = h2load_long_options();
        assert_eq!(opts.len(), 41, "{opts:?}");
        for (name, value) in opts {
            let mut argv = vec!["h2lab".to_string(), "bench".to_string()];
            match value.as_deref() {
                None => argv.push(format!("--{name}")),
                Some(v) => {
                    let sample = match v {
                        "<N>" => "2",
                        "<SIZE>" => "16K",
                        "<DURATION>" => "1",
                        "<PATH>" => "/dev/null",
                        "<HEADER>" => "x-a: b",
                        "<PROTOID>" => "h2c",
                        "<LIST>" => "h2",
                        "<HOST>[:<PORT>]" => "127.0.0.1:1",
                        "<SUITE>" if name == "tls13-ciphers" => "TLS_AES_128_GCM_SHA256",
                        "<SUITE>" => "ECDHE-RSA-AES128-GCM-SHA256",
                        "<GROUPS>" => "X25519:P-256",
                        "<DNSNAME>" => "localhost",
                        _ if v.starts_with("(<URI>") => "http://127.0.0.1:1",
                        other => panic!("no sample value for --{name}={other}"),
                    };
                    argv.push(format!("--{name}={sample}"));
                }
            }
            argv.push("http://127.0.0.1:1/".into());
            match Cli::try_parse_from(&argv) {
                Ok(_) => {}
                Err(e) => assert!(
                    matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion),
                    "--{name}: {e}"
                ),
            }
        }
    }

    #[test]
    fn unsupported_options_fail_with_one_line() {
        for (argv, opt) in [
            (&["--tls-session-file=/tmp/s.pem"][..], "--tls-session-file"),
            (&["--ktls"], "--ktls"),
        ] {
            let mut a = argv.to_vec();
            a.push("https://127.0.0.1/");
            let e = build(&a).unwrap_err();
            assert!(e.starts_with(&format!("{opt}: not supported yet (")), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn h3_options() {
        let c = build(&["https://h/"]).unwrap();
        assert!(!c.no_udp_gso);
        assert_eq!(c.max_udp_payload_size, None);
        let c = build(&[
            "--h3",
            "--no-udp-gso",
            "--max-udp-payload-size=1452",
            "https://h/",
        ])
        .unwrap();
        assert_eq!(c.effective_alpn(), ["h3"]);
        assert!(c.no_udp_gso);
        assert_eq!(c.max_udp_payload_size, Some(1452));
        let c = build(&["-p", "h3", "https://h/"]).unwrap();
        assert_eq!(c.effective_alpn(), ["h3"]);
        let c = build(&["--alpn-list=h3", "https://h/"]).unwrap();
        assert_eq!(c.effective_alpn(), ["h3"]);
        assert!(build(&["--max-udp-payload-size=1000", "https://h/"]).is_err());
        assert!(build(&["--h3", "--h1", "https://h/"]).is_err());
        // QPACK: h2load's dynamic table by default, none either way with the flag.
        let c = build(&["--h3", "https://h/"]).unwrap();
        assert!(c.qpack_dynamic_table);
        let q = h2lab_engine::h3::QpackSettings::of(&c);
        assert_eq!((q.max_table_capacity, q.blocked_streams), (4096, 100));
        assert_eq!(q.encoder_table_capacity, 4096);
        let c = build(&["--h3", "--no-qpack-dynamic-table", "https://h/"]).unwrap();
        assert!(!c.qpack_dynamic_table);
        assert_eq!(
            h2lab_engine::h3::QpackSettings::of(&c),
            h2lab_engine::h3::QpackSettings::STATIC
        );
        // --qlog-file-base is supported now (it was "not supported yet").
        let c = build(&["--h3", "--qlog-file-base=/tmp/q", "https://h/"]).unwrap();
        assert_eq!(
            c.qlog_file_base.as_deref(),
            Some(std::path::Path::new("/tmp/q"))
        );
    }

    #[test]
    fn frame_size_ciphers_groups() {
        let c = build(&["http://h/"]).unwrap();
        assert_eq!(c.max_frame_size, 16_384);
        assert_eq!(c.tls, Default::default());
        let c = build(&["-f", "64K", "http://h/"]).unwrap();
        assert_eq!(c.max_frame_size, 65_536);
        let c = build(&["--max-frame-size=16777215", "http://h/"]).unwrap();
        assert_eq!(c.max_frame_size, 16_777_215);
        for bad in ["16383", "16M", "x"] {
            assert!(build(&["-f", bad, "http://h/"]).is_err(), "{bad}");
        }
        let c = build(&[
            "--ciphers=ECDHE-RSA-AES256-GCM-SHA384",
            "--tls13-ciphers=TLS13_AES_256_GCM_SHA384",
            "--groups=P-384",
            "--tls-resume",
            "https://h/",
        ])
        .unwrap();
        assert_eq!(c.tls.ciphers.as_ref().map(Vec::len), Some(1));
        assert_eq!(c.tls.tls13_ciphers.as_ref().map(Vec::len), Some(1));
        assert_eq!(
            c.tls.groups,
            Some(vec![rustls_group("secp384r1")]),
            "{:?}",
            c.tls
        );
        assert!(c.tls.resume);
        let e = build(&["--groups=P-521", "https://h/"]).unwrap_err();
        assert!(e.starts_with("--groups: unsupported group") && !e.contains('\n'));
        let e = build(&["--ciphers=RC4-MD5", "https://h/"]).unwrap_err();
        assert!(e.starts_with("--ciphers: unsupported cipher suite") && !e.contains('\n'));
    }

    fn rustls_group(name: &str) -> h2lab_engine::tls_opts::Group {
        h2lab_engine::tls_opts::parse_groups(name).unwrap()[0]
    }
}
