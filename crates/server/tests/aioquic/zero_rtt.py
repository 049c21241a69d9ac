"""One HTTP/3 connection with aioquic (an independent QUIC stack), for the server's 0-RTT tests.

Usage: python3 zero_rtt.py --port P [--ticket-in F] [--ticket-out F] [--zero-rtt]
                           REQUEST...   (each "METHOD /path")

With --ticket-in the connection resumes that session; with --zero-rtt it sends its requests
before the handshake completes (in 0-RTT when the ticket allows it). With --ticket-out it waits
for the server's session ticket and saves it. Prints one JSON object: resumed, whether 0-RTT
keys were ready when the requests were sent, whether the server accepted early data, and each
response's status and body. Requests the server refused in 0-RTT with 425 are not retried:
the caller sees the 425.
"""

import argparse
import asyncio
import json
import pickle
import ssl
import sys

from aioquic import tls
from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import HandshakeCompleted


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.http = H3Connection(self._quic)
        self.responses = {}
        self.waiters = {}
        self.handshake = None

    def quic_event_received(self, event):
        if isinstance(event, HandshakeCompleted):
            self.handshake = event
        for ev in self.http.handle_event(event):
            if isinstance(ev, (HeadersReceived, DataReceived)):
                r = self.responses.setdefault(ev.stream_id, {"status": None, "body": b""})
                if isinstance(ev, HeadersReceived):
                    for k, v in ev.headers:
                        if k == b":status" and r["status"] is None:
                            r["status"] = int(v)
                else:
                    r["body"] += ev.data
                if ev.stream_ended:
                    w = self.waiters.pop(ev.stream_id, None)
                    if w is not None and not w.done():
                        w.set_result(None)

    def start(self, method, path, authority):
        sid = self._quic.get_next_available_stream_id()
        self.http.send_headers(
            sid,
            [
                (b":method", method.encode()),
                (b":scheme", b"https"),
                (b":authority", authority.encode()),
                (b":path", path.encode()),
            ],
            end_stream=True,
        )
        fut = asyncio.get_running_loop().create_future()
        self.waiters[sid] = fut
        return sid, fut


async def run(args):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    cfg.verify_mode = ssl.CERT_NONE
    cfg.server_name = "localhost"
    if args.ticket_in:
        with open(args.ticket_in, "rb") as f:
            cfg.session_ticket = pickle.load(f)
    tickets = []
    got_ticket = asyncio.Event()

    def save(t):
        tickets.append(t)
        got_ticket.set()

    async with connect(
        args.host,
        args.port,
        configuration=cfg,
        create_protocol=Client,
        session_ticket_handler=save,
        wait_connected=not args.zero_rtt,
    ) as client:
        early_keys = client._quic._cryptos[tls.Epoch.ZERO_RTT].send.is_valid()
        authority = f"localhost:{args.port}"
        started = [client.start(*r.split(" ", 1), authority) + (r,) for r in args.requests]
        client.transmit()
        await asyncio.wait_for(asyncio.gather(*(f for _, f, _ in started)), 20)
        if args.ticket_out:
            await asyncio.wait_for(got_ticket.wait(), 20)
            with open(args.ticket_out, "wb") as f:
                pickle.dump(tickets[-1], f)
        hs = client.handshake
        out = {
            "resumed": bool(hs and hs.session_resumed),
            "early_keys": early_keys,
            "early_data_accepted": bool(hs and hs.early_data_accepted),
            "responses": [
                {
                    "request": r,
                    "status": client.responses.get(sid, {}).get("status"),
                    "body": client.responses.get(sid, {}).get("body", b"").decode("utf-8", "replace"),
                }
                for sid, _, r in started
            ],
        }
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ticket-in")
    p.add_argument("--ticket-out")
    p.add_argument("--zero-rtt", action="store_true")
    p.add_argument("requests", nargs="+")
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
