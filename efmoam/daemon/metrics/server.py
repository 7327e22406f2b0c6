"""The HTTP endpoint: GET /metrics on its own thread, started and stopped by the daemon."""

from __future__ import annotations

import http.server
import socket
import threading
from typing import Any

from efmoam.config.model import MetricsDetail
from efmoam.daemon.metrics.exposition import CONTENT_TYPE, Renderer
from efmoam.daemon.metrics.telemetry import DaemonLike


def _accepts_gzip(header: str | None) -> bool:
    """Whether an Accept-Encoding header allows gzip (named, and not with q=0)."""
    for item in (header or "").split(","):
        coding, _, params = item.partition(";")
        if coding.strip().lower() == "gzip":
            quality = params.strip()
            if not quality.startswith("q="):
                return True
            try:
                return float(quality[2:]) > 0
            except ValueError:
                return False
    return False


#: seconds a scraper may stall (sending its request, or reading the body) before it is dropped
CLIENT_TIMEOUT = 10.0
#: seconds between the serving thread's looks at a close request (`close` waits up to this)
CLOSE_POLL = 0.1
#: scrapes served at once; more connections are closed at once (a scraper retries)
MAX_CLIENTS = 64


class _Handler(http.server.BaseHTTPRequestHandler):
    daemon_ref: DaemonLike
    renderer: Renderer
    timeout = CLIENT_TIMEOUT  # applied to the connection: a stalled client ends its thread

    def do_GET(self) -> None:
        if self.path.split("?")[0] not in ("/metrics", "/"):
            self.send_error(404)
            return
        compressed = _accepts_gzip(self.headers.get("Accept-Encoding"))
        parts = self.renderer.render(self.daemon_ref, compressed=compressed)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        if compressed:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(sum(map(len, parts))))
        self.end_headers()
        for part in parts:
            self.wfile.write(part)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # scrapes are not logged


class _Server(http.server.ThreadingHTTPServer):
    """One thread per scrape, at most `MAX_CLIENTS` of them."""

    daemon_threads = True
    refused = 0  #: connections closed because `MAX_CLIENTS` were being served

    def server_activate(self) -> None:
        self._slots = threading.BoundedSemaphore(MAX_CLIENTS)
        super().server_activate()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _Server6(_Server):
    address_family = socket.AF_INET6


class MetricsServer:
    """Serves the metrics of `daemon` at `detail` at http://address:port/metrics until `close`.

    Raises OSError when the address cannot be bound.
    """

    def __init__(self, daemon: DaemonLike, address: str, port: int, detail: MetricsDetail = MetricsDetail.FULL) -> None:
        self._handler: type[_Handler] = type(
            "Handler", (_Handler,), {"daemon_ref": daemon, "renderer": Renderer(detail)}
        )
        server_class = _Server6 if ":" in address else _Server
        self._server = server_class((address, port), self._handler)
        self.address = address
        self.port = int(self._server.server_address[1])  # the bound port (port 0: chosen by the kernel)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(CLOSE_POLL,), name="efmoam-metrics", daemon=True
        )
        self._thread.start()

    @property
    def detail(self) -> MetricsDetail:
        return self._handler.renderer.detail

    @detail.setter
    def detail(self, detail: MetricsDetail) -> None:
        """From the next scrape on (a scrape under way finishes at the detail it began with)."""
        if detail is not self.detail:
            self._handler.renderer = Renderer(detail)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)
