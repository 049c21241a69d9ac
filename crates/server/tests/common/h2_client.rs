//! A raw HTTP/2 test client over a blocking socket on the wire crate's client-role
//! `Connection`: frame-level control (settings, resets, PRIORITY_UPDATE) that a full client
//! library hides, events delivered to the test's own [`Sink`].

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use h2lab_wire::h2::{Connection, Events, HeaderEncoder, Limits, LocalSettings, Role};

/// What a test records from the connection; it must notice the server's SETTINGS.
pub trait Sink: Events + Default {
    /// The server's SETTINGS arrived (and were acknowledged).
    fn settings_seen(&self) -> bool;
}

/// A client connection; `sink` holds what the test recorded.
pub struct H2Client<S: Sink> {
    pub sock: TcpStream,
    pub conn: Connection,
    pub sink: S,
    inbuf: Vec<u8>,
    pub out: Vec<u8>,
    /// Raw bytes read from the socket.
    pub read: usize,
}

impl<S: Sink> H2Client<S> {
    /// Sends the preface and `local` SETTINGS over `sock` and waits for the server's
    /// SETTINGS, so requests follow the handshake (as a browser's do on a long path).
    pub fn handshake(sock: TcpStream, local: LocalSettings) -> Self {
        sock.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut c = H2Client {
            sock,
            conn: Connection::new(Role::Client, local, Limits::new()),
            sink: S::default(),
            inbuf: Vec::new(),
            out: Vec::new(),
            read: 0,
        };
        c.conn.start(&mut c.out);
        c.flush();
        while !c.sink.settings_seen() {
            c.read_once();
        }
        c
    }

    /// Sends a request with these fields (no body); returns its stream id.
    pub fn request(&mut self, fields: &[(&[u8], &[u8])]) -> u32 {
        let id = self
            .conn
            .send_request(
                |enc, buf| enc.encoder().encode(fields.iter().copied(), buf),
                true,
                &mut self.out,
            )
            .unwrap();
        self.flush();
        id.get()
    }

    /// `GET path`; returns the stream id.
    pub fn get(&mut self, path: &str) -> u32 {
        self.request(&[
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (b":authority", b"localhost"),
            (b":path", path.as_bytes()),
        ])
    }

    /// Writes what the connection queued.
    pub fn flush(&mut self) {
        self.sock.write_all(&self.out).unwrap();
        self.out.clear();
    }

    /// One read, processed (answers, e.g. SETTINGS ACKs, are written back).
    pub fn read_once(&mut self) {
        let mut b = [0u8; 16 * 1024];
        let n = self.sock.read(&mut b).expect("server answers");
        assert!(n > 0, "server closed the connection");
        self.read += n;
        self.inbuf.extend_from_slice(&b[..n]);
        let used = self
            .conn
            .recv(&self.inbuf, &mut self.out, &mut self.sink)
            .expect("no connection error");
        self.inbuf.drain(..used);
        if !self.out.is_empty() {
            self.flush();
        }
    }

    /// Reads until `done` holds for the sink.
    pub fn until(&mut self, mut done: impl FnMut(&S) -> bool) {
        while !done(&self.sink) {
            self.read_once();
        }
    }
}
