"""`rlvr dashboard`: the report page served live over the standard library's HTTP server.

    /             the page (plotly.js inlined: the browser needs nothing else)
    /data.json    {version, last_step, num_steps}: cheap, what the page polls
    /report.json  everything the page shows, when `version` changed

The page is rebuilt from the store only when the store changed (its parts' names and
sizes), so many open pages polling cost a directory listing each, not a read of the run.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from rlvr.report import data as report_data
from rlvr.report import html as report_html

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
_STEP = re.compile(r"step-(\d+)")


class Dashboard:
    """The runs' content, rebuilt when their stores change (thread-safe)."""

    def __init__(self, sources: list[str], *, top: int = 5, max_flagged: int = 20, interval_s: float = 2.0) -> None:
        from rlvr.trace.parquet import run_store_uri

        self.sources = list(sources)
        self.uris = [run_store_uri(s) for s in self.sources]
        self.top, self.max_flagged, self.interval_s = top, max_flagged, interval_s
        self._lock = threading.Lock()
        self._version = ""
        self._content: dict[str, Any] | None = None
        self._page: str | None = None

    def status(self) -> dict[str, Any]:
        signatures = [report_data.store_signature(u) for u in self.uris]
        num_steps, last = [], None
        for sig in signatures:
            steps = [int(m.group(1)) for table, name, _ in sig if table == "metrics" and (m := _STEP.match(name))]
            num_steps.append(len(steps))
            if steps:
                last = max(steps) if last is None else max(last, max(steps))
        return {"version": report_data.version_of(signatures), "last_step": last, "num_steps": num_steps}

    def content(self) -> dict[str, Any]:
        version = self.status()["version"]
        with self._lock:
            if self._content is None or version != self._version:
                runs = report_data.load_runs(self.sources, top=self.top, max_flagged=self.max_flagged)
                self._content = report_html.content(runs, version)
                self._version, self._page = version, None
            return self._content

    def page(self) -> str:
        content = self.content()
        with self._lock:
            if self._page is None or content["version"] != self._version:
                self._page = report_html.page(content, live_interval_s=self.interval_s)
            return self._page


def _handler(dash: Dashboard) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "rlvr-dashboard"

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if not _host_allowed(self.headers.get("Host", ""), self.server.server_address):
                # a page elsewhere that rebinds its DNS name to this address cannot read the run
                self._send(421, "text/plain; charset=utf-8", b"misdirected request: unknown Host\n")
                return
            try:
                if path in ("/", "/index.html"):
                    self._send(200, "text/html; charset=utf-8", dash.page().encode())
                elif path == "/data.json":
                    self._send(200, "application/json", json.dumps(dash.status()).encode())
                elif path == "/report.json":
                    self._send(200, "application/json", json.dumps(dash.content(), ensure_ascii=False).encode())
                elif path == "/favicon.ico":
                    self._send(204, "image/x-icon", b"")
                else:
                    self._send(404, "text/plain; charset=utf-8", b"not found\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the browser went away
            except Exception as e:  # the store unreadable right now: say so, keep serving
                print(f"rlvr dashboard: {path}: {type(e).__name__}: {e}", file=sys.stderr)
                with contextlib.suppress(OSError):
                    self._send(500, "text/plain; charset=utf-8", f"{type(e).__name__}: {e}\n".encode())

        def _send(self, code: int, ctype: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # no access log on the terminal

    return Handler


def _host_allowed(header: str, address: Any) -> bool:
    """The Host header names this server: a loopback name or the address it is bound to."""
    host = header.rsplit(":", 1)[0] if not header.startswith("[") else header[1:].split("]")[0]
    bound = str(address[0])
    return host in LOCAL_HOSTS or host == bound or (bound in ("0.0.0.0", "::") and bool(host))


def make_server(dash: Dashboard, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server for `dash` bound to host:port (0: any free port), not yet serving."""

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    return Server((host, port), _handler(dash))


def serve(
    sources: list[str],
    host: str = "127.0.0.1",
    port: int = 8050,
    *,
    interval_s: float = 2.0,
    top: int = 5,
    max_flagged: int = 20,
) -> int:
    """Serve until Ctrl-C (then 0)."""
    dash = Dashboard(sources, top=top, max_flagged=max_flagged, interval_s=interval_s)
    dash.content()  # read the store once now: a broken one fails here, not in the browser
    server = make_server(dash, host, port)
    bound = server.server_address[1]
    shown = f"[{host}]" if ":" in host else host
    if host not in LOCAL_HOSTS:
        print(
            f"rlvr dashboard: warning: listening on {host}: anyone who can reach it reads the run's trajectories",
            file=sys.stderr,
        )
    print(f"rlvr dashboard: serving {', '.join(sources)} at http://{shown}:{bound}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        print("rlvr dashboard: stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0
