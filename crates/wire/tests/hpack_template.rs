//! RequestTemplate: every block, decoded by an independent Decoder that follows the
//! connection, must give exactly the request's headers, through warm-up, steady state,
//! round-robin paths and SETTINGS_HEADER_TABLE_SIZE changes.

use h2lab_wire::hpack::{Decoder, RequestTemplate, TemplateError};

type Headers = Vec<(Vec<u8>, Vec<u8>)>;

const FIELDS: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "bench.example.org:8443"),
    ("user-agent", "h2lab/0.1"),
    ("accept", "*/*"),
    ("accept-encoding", "gzip, deflate"),
    ("x-test-run", "run-0123456789"),
];

fn template(paths: &[&str], table: usize) -> RequestTemplate {
    RequestTemplate::new(
        FIELDS.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
        paths.iter().map(|p| p.as_bytes()),
        table,
    )
    .unwrap()
}

fn expected(t: &RequestTemplate, i: usize) -> Headers {
    t.fields(i).map(|(n, v)| (n.to_vec(), v.to_vec())).collect()
}

fn decode(d: &mut Decoder, block: &[u8]) -> Headers {
    let mut out = Vec::new();
    d.decode(block, |f| out.push((f.name.to_vec(), f.value.to_vec())))
        .unwrap_or_else(|e| panic!("decode {block:02x?}: {e}"));
    out
}

/// Encodes request `i` and checks it against an independent decoder.
fn step(t: &mut RequestTemplate, d: &mut Decoder, i: usize, buf: &mut Vec<u8>) -> usize {
    buf.clear();
    let n = t.encode_next(i, buf);
    assert_eq!(n, buf.len());
    assert_eq!(decode(d, buf), expected(t, i), "request {i}");
    assert_eq!(
        t.encoder().table_size(),
        d.table_size(),
        "request {i}: table drift"
    );
    n
}

#[test]
fn header_order_and_pseudo_headers_first() {
    let t = template(&["/index.html"], 4096);
    let names: Vec<String> = t
        .fields(0)
        .map(|(n, _)| String::from_utf8(n.to_vec()).unwrap())
        .collect();
    assert_eq!(
        names,
        [
            ":method",
            ":scheme",
            ":authority",
            ":path",
            "user-agent",
            "accept",
            "accept-encoding",
            "x-test-run"
        ]
    );
}

#[test]
fn steady_state_is_small_and_stable() {
    let mut t = template(&["/bench/object-1"], 4096);
    let mut d = Decoder::new(4096);
    let mut buf = Vec::new();
    let first = step(&mut t, &mut d, 0, &mut buf);
    let first_bytes = buf.clone();
    let second = step(&mut t, &mut d, 0, &mut buf);
    let second_bytes = buf.clone();
    assert!(
        first > 60,
        "first block carries the literals ({first} octets)"
    );
    // 8 fields, all indexed: one octet each.
    assert_eq!(second, 8, "{second_bytes:02x?}");
    assert_ne!(first_bytes, second_bytes);
    for i in 0..1000 {
        step(&mut t, &mut d, i, &mut buf);
        assert_eq!(buf, second_bytes, "steady-state blocks are identical");
    }
    // Only the first block inserted anything.
    assert_eq!(d.table_len(), 5);
}

#[test]
fn round_robin_paths() {
    let paths = [
        "/",
        "/a",
        "/b/c.css",
        "/d/e/f.js?v=1",
        "/index.html",
        "/images/logo-2024.png",
    ];
    let mut t = template(&paths, 4096);
    let mut d = Decoder::new(4096);
    let mut buf = Vec::new();
    let mut sizes = Vec::new();
    for i in 0..3000 {
        sizes.push(step(&mut t, &mut d, i, &mut buf));
    }
    // Once every path has been used, every block is fully indexed: 8 octets.
    assert!(
        sizes[paths.len()..].iter().all(|&n| n == 8),
        "{:?}",
        &sizes[..12]
    );
    // Paths with a static full match (/ and /index.html) are never inserted.
    assert_eq!(d.table_len(), 4 + 4);
}

