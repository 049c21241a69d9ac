use super::*;

struct NoHeaders;
impl HeaderSource for NoHeaders {
    fn for_each(&self, _f: &mut dyn FnMut(&[u8], &[u8])) {}
}

fn get(router: &Router, target: &str) -> (Response, Vec<u8>) {
    let mut dynamic = Vec::new();
    let req = Request {
        method: Method::Get,
        method_raw: b"GET",
        target: target.as_bytes(),
        proto: HttpVersion::Http11,
        tls: false,
        body_len: Some(0),
        headers: &NoHeaders,
        early: false,
    };
    let r = router.route(&req, &mut dynamic);
    (r, dynamic)
}

#[test]
fn sizes() {
    assert_eq!(parse_size(b"653"), Some(653));
    assert_eq!(parse_size(b"10k"), Some(10240));
    assert_eq!(parse_size(b"10m"), Some(10 << 20));
    assert_eq!(parse_size(b"1G"), Some(1 << 30));
    assert_eq!(parse_size(b""), None);
    assert_eq!(parse_size(b"k"), None);
    assert_eq!(parse_size(b"-1"), None);
    assert_eq!(parse_size(b"99999999999999999999k"), None);
}

#[test]
fn targets_and_queries() {
    assert_eq!(split_target(b"/a?b=1"), (&b"/a"[..], &b"b=1"[..]));
    assert_eq!(split_target(b"http://h:1/x?y"), (&b"/x"[..], &b"y"[..]));
    assert_eq!(split_target(b"http://h"), (&b"/"[..], &b""[..]));
    assert_eq!(query_param(b"a=1&size=10k", b"size"), Some(&b"10k"[..]));
    assert_eq!(query_param(b"a=1&size", b"size"), Some(&b""[..]));
    assert_eq!(query_param(b"a=1", b"size"), None);
}

#[test]
fn endpoints() {
    let router = Router::new(&ServerConfig::local()).unwrap();
    let (r, _) = get(&router, "/ping");
    assert_eq!((r.status, r.body.len()), (200, 4));
    let (r, _) = get(&router, "/data?size=10k");
    assert_eq!(r.body.len(), 10240);
    let (r, _) = get(&router, "/data?size=x");
    assert_eq!(r.status, 400);
    let (r, d) = get(&router, "/compute?work=10");
    assert_eq!(r.status, 200);
    assert!((100..=200).contains(&d.len()), "{}", d.len());
    let (r, _) = get(&router, "/status/204");
    assert!(r.body.is_empty() && r.no_content_length());
    let (r, _) = get(&router, "/status/99");
    assert_eq!(r.status, 400);
    let (r, _) = get(&router, "/nope");
    assert_eq!(r.status, 404);
    let (r, _) = get(&router, "/json?cache=max-age%3D60");
    assert_eq!(r.cache.value(), b"max-age=60");
    let (r, _) = get(&router, "/json?cache=max-age=60");
    assert_eq!(r.cache.value(), b"max-age=60");
    let (r, _) = get(&router, "/json?cache=a%0Db");
    assert_eq!(r.cache.value(), b"no-store");
    let (r, _) = get(&router, "/delay?ms=5");
    assert_eq!(r.delay, Some(Duration::from_millis(5)));
    assert!(
        (150..=260).contains(&JSON_BODY.len()),
        "{}",
        JSON_BODY.len()
    );
}

