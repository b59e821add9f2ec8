"""A local JSON-over-HTTP server for tests of the OpenAI-compatible clients (no network needed)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

# what a handler returns: status, the body (bytes as they are, anything else as JSON), extra headers
Reply = tuple[int, Any, Mapping[str, str] | None]
Handle = Callable[[str, dict[str, str], Any], Reply]

PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


# the environment variables that point kireme at a chat model (tests clear them)
CHAT_ENV = (
    "KIREME_CHAT_BASE_URL",
    "OPENAI_BASE_URL",
    "KIREME_CHAT_API_KEY",
    "OPENAI_API_KEY",
    "KIREME_CHAT_MODEL",
    "OPENAI_MODEL",
)


def unset_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy from the environment would swallow requests to 127.0.0.1."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


class LocalJsonServer:
    """A ThreadingHTTPServer on 127.0.0.1 that answers every POST with ``handle(path, headers, body)``.

    It starts serving at once; ``base_url`` ends in ``/v1``; call `close` when done.
    """

    def __init__(self, handle: Handle) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                status, payload, headers = handle(self.path, dict(self.headers.items()), body)
                raw = (
                    payload
                    if isinstance(payload, bytes)
                    else json.dumps(payload, ensure_ascii=False).encode()
                )
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):  # the client was killed meanwhile
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
