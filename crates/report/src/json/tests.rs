//! Tests of the result document: histogram encoding, round trip, merging, versions.

use std::io;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::Serializer as _;

use super::*;
use crate::model::{
    empty_result, new_histogram, AppProtocol, RequestCounts, RunOptions, RunResult, StatusCounts,
    TlsInfo, Traffic,
};

fn sample_run(scale: u64) -> RunResult {
    let mut r = RunResult {
        elapsed: Duration::from_secs(2),
        requests: RequestCounts {
            total: 100 * scale,
            started: 100 * scale,
            done: 100 * scale,
            succeeded: 99 * scale,
            failed: scale,
            errored: scale,
            timeout: 0,
            completed: 99 * scale,
        },
        status: StatusCounts {
            s2xx: 99 * scale,
            ..Default::default()
        },
        traffic: Traffic {
            bytes_total: 70_000 * scale,
            bytes_head: 1_000 * scale,
            bytes_head_decomp: 5_000 * scale,
            bytes_body: 65_300 * scale,
        },
        client_rps: vec![25.0 * scale as f64, 24.5 * scale as f64],
        app_protocol: Some(AppProtocol::H2),
        tls: Some(TlsInfo {
            protocol: "TLSv1.3".into(),
            cipher: "TLS_AES_128_GCM_SHA256".into(),
            server_temp_key: Some("X25519 253 bits".into()),
            alpn: Some("h2".into()),
        }),
        ..empty_result()
    };
    for i in 0..99 * scale {
        r.request_time.record(1_000_000 + i * 1_000).unwrap();
    }
    r.connect_time.record(200_000 * scale).unwrap();
    r.ttfb.record(400_000 * scale).unwrap();
    r.errors.stream_resets.insert(7, scale);
    r.errors.goaway_errors.insert(0xff, 1);
    r.errors.messages.push(format!("message {scale}").into());
    r
}

#[test]
fn histogram_round_trip() {
    let mut h = new_histogram();
    for v in [1u64, 10, 1_000, 1_000_000, 3_000_000_000] {
        h.record(v).unwrap();
    }
    let s = encode_histogram(&h).unwrap();
    let back = decode_histogram(&s).unwrap();
    assert_eq!(back, h);
    assert!(decode_histogram("not base64!").is_err());
    assert!(decode_histogram("AAAA").is_err());
    // Plain V2 is accepted too.
    let mut plain = Vec::new();
    hdrhistogram::serialization::V2Serializer::new()
        .serialize(&h, &mut plain)
        .unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&plain);
    assert_eq!(decode_histogram(&b64).unwrap(), h);
    // A header claiming a 4 GiB payload is rejected before anything is allocated.
    let mut lying = plain.clone();
    lying[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
    let b64 = base64::engine::general_purpose::STANDARD.encode(&lying);
    assert!(decode_histogram(&b64).is_err());
    // Same inside a deflate envelope.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    io::Write::write_all(&mut z, &lying).unwrap();
    let inner = z.finish().unwrap();
    let mut env = 0x1c84_9314u32.to_be_bytes().to_vec();
    env.extend_from_slice(&(inner.len() as u32).to_be_bytes());
    env.extend_from_slice(&inner);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&env);
    assert!(decode_histogram(&b64).is_err());
}

