//! The send path's GSO batches on a real loopback socket: a batch sized by
//! `UdpIo::max_segments` goes out whole, and a batch the kernel refuses is counted as
//! failed (lost, as on the wire), never kept waiting for a writable edge that will not come.
//!
//! Before the batch size was capped, `serve --h3` sent 64 datagrams of 1,452 octets in one
//! `sendmsg` (92,928 octets): the kernel refused each with EMSGSIZE, `quinn-udp` reported
//! success, and every such batch was lost; 100 KB responses over HTTP/3 waited a probe
//! timeout (about 27 ms on loopback) for one request in ten.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use h2lab_quic::quinn_proto::Transmit;
use h2lab_quic::udp::MAX_GSO_PAYLOAD;
use h2lab_quic::UdpIo;

/// The datagram size quinn-proto reaches on loopback after MTU discovery.
const MTU: u16 = 1452;

fn pair() -> (UdpIo, UdpSocket) {
    let rx = UdpSocket::bind("127.0.0.1:0").expect("bind receiver");
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").expect("bind sender");
    (UdpIo::new(tx, true).expect("UdpIo"), rx)
}

fn transmit(to: std::net::SocketAddr, size: usize, segment: Option<usize>) -> Transmit {
    Transmit {
        destination: to,
        ecn: None,
        size,
        segment_size: segment,
        src_ip: None,
    }
}

/// Receives `n` datagrams (each read is one datagram: the receiver has no GRO) and returns
/// their sizes.
fn receive(rx: &UdpSocket, n: usize) -> Vec<usize> {
    let mut buf = vec![0u8; 65_536];
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut sizes = Vec::new();
    while sizes.len() < n && Instant::now() < deadline {
        match rx.recv(&mut buf) {
            Ok(len) => sizes.push(len),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => break,
            Err(e) => panic!("recv: {e}"),
        }
    }
    sizes
}

#[test]
fn a_full_batch_goes_out_whole() {
    let (mut io, rx) = pair();
    let to = rx.local_addr().unwrap();
    let n = io.max_segments(MTU);
    assert!(n * usize::from(MTU) <= MAX_GSO_PAYLOAD);
    let bytes = vec![7u8; n * usize::from(MTU)];
    let t = transmit(to, bytes.len(), (n > 1).then_some(usize::from(MTU)));
    assert!(
        io.send(&t, &bytes),
        "the socket buffer is empty: nothing blocks"
    );
    assert_eq!(io.failed_sends, 0, "the kernel took the batch");
    assert_eq!(io.datagrams_out, n as u64);
    let sizes = receive(&rx, n);
    assert_eq!(sizes.len(), n, "every datagram of the batch arrives");
    assert!(sizes.iter().all(|&s| s == usize::from(MTU)));
}

#[test]
fn a_batch_the_kernel_refuses_is_counted_and_not_kept() {
    let (mut io, rx) = pair();
    let to = rx.local_addr().unwrap();
    if io.max_segments(MTU) == 1 {
        eprintln!("no UDP GSO on this kernel: nothing to refuse");
        return;
    }
    // The old batch: 64 datagrams of 1,452 octets, more than one send may carry.
    let bytes = vec![7u8; 64 * usize::from(MTU)];
    let t = transmit(to, bytes.len(), Some(usize::from(MTU)));
    assert!(
        io.send(&t, &bytes),
        "a refused send is done with, not pending"
    );
    assert!(!io.has_pending());
    assert_eq!(io.failed_sends, 1);
    assert_eq!(io.datagrams_out, 0, "nothing counted as sent");
    // The socket still works: the next datagram arrives.
    let one = vec![1u8; 100];
    assert!(io.send(&transmit(to, one.len(), None), &one));
    assert_eq!(receive(&rx, 1), vec![100]);
}
