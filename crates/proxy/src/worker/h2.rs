//! The worker's side of the HTTP/2 front: frames in, one virtual HTTP/1.1 client connection
//! per stream (see [`crate::front_h2`]), their responses back out as frames.

use super::{Worker, HIGH};
use crate::front::{FState, Front};
use crate::front_h2::{pump, synth_request, Child as H2Child, FEv, Stream as H2Stream, BACKLOG};
use crate::io::FrontIo;

impl Worker {
    /// An HTTP/2 client connection: frames in, a virtual HTTP/1.1 connection per stream,
    /// their responses back out as frames.
    pub(super) fn drive_h2(&mut self, i: usize) {
        let now = self.now;
        let fgen = self.fronts.gen(i);
        let shared = self.shared.clone();
        let Some(f) = self.fronts.at(i) else { return };
        let Some(mut h2) = f.h2.take() else { return };
        let mut out = std::mem::take(&mut f.out);
        let (tls, peer) = (f.io.is_tls(), f.peer);
        let mut failed = false;
        if !f.inbuf.is_empty() {
            match h2.recv(f.inbuf.data(), &mut out) {
                Some(n) => f.inbuf.consume(n),
                None => {
                    f.inbuf.clear();
                    failed = true;
                }
            }
        }
        for ev in std::mem::take(&mut h2.events) {
            match ev {
                FEv::Request { id, fields, end } => {
                    let (bytes, chunked, is_head) = synth_request(&fields, end);
                    let mut child =
                        Front::new(FrontIo::Virtual(tls), peer, &shared.config.front, now);
                    child.parent = Some((i, fgen));
                    child.fresh = false;
                    child.inbuf.extend(&bytes);
                    let (ci, cg) = self.fronts.insert(child);
                    let mut parser = h2lab_wire::h1::ResponseParser::new();
                    parser.start(!is_head);
                    h2.streams.push(H2Stream {
                        id,
                        child: (ci, cg),
                        parser,
                        chunked,
                        head_sent: false,
                        spill: Vec::new(),
                        trailers: Vec::new(),
                        ended: false,
                        done: false,
                    });
                    self.queue_front(ci);
                }
                FEv::Data {
                    id,
                    data,
                    end,
                    trailers,
                } => {
                    let Some(st) = h2.streams.iter().find(|s| s.id == id) else {
                        continue;
                    };
                    let Some(c) = self.fronts.get(st.child.0, st.child.1) else {
                        continue;
                    };
                    if st.chunked {
                        if !data.is_empty() {
                            let mut v = Vec::with_capacity(data.len() + 16);
                            h2lab_wire::h1::encode_chunk(&mut v, &data);
                            c.inbuf.extend(&v);
                        }
                        if end {
                            let mut t = b"0\r\n".to_vec();
                            for (n, v) in &trailers {
                                crate::fields::push_response_field(&mut t, n, v);
                            }
                            t.extend_from_slice(b"\r\n");
                            c.inbuf.extend(&t);
                        }
                    } else {
                        // Content-Length framing has no room for trailers: dropped.
                        c.inbuf.extend(&data);
                    }
                    self.queue_front(st.child.0);
                }
                FEv::Reset { id } => {
                    if let Some(pos) = h2.streams.iter().position(|s| s.id == id) {
                        let st = h2.streams.remove(pos);
                        if self.fronts.get(st.child.0, st.child.1).is_some() {
                            self.kill_front(st.child.0);
                        }
                    }
                }
            }
        }
        for st in h2.streams.iter_mut() {
            let child = self.fronts.get(st.child.0, st.child.1);
            let (was_high, link) = child
                .as_ref()
                .map_or((false, None), |c| (c.out.len() > HIGH, c.link));
            let child = child.map(|c| H2Child {
                over: c.resp.done || c.state == FState::Closing,
                out: &mut c.out,
                trailers: &mut c.trailers,
            });
            pump(st, child, &mut h2.conn, &mut out);
            if let Some(l) = link {
                let low = self
                    .fronts
                    .get(st.child.0, st.child.1)
                    .is_some_and(|c| c.out.len() <= HIGH);
                if was_high && low {
                    self.queue_up(l.up);
                }
                self.return_window(st.child.0);
            }
        }
        let mut k = 0;
        while k < h2.streams.len() {
            if h2.streams[k].done {
                let st = h2.streams.remove(k);
                if self.fronts.get(st.child.0, st.child.1).is_some() {
                    self.kill_front(st.child.0);
                }
            } else {
                k += 1;
            }
        }
        h2.backlogged = h2.streams.iter().any(|st| {
            self.fronts
                .get(st.child.0, st.child.1)
                .is_some_and(|c| c.inbuf.len() > BACKLOG)
        });
        let Some(f) = self.fronts.at(i) else { return };
        f.out = out;
        if failed || h2.conn.is_finished() {
            f.state = FState::Closing;
        }
        f.h2 = Some(h2);
    }
}
