#!/usr/bin/env python3
"""An independent TLS client for Contrail's tests (Python's ssl module, verifying against a CA file
with host-name checking): opens a WebSocket over TLS, sends one masked text message and prints the
echo, or fetches one page over HTTPS.

    tls_ws_client.py --port PORT --ca CA.pem [--host 127.0.0.1] [--path /] [--get PATH] [--pin-print]

Prints "tls VERSION", then "echo: TEXT" (or "status: LINE"); exits 1 with "error: ..." on failure."""
import argparse
import base64
import hashlib
import os
import socket
import ssl
import struct
import sys


def read_exact(sock, count):
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise EOFError("the server closed the connection")
        data += chunk
    return data


def read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(1)
        if not chunk:
            raise EOFError("the server closed the connection during the HTTP head")
        data += chunk
    return data.decode("latin-1")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--path", default="/")
    parser.add_argument("--get")
    parser.add_argument("--message", default="hello over TLS")
    args = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(args.ca)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        raw = socket.create_connection((args.host, args.port), timeout=20)
        sock = context.wrap_socket(raw, server_hostname=args.host)
    except (ssl.SSLError, OSError) as error:
        print(f"error: {error}", flush=True)
        return 1
    print(f"tls {sock.version()}", flush=True)
    if args.get:
        sock.sendall(f"GET {args.get} HTTP/1.1\r\nHost: {args.host}:{args.port}\r\nConnection: close\r\n\r\n".encode())
        head = read_head(sock)
        print(f"status: {head.splitlines()[0]}", flush=True)
        return 0
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET {args.path} HTTP/1.1\r\nHost: {args.host}:{args.port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
    sock.sendall(request.encode())
    head = read_head(sock)
    expected = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    if not head.startswith("HTTP/1.1 101") or expected not in head:
        print(f"error: bad handshake response: {head.splitlines()[0]}", flush=True)
        return 1
    payload = args.message.encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    assert len(payload) < 126
    sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
    first, second = read_exact(sock, 2)
    length = second & 0x7F
    if length == 126:
        length = struct.unpack("!H", read_exact(sock, 2))[0]
    elif length == 127:
        length = struct.unpack("!Q", read_exact(sock, 8))[0]
    text = read_exact(sock, length).decode()
    print(f"echo: {text}", flush=True)
    # A normal close: close frame (1000), then the server's close frame, then close_notify.
    mask = os.urandom(4)
    body = struct.pack("!H", 1000)
    sock.sendall(bytes([0x88, 0x80 | len(body)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(body)))
    first, second = read_exact(sock, 2)
    read_exact(sock, second & 0x7F)
    print(f"closed: opcode {first & 0x0F}", flush=True)
    try:
        sock.unwrap()
        print("close_notify: received", flush=True)
    except (ssl.SSLError, OSError) as error:
        print(f"close_notify: missing ({error})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
