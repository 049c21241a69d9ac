//! Requests prepared once per run (per worker copy): HTTP/1.1 request bytes
//! and HTTP/2 header lists per URI, built with h2load's header rules.

use std::sync::Arc;

use h2lab_wire::h1::encode_request;

use crate::config::{BenchConfig, ConfigError};

/// The `user-agent` sent by default.
pub const USER_AGENT: &str = concat!("h2lab/", env!("CARGO_PKG_VERSION"));

/// One header field (name, value) as bytes.
pub(crate) type Field = (Box<[u8]>, Box<[u8]>);

/// Everything needed to emit any request without allocating.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// Complete HTTP/1.1 request per URI (head + body).
    pub h1: Vec<Box<[u8]>>,
    /// HTTP/2 header fields per URI: pseudo-headers first, names lower-case,
    /// connection-specific fields removed (RFC 9113 §8.2.2).
    pub h2: Vec<Vec<Field>>,
    /// Request body (`-d`), sent after the headers.
    pub body: Option<Arc<[u8]>>,
    /// The method is HEAD (responses carry no body).
    pub head_method: bool,
}

impl Prepared {
    /// Builds the requests the way h2load does: default `:scheme`,
    /// `:authority`, `:method` (GET, or POST with `-d`) and `user-agent`,
    /// overridden by `-H` entries with the same name (`host` overrides
    /// `:authority`), other `-H` entries appended, `content-length` with `-d`.
    pub(crate) fn new(cfg: &BenchConfig) -> Result<Prepared, ConfigError> {
        let mut shared: Vec<(String, String)> = vec![
            (":scheme".into(), cfg.scheme().as_str().into()),
            (":authority".into(), cfg.default_authority()),
            (
                ":method".into(),
                if cfg.body.is_some() { "POST" } else { "GET" }.into(),
            ),
            ("user-agent".into(), USER_AGENT.into()),
        ];
        for (name, value) in &cfg.headers {
            let lname = name.to_ascii_lowercase();
            let target = match lname.as_str() {
                ":authority" | ":host" | "host" => Some(":authority"),
                ":method" | ":scheme" | "user-agent" => Some(lname.as_str()),
                _ => None,
            };
            match target {
                Some(t) => {
                    for (n, v) in shared.iter_mut() {
                        if n == t {
                            v.clone_from(value);
                        }
                    }
                }
                None => shared.push((name.clone(), value.clone())),
            }
        }
        let content_length = cfg.body.as_ref().map(|b| b.len().to_string());
        // content-length is computed from -d; a user value would contradict it.
        shared.retain(|(n, _)| !n.eq_ignore_ascii_case("content-length"));
        let method = shared
            .iter()
            .find(|(n, _)| n == ":method")
            .map_or("GET", |(_, v)| v.as_str())
            .to_owned();
        let mut h1 = Vec::with_capacity(cfg.uris.len());
        let mut h2 = Vec::with_capacity(cfg.uris.len());
        for t in &cfg.uris {
            let authority = shared
                .iter()
                .find(|(n, _)| n == ":authority")
                .map_or("", |(_, v)| v.as_str());
            let fields: Vec<(&str, &str)> = shared
                .iter()
                .filter(|(n, _)| !n.starts_with(':'))
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            let r = encode_request(
                &method,
                &t.path,
                authority,
                &fields,
                cfg.body.as_deref(),
                true,
            )
            .map_err(|e| {
                ConfigError::InvalidHeader(format!("cannot build the HTTP/1.1 request: {e}"))
            })?
            .into_vec();
            h1.push(r.into_boxed_slice());

            let mut f: Vec<Field> = Vec::with_capacity(shared.len() + 2);
            f.push((b":path".as_slice().into(), t.path.as_bytes().into()));
            for (n, v) in &shared {
                let n = n.to_ascii_lowercase();
                // RFC 9113 §8.2.2: "An endpoint MUST NOT generate an HTTP/2 message
                // containing connection-specific header fields."
                if matches!(
                    n.as_str(),
                    "connection"
                        | "keep-alive"
                        | "proxy-connection"
                        | "transfer-encoding"
                        | "upgrade"
                ) || (n == "te" && !v.eq_ignore_ascii_case("trailers"))
                {
                    continue;
                }
                f.push((n.into_bytes().into(), v.as_bytes().into()));
            }
            if let Some(cl) = &content_length {
                f.push((b"content-length".as_slice().into(), cl.as_bytes().into()));
            }
            // Pseudo-header fields first (RFC 9113 §8.3): a custom ":x" header from
            // -H would otherwise land after regular fields.
            f.sort_by_key(|(n, _)| n.first() != Some(&b':'));
            h2.push(f);
        }
        Ok(Prepared {
            h1,
            h2,
            body: cfg.body.clone(),
            head_method: method.eq_ignore_ascii_case("HEAD"),
        })
    }

    /// Number of URIs.
    pub(crate) fn len(&self) -> usize {
        self.h1.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h1_and_h2_requests_like_h2load() {
        let mut cfg =
            BenchConfig::from_uris(&["http://example.com:8080/a?b", "http://x/c"], None).unwrap();
        cfg.headers.push(("Host".into(), "override".into()));
        cfg.headers.push(("X-Test".into(), "1".into()));
        cfg.headers.push(("Connection".into(), "keep-alive".into()));
        let p = Prepared::new(&cfg).unwrap();
        assert_eq!(p.len(), 2);
        let r = std::str::from_utf8(&p.h1[0]).unwrap();
        assert_eq!(
            r,
            format!(
                "GET /a?b HTTP/1.1\r\nHost: override\r\nuser-agent: {USER_AGENT}\r\nX-Test: 1\r\nConnection: keep-alive\r\n\r\n"
            )
        );
        let names: Vec<&[u8]> = p.h2[1].iter().map(|(n, _)| &n[..]).collect();
        assert_eq!(
            names,
            vec![
                &b":path"[..],
                b":scheme",
                b":authority",
                b":method",
                b"user-agent",
                b"x-test"
            ]
        );
        assert_eq!(&p.h2[1][0].1[..], b"/c");
        assert_eq!(&p.h2[1][2].1[..], b"override");
    }

    #[test]
    fn post_body() {
        let mut cfg = BenchConfig::from_uris(&["https://h/"], None).unwrap();
        cfg.body = Some(Arc::from(&b"hello"[..]));
        let p = Prepared::new(&cfg).unwrap();
        assert!(std::str::from_utf8(&p.h1[0])
            .unwrap()
            .starts_with("POST / HTTP/1.1\r\nHost: h\r\n"));
        assert!(p.h1[0].ends_with(b"Content-Length: 5\r\n\r\nhello"));
        assert!(p.h2[0]
            .iter()
            .any(|(n, v)| &n[..] == b"content-length" && &v[..] == b"5"));
        assert!(p.h2[0]
            .iter()
            .any(|(n, v)| &n[..] == b":scheme" && &v[..] == b"https"));
    }
}
