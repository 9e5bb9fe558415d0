#!/usr/bin/env python3
"""A minimal external scheme for the emulator's tests: a TCP bulk sender and a receiver that
drains the connection. `pair.py recv PORT` listens; `pair.py send IP PORT` connects and sends
until it is killed (the emulator stops it at the flow's stop time). Any further arguments are
ignored: tests add a tag to find their processes."""

import socket
import sys


def receive(port: int) -> None:
    with socket.create_server(("0.0.0.0", port)) as server:
        conn, _ = server.accept()
        with conn:
            while conn.recv(1 << 20):
                pass


def send(ip: str, port: int) -> None:
    chunk = b"x" * (1 << 16)
    with socket.create_connection((ip, port)) as conn:
        while True:
            conn.sendall(chunk)


if __name__ == "__main__":
    if sys.argv[1:2] == ["recv"]:
        receive(int(sys.argv[2]))
    elif sys.argv[1:2] == ["send"]:
        send(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit("usage: pair.py recv PORT | pair.py send IP PORT")
