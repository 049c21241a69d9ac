//! Decode HTTP/2 frames from arbitrary bytes through `FrameDecoder` and
//! `HeaderBlockAssembler` until an error or `NeedMore`, checking that every
//! decoded frame re-encodes to bytes that decode to the same frame.
#![no_main]

use h2lab_wire::frame::{
    check_preface, Decoded, Frame, FrameDecoder, FrameHeader, HeaderBlockAssembler,
    FRAME_HEADER_LEN,
};
use libfuzzer_sys::fuzz_target;

fn check_reencode(frame: &Frame<'_>) {
    let mut buf = Vec::new();
    frame.encode(&mut buf);
    let head = FrameHeader::parse(&buf).expect("encoded frame has a header");
    assert_eq!(head.length as usize + FRAME_HEADER_LEN, buf.len());
    let again = Frame::decode(head, &buf[FRAME_HEADER_LEN..]).expect("re-encoded frame decodes");
    assert_eq!(&again, frame);
}

fuzz_target!(|data: &[u8]| {
    let _ = check_preface(data);
    // First octet picks the configuration so small limits get exercised.
    let Some((&cfg, mut rest)) = data.split_first() else {
        return;
    };
    let decoder = FrameDecoder::with_max_frame_size(16_384 << (cfg & 0x3));
    let mut asm = HeaderBlockAssembler::new(64 << (cfg >> 4), usize::from((cfg >> 2) & 0x3) * 4);
    loop {
        match decoder.decode(rest) {
            Ok(Decoded::Frame { frame, consumed }) => {
                assert!(consumed >= FRAME_HEADER_LEN && consumed <= rest.len());
                check_reencode(&frame);
                rest = &rest[consumed..];
                if asm.push(&frame).is_err() {
                    break;
                }
            }
            Ok(Decoded::StreamError {
                error,
                frame,
                consumed,
            }) => {
                assert!(!error.is_connection_error());
                assert!(consumed >= FRAME_HEADER_LEN && consumed <= rest.len());
                rest = &rest[consumed..];
                if let Some(f) = frame {
                    if asm.push(&f).is_err() {
                        break;
                    }
                }
            }
            Ok(Decoded::NeedMore(n)) => {
                assert!(n > 0);
                break;
            }
            Err(e) => {
                assert!(e.is_connection_error());
                break;
            }
        }
    }
});
