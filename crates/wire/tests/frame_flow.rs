//! Flow-control windows (RFC 9113 §5.2, §6.9).

use h2lab_wire::frame::{
    ErrorCode, RecvWindow, Scope, StreamId, Window, DEFAULT_INITIAL_WINDOW_SIZE, MAX_WINDOW_SIZE,
};
use proptest::prelude::*;

const S1: Scope = Scope::Stream(StreamId::new(1));

#[test]
fn consume_down_to_zero_then_error() {
    let mut w = Window::new(DEFAULT_INITIAL_WINDOW_SIZE);
    w.consume(65_000, S1).unwrap();
    w.consume(535, S1).unwrap();
    assert_eq!(w.size(), 0);
    assert_eq!(w.available(), 0);
    let e = w.consume(1, S1).unwrap_err();
    assert_eq!(e.scope, S1);
    assert_eq!(e.code, ErrorCode::FLOW_CONTROL_ERROR);
    let e = w.consume(1, Scope::Connection).unwrap_err();
    assert_eq!(e.scope, Scope::Connection);
    assert_eq!(w.size(), 0, "unchanged on error");
    w.consume(0, S1).unwrap();
    let mut w = Window::new(10);
    assert!(w.consume(u32::MAX, S1).is_err());
    assert_eq!(w.size(), 10);
}

#[test]
fn increase_up_to_max_then_overflow() {
    let mut w = Window::new(DEFAULT_INITIAL_WINDOW_SIZE);
    w.increase(MAX_WINDOW_SIZE - DEFAULT_INITIAL_WINDOW_SIZE, S1)
        .unwrap();
    assert_eq!(w.size(), i32::MAX);
    assert_eq!(w.available(), MAX_WINDOW_SIZE);
    let e = w.increase(1, S1).unwrap_err();
    assert_eq!(e.scope, S1);
    assert_eq!(e.code, ErrorCode::FLOW_CONTROL_ERROR);
    let e = w.increase(MAX_WINDOW_SIZE, Scope::Connection).unwrap_err();
    assert_eq!(e.scope, Scope::Connection);
    assert_eq!(e.code, ErrorCode::FLOW_CONTROL_ERROR);
    assert_eq!(w.size(), i32::MAX, "unchanged on error");
    assert_eq!(Window::new(u32::MAX).size(), i32::MAX);
}

#[test]
fn initial_window_size_decrease_makes_window_negative() {
    // Peer's INITIAL_WINDOW_SIZE 65535; we sent 1000 octets on a stream.
    let mut w = Window::new(65_535);
    w.consume(1_000, S1).unwrap();
    // Peer lowers SETTINGS_INITIAL_WINDOW_SIZE to 0.
    w.apply_initial_window_size_delta(65_535, 0).unwrap();
    assert_eq!(w.size(), -1_000);
    assert_eq!(w.available(), 0);
    assert!(w.consume(1, S1).is_err());
    // A WINDOW_UPDATE brings it back above zero.
    w.increase(1_500, S1).unwrap();
    assert_eq!(w.size(), 500);
    // Raising the setting again.
    w.apply_initial_window_size_delta(0, 10_000).unwrap();
    assert_eq!(w.size(), 10_500);
}

#[test]
fn initial_window_size_increase_overflow_is_connection_error() {
    let mut w = Window::new(MAX_WINDOW_SIZE - 10);
    let e = w
        .apply_initial_window_size_delta(65_535, 65_535 + 11)
        .unwrap_err();
    assert_eq!(e.scope, Scope::Connection);
    assert_eq!(e.code, ErrorCode::FLOW_CONTROL_ERROR);
    assert_eq!(w.size(), (MAX_WINDOW_SIZE - 10) as i32);
    w.apply_initial_window_size_delta(65_535, 65_535 + 10)
        .unwrap();
    assert_eq!(w.size(), i32::MAX);
    // Largest possible decrease stays representable.
    let mut w = Window::new(0);
    w.apply_initial_window_size_delta(MAX_WINDOW_SIZE, 0)
        .unwrap();
    assert_eq!(w.size(), -(MAX_WINDOW_SIZE as i32));
}

