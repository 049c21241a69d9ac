//! Micro-benchmarks for the wire codecs: plain `Instant` loops, a warm-up/calibration
//! phase, then many short rounds (~2 ms each) whose median (and minimum) ns/op is printed.
//! Short rounds keep the median meaningful on a shared machine: most rounds then run
//! without being preempted. Run with `cargo bench -p h2lab-benches --bench wire`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use h2lab_wire::hpack::{huffman, Decoder, Encoder, RequestTemplate};

const ROUNDS: usize = 101;
const ROUND_TARGET: Duration = Duration::from_millis(2);

/// Runs `f` in rounds of a calibrated number of calls; returns the median ns per call.
fn bench<F: FnMut()>(name: &str, mut f: F) -> f64 {
    // Warm-up and calibration: double the batch until it takes a round's time.
    let mut iters: u64 = 1;
    let warm_up = Instant::now();
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        let spent = t.elapsed();
        if (spent >= ROUND_TARGET && warm_up.elapsed() >= Duration::from_millis(50))
            || iters >= 1 << 30
        {
            break;
        }
        if spent < ROUND_TARGET {
            iters *= 2;
        }
    }
    let mut per_call: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    per_call.sort_by(|a, b| a.total_cmp(b));
    let median = per_call[ROUNDS / 2];
    println!(
        "{name:<58} {median:>8.1} ns/op (min {:.1}; {ROUNDS} rounds of {iters})",
        per_call[0]
    );
    median
}

fn fields<'a>(list: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
    list.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()))
}

