#!/usr/bin/env python3
"""Writes the hand-built seeds of the HTTP/3 targets (fuzz/seeds/{h3_frame_decode,
qpack_decode,h3_session}/): RFC 9114 frames and RFC 9204 QPACK bytes, static and dynamic
table references, blocked sections, acknowledgements. Run from fuzz/."""
import os


def varint(v):
    if v < 0x40:
        return bytes([v])
    if v < 0x4000:
        return (0x4000 | v).to_bytes(2, "big")
    if v < 0x40000000:
        return (0x80000000 | v).to_bytes(4, "big")
    return (0xC000000000000000 | v).to_bytes(8, "big")


def qint(v, bits, flags=0):
    """QPACK/HPACK prefixed integer."""
    m = (1 << bits) - 1
    if v < m:
        return bytes([flags | v])
    out = [flags | m]
    v -= m
    while v >= 0x80:
        out.append(0x80 | (v & 0x7F))
        v >>= 7
    out.append(v)
    return bytes(out)


def frame(t, payload):
    return varint(t) + varint(len(payload)) + payload


def settings(cap, blocked, max_section=None):
    p = varint(0x01) + varint(cap) + varint(0x07) + varint(blocked)
    if max_section is not None:
        p += varint(0x06) + varint(max_section)
    return frame(0x04, p)


def lit_static_name(idx, value):
    # 01 N T=1 index(4)
    return qint(idx, 4, 0x50) + qint(len(value), 7) + value


def static(idx):
    return qint(idx, 6, 0xC0)


REQ = static(17) + static(1) + static(23) + lit_static_name(0, b"localhost")
STATIC_SECTION = b"\x00\x00" + REQ
# Encoder stream: capacity 4096, insert "x-a: 1" (literal name), duplicate it.
ENC = qint(4096, 5, 0x20) + qint(3, 5, 0x40) + b"x-a" + qint(1, 7) + b"1" + qint(0, 5, 0x00)
# Required insert count 1 (encoded 2 with 128 max entries), base 1, dynamic relative 0.
DYN_SECTION = b"\x02\x00" + REQ + qint(0, 6, 0x80)
DATA = frame(0x00, b"hello")


def rec(op, b):
    out = b""
    while True:
        out += bytes([op, min(len(b), 255)]) + b[:255]
        b = b[255:]
        if not b:
            return out


def write(target, name, data):
    os.makedirs(f"seeds/{target}", exist_ok=True)
    with open(f"seeds/{target}/{name}", "wb") as f:
        f.write(data)


# h3_frame_decode: config octet (context in bits 0-2, split size above), stream bytes.
write("h3_frame_decode", "request-static", bytes([0x00]) + frame(0x01, STATIC_SECTION) + DATA)
write("h3_frame_decode", "request-split-3", bytes([0x10]) + frame(0x01, STATIC_SECTION) + DATA
      + frame(0x01, b"\x00\x00" + lit_static_name(0, b"x")))
write("h3_frame_decode", "response-client", bytes([0x01]) + frame(0x01, b"\x00\x00" + static(25))
      + DATA)
write("h3_frame_decode", "control-server", bytes([0x02]) + settings(4096, 16, 16384)
      + frame(0x07, varint(8)) + frame(0x21, b"grease"))
write("h3_frame_decode", "control-client", bytes([0x0b]) + settings(0, 0)
      + frame(0x0d, varint(3)) + frame(0x03, varint(1)))

# qpack_decode: config (table 4096, blocked 3, section limit 64K), records (channel, len, bytes).
cfg = 0x03 | (0x03 << 2) | (0x02 << 4)
write("qpack_decode", "static", bytes([cfg]) + rec(1, STATIC_SECTION))
write("qpack_decode", "dynamic", bytes([cfg]) + rec(0, ENC) + rec(1, DYN_SECTION))
write("qpack_decode", "blocked-then-insert", bytes([cfg]) + rec(1 | 4, DYN_SECTION) + rec(0, ENC))
write("qpack_decode", "blocked-cancel", bytes([cfg]) + rec(1 | 4, DYN_SECTION) + rec(3 | 4, b"")
      + rec(0, ENC))
# Decoder stream of an encoder: insert count increment, section ack, stream cancel.
write("qpack_decode", "decoder-stream", bytes([cfg]) + rec(2, qint(1, 6, 0x00) + qint(0, 7, 0x80)
      + qint(4, 6, 0x40)))
# Channel 3 with bytes: the encoder encodes `name:value` lines; with c & 4 its peer's
# acknowledgements go back to it, else only the fuzzed decoder stream (channel 2) does.
write("qpack_decode", "encoder-honest-acks", bytes([cfg]) + rec(3 | 4, b"x-a:1\nx-b:22\n:path:/a")
      + rec(3 | 4, b"x-a:1\nx-c:3") + rec(3 | 8, b"x-a:1"))
write("qpack_decode", "encoder-fuzzed-acks", bytes([cfg]) + rec(3, b"x-a:1\nx-b:22") + rec(2, b"\x80")
      + rec(3, b"x-a:1") + rec(2, b"\x01\x40"))

# h3_session: config (server, honest, 16K sections), records (op, len, bytes).
def uni(n):
    return (n << 3) | 1


def bidi(n):
    return n << 3


def fin_bidi(n):
    return (n << 3) | 2


CONTROL = b"\x00" + settings(4096, 16)
for name, cfg in (("server-honest", 0x0a), ("server-fuzzed-acks", 0x08)):
    write("h3_session", name + "-static", bytes([cfg]) + rec(uni(0), CONTROL)
          + rec(bidi(0), frame(0x01, STATIC_SECTION) + DATA) + rec(fin_bidi(0), b""))
    write("h3_session", name + "-dynamic", bytes([cfg]) + rec(uni(0), CONTROL)
          + rec(uni(1), b"\x02" + ENC) + rec(uni(2), b"\x03")
          + rec(bidi(0), frame(0x01, DYN_SECTION)) + rec(fin_bidi(0), b"")
          + rec(bidi(1), frame(0x01, DYN_SECTION) + DATA + frame(0x01, b"\x00\x00" + lit_static_name(2, b"x")))
          + rec(fin_bidi(1), b""))
    write("h3_session", name + "-blocked", bytes([cfg]) + rec(uni(0), CONTROL)
          + rec(bidi(0), frame(0x01, DYN_SECTION) + DATA) + rec(fin_bidi(0), b"")
          + rec(uni(1), b"\x02" + ENC[:3]) + rec(uni(1), ENC[3:]))
write("h3_session", "client-response", bytes([0x09]) + rec(uni(0), b"\x00" + settings(4096, 16)
      + frame(0x07, varint(4))) + rec(uni(1), b"\x02" + ENC)
      + rec(bidi(0), frame(0x01, b"\x02\x00" + static(25) + qint(0, 6, 0x80)) + DATA)
      + rec(fin_bidi(0), b""))
write("h3_session", "client-push-stream", bytes([0x19]) + rec(uni(0), b"\x00" + settings(0, 0))
      + rec(uni(1), b"\x01" + varint(0) + frame(0x01, STATIC_SECTION))
      + rec(bidi(0), frame(0x01, b"\x00\x00" + static(25) + static(4)) + frame(0x00, b"")))