#[test]
fn many_paths_that_do_not_all_fit() {
    let paths: Vec<String> = (0..200)
        .map(|i| format!("/objects/{i:04}/payload.bin"))
        .collect();
    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    for table in [256usize, 1024, 4096] {
        let mut t = template(&refs, table);
        let mut d = Decoder::new(table);
        let mut buf = Vec::new();
        for i in 0..1000 {
            step(&mut t, &mut d, i * 7, &mut buf);
        }
        assert!(d.table_size() <= table);
    }
}

#[test]
fn peer_lowers_table_size_to_zero_then_raises_it() {
    let paths = ["/x", "/y", "/z/zz"];
    let mut t = template(&paths, 4096);
    let mut d = Decoder::new(4096);
    let mut buf = Vec::new();
    for i in 0..50 {
        step(&mut t, &mut d, i, &mut buf);
    }
    // The peer sends SETTINGS_HEADER_TABLE_SIZE = 0; its decoder applies it once we ack.
    t.set_peer_table_size(0);
    d.set_max_table_size(0);
    step(&mut t, &mut d, 50, &mut buf);
    assert_eq!(buf[0], 0x20, "block starts with a size update to 0");
    assert_eq!(d.table_len(), 0);
    assert_eq!(d.table_max_size(), 0);
    let mut steady = Vec::new();
    for i in 51..200 {
        step(&mut t, &mut d, i, &mut buf);
        assert_eq!(
            d.table_len(),
            0,
            "nothing is indexed with a zero-size table"
        );
        if i % 3 == 0 {
            if steady.is_empty() {
                steady = buf.clone();
            }
            assert_eq!(buf, steady);
        }
    }
    // Raised again.
    t.set_peer_table_size(4096);
    d.set_max_table_size(4096);
    step(&mut t, &mut d, 200, &mut buf);
    assert_eq!(&buf[..3], [0x3f, 0xe1, 0x1f], "size update to 4096");
    for i in 201..400 {
        step(&mut t, &mut d, i, &mut buf);
    }
    assert_eq!(buf.len(), 8, "indexed again in steady state");
}

#[test]
fn peer_lowers_to_a_size_that_fits_only_some_fields() {
    let mut t = template(&["/p1", "/p2"], 4096);
    let mut d = Decoder::new(4096);
    let mut buf = Vec::new();
    for i in 0..10 {
        step(&mut t, &mut d, i, &mut buf);
    }
    for size in [100usize, 64, 1, 300, 150] {
        t.set_peer_table_size(size);
        d.set_max_table_size(size);
        for i in 0..20 {
            step(&mut t, &mut d, i, &mut buf);
            assert!(d.table_size() <= size);
        }
    }
}

#[test]
fn down_and_up_between_two_blocks_signals_the_minimum() {
    let mut t = template(&["/only"], 4096);
    let mut d = Decoder::new(4096);
    let mut buf = Vec::new();
    for i in 0..3 {
        step(&mut t, &mut d, i, &mut buf);
    }
    // Two SETTINGS frames between two requests: 0, then 4096 again.
    t.set_peer_table_size(0);
    d.set_max_table_size(0);
    t.set_peer_table_size(4096);
    d.set_max_table_size(4096);
    step(&mut t, &mut d, 3, &mut buf);
    assert_eq!(&buf[..4], [0x20, 0x3f, 0xe1, 0x1f]);
    for i in 4..10 {
        step(&mut t, &mut d, i, &mut buf);
    }
    assert_eq!(buf.len(), 8);
}

#[test]
fn set_size_before_first_request() {
    let mut t = template(&["/a"], 4096);
    let mut d = Decoder::new(4096);
    t.set_peer_table_size(0);
    d.set_max_table_size(0);
    let mut buf = Vec::new();
    step(&mut t, &mut d, 0, &mut buf);
    assert_eq!(buf[0], 0x20);
    for i in 1..5 {
        step(&mut t, &mut d, i, &mut buf);
    }
}