#[test]
fn recv_window_batches_updates_at_half_the_target() {
    let mut w = RecvWindow::new(65_535, 65_535);
    assert_eq!(w.take_update(), None);
    w.recv(16_384, S1).unwrap();
    w.release(16_384);
    assert_eq!(w.owed(), 16_384);
    assert_eq!(w.take_update(), None);
    w.recv(16_384, S1).unwrap();
    w.release(16_384);
    assert_eq!(w.take_update(), Some(32_768));
    assert_eq!(w.window().size(), 65_535);
    assert_eq!(w.owed(), 0);
}

#[test]
fn recv_window_holds_credit_until_released() {
    let mut w = RecvWindow::new(100, 100);
    w.recv(100, S1).unwrap();
    assert_eq!(w.in_use(), 100);
    assert_eq!(w.take_update(), None, "nothing released yet");
    let e = w.recv(1, S1).unwrap_err();
    assert_eq!(e.code, ErrorCode::FLOW_CONTROL_ERROR);
    assert_eq!(e.scope, S1);
    w.release(60);
    assert_eq!(w.take_update(), Some(60));
    w.release(1_000); // over-release is clamped
    assert_eq!(w.in_use(), 0);
    assert_eq!(w.owed(), 40);
    assert_eq!(w.take_update(), None, "40 is below the threshold of 50");
    assert_eq!(w.window().size(), 60);
    w.recv(10, S1).unwrap();
    w.release(10);
    assert_eq!(w.take_update(), Some(50));
    assert_eq!(w.window().size(), 100);
}

#[test]
fn recv_window_grows_connection_window_at_startup() {
    let mut w = RecvWindow::new(65_535, 16 << 20);
    assert_eq!(w.take_update(), Some((16 << 20) - 65_535));
    assert_eq!(w.window().size(), 16 << 20);
    // Raise the target later.
    w.set_target(32 << 20);
    assert_eq!(w.take_update(), Some(16 << 20));
    // Lowering the target means no update until the peer uses the excess.
    w.set_target(1 << 20);
    w.recv(1 << 20, Scope::Connection).unwrap();
    w.release(1 << 20);
    assert_eq!(w.take_update(), None);
    // Custom threshold.
    let mut w = RecvWindow::new(1000, 1000);
    w.set_threshold(10);
    w.recv(10, S1).unwrap();
    w.release(10);
    assert_eq!(w.take_update(), Some(10));
    assert_eq!(w.target(), 1000);
}

#[test]
fn recv_window_after_local_initial_window_change() {
    let mut w = RecvWindow::new(65_535, 65_535);
    w.recv(60_000, S1).unwrap();
    w.window_mut()
        .apply_initial_window_size_delta(65_535, 1_000)
        .unwrap();
    w.set_target(1_000);
    assert!(w.window().size() < 0);
    assert!(w.recv(1, S1).is_err());
    w.release(60_000);
    assert_eq!(w.take_update(), Some(60_000));
    assert_eq!(w.window().size(), 1_000);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn window_arithmetic_never_panics_and_stays_in_range(
        init in any::<u32>(),
        ops in proptest::collection::vec((0u8..3, any::<u32>(), any::<u32>()), 0..32)
    ) {
        let mut w = Window::new(init);
        let mut r = RecvWindow::new(init, init);
        for (op, a, b) in ops {
            let before = w.size();
            let res = match op {
                0 => w.consume(a, S1),
                1 => w.increase(a, S1),
                _ => w.apply_initial_window_size_delta(a, b),
            };
            if res.is_err() {
                prop_assert_eq!(w.size(), before);
            }
            prop_assert!(i64::from(w.size()) >= -i64::from(MAX_WINDOW_SIZE));
            let _ = r.recv(a % 70_000, S1);
            r.release(b % 70_000);
            if let Some(inc) = r.take_update() {
                prop_assert!(inc > 0);
            }
            // Credit is never over-granted: window + in_use <= target.
            prop_assert!(
                i64::from(r.window().size()) + i64::from(r.in_use())
                    <= i64::from(init.min(MAX_WINDOW_SIZE))
            );
        }
    }
}
