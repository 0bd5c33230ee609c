"""A server on loopback that lies the way real ones do by accident or on purpose: an answer
cut off mid-header, a byte a second, a body cut short, whatever bytes a test gives it."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def lying_server(answer: Callable[[socket.socket, bytes], None]) -> Iterator[int]:
    """Serve on a free loopback port: each connection's request (its head) goes to `answer`,
    which writes what it likes and returns; the connection is then closed. Yields the port."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def one(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            request = b""
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in request:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    request += chunk
                answer(conn, request)

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def says(data: bytes) -> Callable[[socket.socket, bytes], None]:
    """An answer of exactly these bytes, then the connection closes."""
    return lambda conn, request: conn.sendall(data)


def trickles(data: bytes, every: float = 1.0) -> Callable[[socket.socket, bytes], None]:
    """These bytes one at a time, `every` seconds apart (a slowloris server)."""
    def answer(conn: socket.socket, request: bytes) -> None:
        for i in range(len(data)):
            conn.sendall(data[i:i + 1])
            time.sleep(every)
    return answer