fn main() {
    let response: [(&str, &str); 5] = [
        (":status", "200"),
        ("content-type", "text/html; charset=utf-8"),
        ("content-length", "1024"),
        ("date", "Mon, 21 Oct 2024 20:13:21 GMT"),
        ("server", "h2lab/0.1"),
    ];
    let request: [(&str, &str); 7] = [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "bench.example.org:8443"),
        (":path", "/bench/object-1"),
        ("user-agent", "h2load nghttp2/1.59.0"),
        ("accept", "*/*"),
        ("accept-encoding", "gzip, deflate"),
    ];

    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average: {}", load.trim());
    }
    println!("HPACK (RFC 7541)");

    // What a server's encoder sends: the 1st response (literals with incremental indexing,
    // Huffman) and the 2nd+ (indexed references).
    let mut server = Encoder::new(4096);
    let mut first = Vec::new();
    server.encode(fields(&response), &mut first);
    let mut warm = Vec::new();
    server.encode(fields(&response), &mut warm);
    println!(
        "  response block: cold {} octets, warm {} octets",
        first.len(),
        warm.len()
    );

    let mut dec = Decoder::new(4096);
    dec.decode(&first, |_| {}).unwrap();
    let hpack_warm = bench("decode response, warm table (mostly indexed)", || {
        let mut n = 0usize;
        dec.decode(black_box(&warm), |f| n += f.name.len() + f.value.len())
            .unwrap();
        black_box(n);
    });

    // Cold: the first-response block, preceded by size updates to 0 and back to 4096 so
    // every iteration starts from an empty table (and inserts the 4 literals again).
    let mut cold = vec![0x20, 0x3f, 0xe1, 0x1f];
    cold.extend_from_slice(&first);
    let mut dec = Decoder::new(4096);
    let hpack_cold = bench(
        "decode response, cold table (literals, Huffman, inserts)",
        || {
            let mut n = 0usize;
            dec.decode(black_box(&cold), |f| n += f.name.len() + f.value.len())
                .unwrap();
            black_box(n);
        },
    );

    let date = b"Mon, 21 Oct 2024 20:13:21 GMT";
    let mut coded = Vec::new();
    huffman::encode(date, &mut coded);
    let mut out = Vec::with_capacity(64);
    bench("huffman decode, 29-char date", || {
        out.clear();
        huffman::decode(black_box(&coded), &mut out).unwrap();
        black_box(&out);
    });

    let text: Vec<u8> =
        b"text/html; charset=utf-8 Mon, 21 Oct 2024 20:13:21 GMT /images/logo.png?v=3 "
            .iter()
            .copied()
            .cycle()
            .take(1024)
            .collect();
    let mut coded_text = Vec::new();
    huffman::encode(&text, &mut coded_text);
    let mut out = Vec::with_capacity(2048);
    let ns = bench("huffman decode, 1 KiB of header text", || {
        out.clear();
        huffman::decode(black_box(&coded_text), &mut out).unwrap();
        black_box(&out);
    });
    println!("  = {:.2} ns per decoded octet", ns / text.len() as f64);
    let ns = bench("huffman encode, 1 KiB of header text", || {
        out.clear();
        huffman::encode(black_box(&text), &mut out);
        black_box(&out);
    });
    println!("  = {:.2} ns per input octet", ns / text.len() as f64);

    // Request side: template vs general encoder, steady state.
    let fixed: Vec<(&str, &str)> = request
        .iter()
        .copied()
        .filter(|(n, _)| *n != ":path")
        .collect();
    let mut template =
        RequestTemplate::new(fields(&fixed), [&b"/bench/object-1"[..]], 4096).unwrap();
    let mut buf = Vec::with_capacity(256);
    template.encode_next(0, &mut buf);
    buf.clear();
    template.encode_next(0, &mut buf);
    println!(
        "  request block: template steady state {} octets (uncompressed {} octets)",
        buf.len(),
        template.uncompressed_len(0)
    );
    let mut i = 0usize;
    let hpack_template = bench("encode request, RequestTemplate steady state", || {
        buf.clear();
        black_box(template.encode_next(black_box(i), &mut buf));
        i = i.wrapping_add(1);
    });

    let paths: [&[u8]; 4] = [
        b"/a.html",
        b"/b/style.css",
        b"/c/app.js",
        b"/d/img/logo.png",
    ];
    let mut template4 = RequestTemplate::new(fields(&fixed), paths, 4096).unwrap();
    for j in 0..8 {
        buf.clear();
        template4.encode_next(j, &mut buf);
    }
    bench(
        "encode request, RequestTemplate, 4 paths round-robin",
        || {
            buf.clear();
            black_box(template4.encode_next(black_box(i), &mut buf));
            i = i.wrapping_add(1);
        },
    );

    let mut enc = Encoder::new(4096);
    buf.clear();
    enc.encode(fields(&request), &mut buf);
    bench("encode request, general Encoder (warm table)", || {
        buf.clear();
        enc.encode(fields(black_box(&request)), &mut buf);
        black_box(&buf);
    });
    bench("encode response, general Encoder (warm table)", || {
        buf.clear();
        server.encode(fields(black_box(&response)), &mut buf);
        black_box(&buf);
    });

    qpack(
        &response,
        &fixed,
        Hpack {
            warm: hpack_warm,
            cold: hpack_cold,
            template: hpack_template,
        },
    );
}

/// The HPACK figures the QPACK ones are compared with.
struct Hpack {
    warm: f64,
    cold: f64,
    template: f64,
}

