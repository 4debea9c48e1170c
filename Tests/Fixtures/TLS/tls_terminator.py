#!/usr/bin/env python3
"""An independent TLS endpoint for Contrail's tests: Python's ssl module terminates TLS in front of a
plain TCP backend (Contrail's own plain WebSocket server), as stunnel or nginx would.

    tls_terminator.py --backend PORT --serve NAME CERT KEY [--serve NAME CERT KEY ...]
                      [--max-tls NAME 1.1|1.2]

Each --serve listens on an ephemeral loopback port with that certificate and prints
"NAME listening on PORT"; then "ready". --max-tls caps NAME's protocol version (1.1 also allows
the old versions, which OpenSSL 3 only speaks at security level 0). Every accepted connection is decrypted and piped to
127.0.0.1:BACKEND in both directions. It runs until killed."""
import argparse
import socket
import ssl
import sys
import threading


def pipe(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((target, socket.SHUT_WR),):
            try:
                sock.shutdown(how)
            except OSError:
                pass


def serve_connection(raw, context, backend_port):
    try:
        secure = context.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        raw.close()
        return
    try:
        plain = socket.create_connection(("127.0.0.1", backend_port))
    except OSError:
        secure.close()
        return
    up = threading.Thread(target=pipe, args=(secure, plain), daemon=True)
    up.start()
    pipe(plain, secure)
    up.join()
    for sock in (secure, plain):
        try:
            sock.close()
        except OSError:
            pass


def listen(name, cert, key, backend_port, max_tls=None):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    if max_tls == "1.1":
        context.set_ciphers("DEFAULT:@SECLEVEL=0")
        context.minimum_version = ssl.TLSVersion.TLSv1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    elif max_tls == "1.2":
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    print(f"{name} listening on {server.getsockname()[1]}", flush=True)

    def accept_loop():
        while True:
            raw, _ = server.accept()
            threading.Thread(target=serve_connection, args=(raw, context, backend_port), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", type=int, required=True)
    parser.add_argument("--serve", nargs=3, action="append", metavar=("NAME", "CERT", "KEY"), required=True)
    parser.add_argument("--max-tls", nargs=2, action="append", metavar=("NAME", "VERSION"), default=[])
    args = parser.parse_args()
    caps = dict(args.max_tls)
    for name, cert, key in args.serve:
        listen(name, cert, key, args.backend, caps.get(name))
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
