"""A test's own HTTP server on 127.0.0.1, at a port the system picks, served from a daemon thread."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def start_server(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """`handler` served until `stop_server`; its address is `server_address` ("127.0.0.1", port)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    # serve_forever looks for `shutdown` every poll_interval: 0.05 s rather than its 0.5 s, so stopping is quick
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def stop_server(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


def origin(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` served for the block: yields its origin (`http://127.0.0.1:PORT`), stops it afterwards."""
    server = start_server(handler)
    try:
        yield origin(server)
    finally:
        stop_server(server)