#[test]
fn page_references_assets_of_the_advertised_size() {
    let router = Router::new(&ServerConfig::local()).unwrap();
    let (r, d) = get(&router, "/page?n=31&min=1k&max=8k&seed=7");
    assert_eq!(r.status, 200);
    let html = String::from_utf8(d).unwrap();
    let srcs: Vec<&str> = html
        .split("src=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    assert_eq!(srcs.len(), 31);
    assert_eq!(html.matches("<tr>").count(), 3);
    for (i, src) in srcs.iter().enumerate() {
        let size: u64 = src
            .rsplit('-')
            .next()
            .unwrap()
            .trim_end_matches(".png")
            .parse()
            .unwrap();
        assert!((1024..=8192).contains(&size));
        assert_eq!(size, asset_size_for(7, i as u64, 1024, 8192));
        let (a, _) = get(&router, src);
        assert_eq!((a.status, a.body.len()), (200, size));
    }
    let (a, _) = get(&router, "/asset/7/3.png");
    assert_eq!(a.body.len(), asset_size_for(7, 3, 1024, 8192));
    assert_eq!(get(&router, "/page?min=9k&max=1k").0.status, 400);
}

#[test]
fn page_with_render_blocking_css_and_js() {
    let router = Router::new(&ServerConfig::local()).unwrap();
    let (_, plain) = get(&router, "/page?n=3&seed=7");
    let plain = String::from_utf8(plain).unwrap();
    assert!(!plain.contains(".css") && !plain.contains(".js"));
    let (r, d) = get(
        &router,
        "/page?n=3&seed=7&css=2&js=3&css_size=10k&js_size=20k",
    );
    assert_eq!(r.status, 200);
    let html = String::from_utf8(d).unwrap();
    let head = &html[..html.find("</head>").unwrap()];
    assert_eq!(head.matches("rel=\"stylesheet\"").count(), 2);
    assert_eq!(head.matches("<script src=").count(), 3);
    assert!(!html[html.find("</head>").unwrap()..].contains(".css"));
    // js_at=end moves the scripts after the images.
    let (_, late) = get(&router, "/page?n=3&seed=7&js=1&js_at=end");
    let late = String::from_utf8(late).unwrap();
    assert!(late.find("<script").unwrap() > late.find("<img").unwrap());
    assert_eq!(get(&router, "/page?js_at=middle").0.status, 400);
    // Same seed, same page; sizes within 1/2..3/2 of nominal; served as declared.
    let (_, again) = get(
        &router,
        "/page?n=3&seed=7&css=2&js=3&css_size=10k&js_size=20k",
    );
    assert_eq!(html.as_bytes(), &again[..]);
    let p = PageParams::parse(b"n=3&seed=7&css=2&js=3&css_size=10k&js_size=20k").unwrap();
    let assets: Vec<_> = p.blocking_assets().collect();
    assert_eq!(assets.len(), 5);
    for (i, size, ext) in assets {
        let nominal = if ext == "css" { 10240 } else { 20480 };
        assert!((nominal / 2..=nominal * 3 / 2).contains(&size));
        let path = format!("/asset/7/{i}-{size}.{ext}");
        assert!(head.contains(&path), "{path}");
        let (a, _) = get(&router, &path);
        assert_eq!((a.status, a.body.len()), (200, size));
        let ct = if ext == "css" {
            "text/css"
        } else {
            "text/javascript"
        };
        assert_eq!(a.content_type, ct);
    }
}

#[test]
fn page_think_time_and_early_hints() {
    let off = Router::new(&ServerConfig::local()).unwrap();
    let on = Router::new(&ServerConfig {
        early_hints: true,
        ..ServerConfig::local()
    })
    .unwrap();
    // `think=` waits as `/delay` does (ms by default, `ms` and `s` suffixes).
    for (q, ms) in [("think=200ms", 200), ("think=2s", 2000), ("think=15", 15)] {
        let (r, _) = get(&off, &format!("/page?n=1&{q}"));
        assert_eq!(r.delay, Some(Duration::from_millis(ms)), "{q}");
    }
    let (r, _) = get(&off, "/page?n=1");
    assert_eq!(r.delay, None);
    let (r, _) = get(&off, "/page?think=x");
    assert_eq!(r.status, 400);
    // Hints only with --early-hints, and only for a page that has render-blocking assets.
    let (r, _) = get(&off, "/page?n=1&css=1&js=1");
    assert!(r.early_hints.is_none());
    let (r, _) = get(&on, "/page?n=1");
    assert!(r.early_hints.is_none());
    let (r, html) = get(&on, "/page?n=1&css=1&js=1&seed=3");
    let p = r.early_hints.expect("hints");
    let mut link = Vec::new();
    p.write_preload_links(&mut link);
    let link = String::from_utf8(link).unwrap();
    let html = String::from_utf8(html).unwrap();
    // Each hinted asset is one the HTML then references, with the `as=` of its kind.
    let entries: Vec<&str> = link.split(", ").collect();
    assert_eq!(entries.len(), 2, "{link}");
    assert!(
        entries[0].ends_with(".css>; rel=preload; as=style"),
        "{link}"
    );
    assert!(
        entries[1].ends_with(".js>; rel=preload; as=script"),
        "{link}"
    );
    for e in entries {
        let url = &e[1..e.find('>').unwrap()];
        assert!(html.contains(&format!("\"{url}\"")), "{url} not in {html}");
    }
}