#[test]
fn document_round_trip() {
    let r = sample_run(1);
    let opts = RunOptions {
        uris: vec!["https://localhost/".into()],
        requests: 100,
        clients: 2,
        max_concurrent_streams: 10,
        threads: 1,
        duration: Some(Duration::from_millis(1500)),
        headers: vec![("x-a".into(), "b".into())],
        protocol: "h2".into(),
        alpn_list: vec!["h2".into(), "http/1.1".into()],
        window_bits: 30,
        connection_window_bits: 30,
        header_table_size: 4096,
        encoder_header_table_size: 4096,
        ..Default::default()
    };
    let doc = to_json(&r, &opts).unwrap();
    assert_eq!(doc.schema_version, 1);
    assert_eq!(doc.requests.succeeded, 99);
    assert_eq!(doc.latency.request.count, 99);
    assert_eq!(doc.throughput.requests_per_second, 49.5);
    assert_eq!(doc.traffic.header_space_savings, 0.8);
    let text = to_string(&doc).unwrap();
    let parsed = parse(&text).unwrap();
    assert_eq!(parsed, doc);
    let (r2, o2) = from_json(&parsed).unwrap();
    assert_eq!(o2, opts);
    assert_eq!(r2.request_time, r.request_time);
    assert_eq!(r2.requests, r.requests);
    assert_eq!(r2.traffic, r.traffic);
    assert_eq!(r2.tls, r.tls);
    assert_eq!(r2.app_protocol, r.app_protocol);
    assert_eq!(r2.errors, r.errors);
}

#[test]
fn merge_adds_counters_and_histograms() {
    let a = to_json(&sample_run(1), &RunOptions::default()).unwrap();
    let b = to_json(&sample_run(2), &RunOptions::default()).unwrap();
    let m = merge(&a, &b, MergeMode::Concurrent).unwrap();
    assert_eq!(m.runs, 2);
    assert_eq!(m.requests.total, 300);
    assert_eq!(m.requests.succeeded, 297);
    assert_eq!(m.status_codes.s2xx, 297);
    assert_eq!(m.traffic.total_bytes, 210_000);
    assert_eq!(m.errors.stream_resets["REFUSED_STREAM"], 3);
    assert_eq!(m.errors.goaway_errors["0xff"], 2);
    assert_eq!(m.errors.total, 5);
    assert_eq!(m.errors.messages, vec!["message 1", "message 2"]);
    assert_eq!(m.latency.request.count, 297);
    assert_eq!(m.latency.connect.count, 2);
    assert_eq!(m.client_rps.values, vec![25.0, 24.5, 50.0, 49.0]);
    assert_eq!(m.elapsed_seconds, 2.0);
    assert_eq!(m.throughput.requests_per_second, 148.5);
    assert_eq!(m.protocol.application.as_deref(), Some("h2"));
    // The merged histogram is exactly the sum of the two.
    let (ra, _) = from_json(&a).unwrap();
    let (rb, _) = from_json(&b).unwrap();
    let mut sum = ra.request_time.clone();
    sum.add(&rb.request_time).unwrap();
    assert_eq!(decode_histogram(&m.histograms.request_time).unwrap(), sum);
    // Max latency is the larger of the two runs' maxima.
    assert_eq!(
        m.latency.request.max_ns,
        a.latency.request.max_ns.max(b.latency.request.max_ns)
    );

    let seq = merge(&a, &b, MergeMode::Sequential).unwrap();
    assert_eq!(seq.elapsed_seconds, 4.0);
    assert_eq!(seq.throughput.requests_per_second, 74.25);

    // Merging is associative on counters: three runs.
    let three = merge(&m, &a, MergeMode::Concurrent).unwrap();
    assert_eq!(three.runs, 3);
    assert_eq!(three.requests.total, 400);
}

#[test]
fn merge_with_different_protocols_drops_it() {
    let mut rb = sample_run(1);
    rb.app_protocol = Some(AppProtocol::Http11);
    rb.protocol_fallback = true;
    let m = merge_results(&sample_run(1), &rb, MergeMode::Concurrent).unwrap();
    assert_eq!(m.app_protocol, None);
    assert!(m.protocol_fallback);
}

#[test]
fn rejects_other_schema_versions() {
    let doc = to_json(&sample_run(1), &RunOptions::default()).unwrap();
    let text = to_string(&doc)
        .unwrap()
        .replace("\"schema_version\": 1", "\"schema_version\": 2");
    assert!(matches!(parse(&text), Err(JsonError::UnsupportedSchema(2))));
    assert!(matches!(parse("{"), Err(JsonError::Parse(_))));
}
