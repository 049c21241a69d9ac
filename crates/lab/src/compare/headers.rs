//! Realistic large request headers: what an API gateway sees from a browser app behind SSO
//! with tracing — a JWT bearer token, session and analytics cookies, W3C trace context, B3
//! and baggage headers. The content is pseudo-random but fixed (the same every run), so
//! HPACK sees the same repeated fields a real client sends on every request.

/// Base64url alphabet (RFC 4648 §5), as used by JWTs.
const B64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn b64(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| B64URL[(self.next() % 64) as usize] as char)
            .collect()
    }

    fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b"0123456789abcdef"[(self.next() % 16) as usize]))
            .collect()
    }
}

/// Field names and values whose total size (names + values) is about `target` bytes (at
/// least about 1.2 KiB: the token and trace headers alone). Cookies fill the rest.
pub fn realistic(target: usize) -> Vec<(String, String)> {
    let mut r = Rng(0x6832_6c61_6268_6472);
    let jwt = format!(
        "Bearer eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6IjIwMjQtMDUifQ.{}.{}",
        r.b64(620),
        r.b64(342)
    );
    let trace = r.hex(32);
    let span = r.hex(16);
    let mut fields: Vec<(String, String)> = vec![
        ("authorization".into(), jwt),
        ("traceparent".into(), format!("00-{trace}-{span}-01")),
        (
            "tracestate".into(),
            format!("congo=t61rcWkgMzE,rojo={},dd=s:1;o:rum", r.hex(16)),
        ),
        ("x-b3-traceid".into(), trace.clone()),
        ("x-b3-spanid".into(), span),
        ("x-b3-sampled".into(), "1".into()),
        (
            "baggage".into(),
            format!(
                "userId=alice-{},serverNode=DF%2028,isProduction=false,tenant=acme-eu-west-1",
                r.hex(8)
            ),
        ),
        (
            "x-request-id".into(),
            format!(
                "{}-{}-4{}-a{}-{}",
                r.hex(8),
                r.hex(4),
                r.hex(3),
                r.hex(3),
                r.hex(12)
            ),
        ),
        (
            "x-forwarded-for".into(),
            "203.0.113.195, 70.41.3.18, 150.172.238.178".into(),
        ),
        ("x-forwarded-proto".into(), "https".into()),
        (
            "accept-language".into(),
            "en-US,en;q=0.9,de;q=0.8,fr;q=0.7".into(),
        ),
    ];
    let used: usize = fields.iter().map(|(n, v)| n.len() + v.len()).sum();
    // Cookies: session, CSRF, analytics, preferences — as many as fit.
    let mut cookies: Vec<String> = Vec::new();
    let names = [
        "session",
        "csrftoken",
        "_ga",
        "_gid",
        "_fbp",
        "prefs",
        "ab_test",
        "consent",
        "cart",
        "locale",
        "_hjid",
        "ajs_anonymous_id",
        "intercom-id",
        "optimizely",
        "_uetsid",
        "last_seen",
    ];
    let budget = target.saturating_sub(used + "cookie".len());
    let mut size = 0usize;
    let mut i = 0usize;
    while size + 40 < budget {
        let name = names[i % names.len()];
        let name = if i < names.len() {
            name.to_owned()
        } else {
            format!("{name}{}", i / names.len())
        };
        let want = (budget - size).saturating_sub(name.len() + 3).min(300);
        let value = r.b64(want.max(8));
        size += name.len() + 1 + value.len() + 2;
        cookies.push(format!("{name}={value}"));
        i += 1;
    }
    if !cookies.is_empty() {
        fields.push(("cookie".into(), cookies.join("; ")));
    }
    fields
}

/// Total size of `fields` (names + values), as HTTP/2 header list accounting counts them
/// without the 32-byte per-field overhead.
pub fn size(fields: &[(String, String)]) -> usize {
    fields.iter().map(|(n, v)| n.len() + v.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_the_requested_size_and_stable() {
        for k in [2usize, 4, 8] {
            let f = realistic(k * 1024);
            let s = size(&f);
            assert!(
                s <= k * 1024 && s + 64 >= k * 1024,
                "{k} KiB asked, {s} bytes made"
            );
            assert_eq!(f, realistic(k * 1024));
            assert!(f
                .iter()
                .any(|(n, v)| n == "authorization" && v.starts_with("Bearer ey")));
            assert!(f.iter().all(|(n, v)| n
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'-' || b.is_ascii_digit())
                && v.bytes().all(|b| (0x20..0x7f).contains(&b))));
        }
    }
}
