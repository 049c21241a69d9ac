#!/usr/bin/env python3
"""A tiny recording TCP proxy for building fuzz seeds from real traffic.

    record.py LISTEN_PORT TARGET_PORT OUT_DIR

Accepts on 127.0.0.1:LISTEN_PORT, connects each client to 127.0.0.1:TARGET_PORT, forwards
both directions unchanged and writes what each side sent to OUT_DIR/conn-N.c2s (client to
server) and OUT_DIR/conn-N.s2c (server to client). Prints "ready" once listening. Runs until
killed.
"""
import os
import socket
import sys
import threading


def pump(src, dst, path):
    with open(path, "wb") as f:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            f.write(data)
            f.flush()
            try:
                dst.sendall(data)
            except OSError:
                break
    for s in (dst,):
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main():
    listen_port, target_port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    os.makedirs(out, exist_ok=True)
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", listen_port))
    lsock.listen(64)
    print("ready", flush=True)
    n = 0
    while True:
        client, _ = lsock.accept()
        server = socket.create_connection(("127.0.0.1", target_port))
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        base = os.path.join(out, "conn-%d" % n)
        n += 1
        threading.Thread(target=pump, args=(client, server, base + ".c2s"), daemon=True).start()
        threading.Thread(target=pump, args=(server, client, base + ".s2c"), daemon=True).start()


if __name__ == "__main__":
    main()