#[test]
fn using_the_encoder_directly_in_between_is_safe() {
    let mut t = template(&["/a", "/b"], 4096);
    let mut d = Decoder::new(4096);
    let mut buf = Vec::new();
    for i in 0..5 {
        step(&mut t, &mut d, i, &mut buf);
    }
    // Some other request on the same connection, through the shared encoder.
    buf.clear();
    let other: [(&[u8], &[u8]); 4] = [
        (b":method", b"POST"),
        (b":scheme", b"https"),
        (b":authority", b"bench.example.org:8443"),
        (b":path", b"/upload"),
    ];
    t.encoder_mut().encode(other.iter().copied(), &mut buf);
    let got = decode(&mut d, &buf);
    assert_eq!(got.len(), 4);
    for i in 5..50 {
        step(&mut t, &mut d, i, &mut buf);
    }
}

#[test]
fn sensitive_template_fields_stay_never_indexed() {
    let fields: [(&[u8], &[u8]); 5] = [
        (b":method", b"GET"),
        (b":scheme", b"http"),
        (b":authority", b"localhost"),
        (b"authorization", b"Bearer secret-token"),
        (b"cookie", b"id=1"),
    ];
    let mut t = RequestTemplate::new(fields, [&b"/"[..]], 4096).unwrap();
    let mut d = Decoder::new(4096);
    let mut buf = Vec::new();
    for i in 0..3 {
        buf.clear();
        t.encode_next(i, &mut buf);
        let mut flags = Vec::new();
        d.decode(&buf, |f| flags.push((f.name.to_vec(), f.sensitive)))
            .unwrap();
        assert_eq!(
            flags
                .iter()
                .filter(|(_, s)| *s)
                .map(|(n, _)| n.clone())
                .collect::<Vec<_>>(),
            [b"authorization".to_vec(), b"cookie".to_vec()]
        );
    }
    assert_eq!(d.table_len(), 1, "only :authority is indexed");
}

#[test]
fn accounting() {
    let t = template(&["/a", "/bbb"], 4096);
    let fixed: usize = FIELDS.iter().map(|(n, v)| n.len() + v.len()).sum();
    assert_eq!(t.uncompressed_len(0), fixed + ":path".len() + 2);
    assert_eq!(t.uncompressed_len(1), fixed + ":path".len() + 4);
    assert_eq!(t.uncompressed_len(2), t.uncompressed_len(0));
    assert_eq!(
        t.header_list_size(1),
        t.uncompressed_len(1) + 32 * (FIELDS.len() + 1)
    );
    assert_eq!(t.path(3), b"/bbb");
    assert_eq!(t.path_count(), 2);
}

#[test]
fn construction_errors() {
    let fields: [(&[u8], &[u8]); 1] = [(b":method", b"GET")];
    let no_paths: [&[u8]; 0] = [];
    assert_eq!(
        RequestTemplate::new(fields, no_paths, 4096).unwrap_err(),
        TemplateError::NoPaths
    );
    let with_path: [(&[u8], &[u8]); 2] = [(b":method", b"GET"), (b":path", b"/")];
    assert_eq!(
        RequestTemplate::new(with_path, [&b"/"[..]], 4096).unwrap_err(),
        TemplateError::PathInFields
    );
}

#[test]
fn many_requests_many_changes() {
    // A long pseudo-random walk over paths and table sizes, checked block by block.
    let paths = [
        "/",
        "/a",
        "/bb",
        "/ccc/ddd",
        "/e?f=g",
        "/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w",
    ];
    let mut t = template(&paths, 4096);
    let mut d = Decoder::new(4096);
    let mut buf = Vec::new();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..5000usize {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 97 == 0 {
            let size = [0usize, 32, 90, 200, 512, 4096, 16384][(x >> 8) as usize % 7];
            t.set_peer_table_size(size);
            d.set_max_table_size(size);
        }
        step(&mut t, &mut d, (x >> 20) as usize, &mut buf);
        let _ = i;
    }
}
