//! Result documents come from files users pass around: decoding arbitrary input must fail
//! cleanly, never panic.

use base64::Engine as _;
use h2lab_report::json;
use proptest::prelude::*;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_histogram_bytes_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = json::decode_histogram(&b64(&bytes));
    }

    /// Valid V2 cookies (plain 0x1c849303, deflate 0x1c849304) followed by arbitrary bytes.
    #[test]
    fn arbitrary_bytes_after_a_v2_cookie_do_not_panic(
        deflate in any::<bool>(),
        rest in proptest::collection::vec(any::<u8>(), 0..128),
    ) {
        let mut bytes = if deflate { vec![0x1c, 0x84, 0x93, 0x14] } else { vec![0x1c, 0x84, 0x93, 0x13] };
        bytes.extend_from_slice(&rest);
        let _ = json::decode_histogram(&b64(&bytes));
    }

    #[test]
    fn arbitrary_text_does_not_panic(s in "\\PC{0,200}") {
        let _ = json::parse(&s);
        let _ = json::decode_histogram(&s);
    }
}

proptest! {
    // Each case may build a large (up to ~25 MB) histogram: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A well-formed V2 header (any digits and bounds) with an arbitrary payload.
    #[test]
    fn arbitrary_payload_after_a_valid_header_does_not_panic(
        digits in 0u32..7,
        low in 0u64..2000,
        high in prop_oneof![Just(u64::MAX), 0u64..10_000_000_000u64],
        payload in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut bytes = vec![0x1c, 0x84, 0x93, 0x13];
        bytes.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&0u32.to_be_bytes());
        bytes.extend_from_slice(&digits.to_be_bytes());
        bytes.extend_from_slice(&low.to_be_bytes());
        bytes.extend_from_slice(&high.to_be_bytes());
        bytes.extend_from_slice(&1.0f64.to_be_bytes());
        bytes.extend_from_slice(&payload);
        let _ = json::decode_histogram(&b64(&bytes));
    }
}