/// QPACK (RFC 9204) beside HPACK: the same response field section decoded static-only and
/// with the dynamic table, and the same request templated; ratios against the HPACK runs
/// above (same process, same machine state).
fn qpack(response: &[(&str, &str)], fixed: &[(&str, &str)], hpack: Hpack) {
    use h2lab_wire::qpack::{Decoder, Encoder, EncoderConfig, RequestTemplate};
    println!("QPACK (RFC 9204)");
    let pair = |dynamic: bool| {
        let mut e = Encoder::new(EncoderConfig {
            use_dynamic_table: dynamic,
            max_table_capacity: 4096,
        });
        e.set_peer_settings(4096, 16);
        (e, Decoder::new(4096, 16))
    };

    // Static table and literals only: every response costs the same.
    let (mut enc, mut dec) = pair(false);
    let (mut section, mut es) = (Vec::new(), Vec::new());
    enc.encode(0, fields(response), &mut section, &mut es);
    println!("  response section, static only: {} octets", section.len());
    let static_ns = bench("decode response, static table + literals", || {
        let mut n = 0usize;
        dec.decode_section(0, black_box(&section), |f| {
            n += f.name.len() + f.value.len()
        })
        .unwrap();
        black_box(n);
    });

    // Dynamic table, warm: the entries are inserted and acknowledged, the section is
    // indexed references; each decode queues a Section Acknowledgment, drained as a
    // connection would.
    let (mut enc, mut dec) = pair(true);
    let mut fb = Vec::new();
    for id in [0u64, 4] {
        section.clear();
        es.clear();
        enc.encode(id, fields(response), &mut section, &mut es);
        dec.feed_encoder_stream(&es).unwrap();
        dec.decode_section(id, &section, |_| {}).unwrap();
        fb.clear();
        dec.take_decoder_stream(&mut fb);
        enc.feed_decoder_stream(&fb).unwrap();
    }
    section.clear();
    enc.encode(8, fields(response), &mut section, &mut es);
    println!("  response section, dynamic warm: {} octets", section.len());
    let dynamic_ns = bench("decode response, dynamic table warm (indexed)", || {
        let mut n = 0usize;
        dec.decode_section(8, black_box(&section), |f| {
            n += f.name.len() + f.value.len()
        })
        .unwrap();
        fb.clear();
        dec.take_decoder_stream(&mut fb);
        black_box((n, &fb));
    });

    // Request template: static mode, and dynamic mode after the inserts are acknowledged
    // (each request's Section Acknowledgment is fed back, as the decoder stream would).
    let cfg = |dynamic| EncoderConfig {
        use_dynamic_table: dynamic,
        max_table_capacity: 4096,
    };
    let mut buf = Vec::with_capacity(256);
    let mut ts =
        RequestTemplate::new(fields(fixed), [&b"/bench/object-1"[..]], cfg(false)).unwrap();
    ts.set_peer_settings(4096, 16);
    ts.encode_next(0, 0, &mut buf, &mut es);
    println!("  request section, template static: {} octets", buf.len());
    let tpl_static = bench("encode request, RequestTemplate static", || {
        buf.clear();
        black_box(ts.encode_next(0, black_box(0), &mut buf, &mut es));
    });
    let mut td = RequestTemplate::new(fields(fixed), [&b"/bench/object-1"[..]], cfg(true)).unwrap();
    td.set_peer_settings(4096, 16);
    let mut peer = Decoder::new(4096, 16);
    es.clear();
    buf.clear();
    td.encode_next(0, 0, &mut buf, &mut es);
    peer.feed_encoder_stream(&es).unwrap();
    fb.clear();
    peer.take_decoder_stream(&mut fb);
    td.feed_decoder_stream(&fb).unwrap();
    buf.clear();
    td.encode_next(0, 0, &mut buf, &mut es);
    td.feed_decoder_stream(&[0x80]).unwrap();
    assert!(td.uses_dynamic_table());
    println!("  request section, template dynamic: {} octets", buf.len());
    let tpl_dynamic = bench(
        "encode request, RequestTemplate dynamic (+ its ack)",
        || {
            buf.clear();
            black_box(td.encode_next(0, black_box(0), &mut buf, &mut es));
            td.feed_decoder_stream(black_box(&[0x80])).unwrap();
        },
    );
    println!(
        "  ratios vs HPACK: static decode / HPACK cold {:.2}, dynamic decode / HPACK warm {:.2}, \
         template static / HPACK template {:.2}, template dynamic / HPACK template {:.2}",
        static_ns / hpack.cold,
        dynamic_ns / hpack.warm,
        tpl_static / hpack.template,
        tpl_dynamic / hpack.template
    );
}
