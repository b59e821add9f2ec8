"""``kireme serve``: one process keeps the model and the index open and answers over HTTP."""

from __future__ import annotations

import errno
import ipaddress
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import click

from kireme.cli.common import EXIT_USAGE, ByteSize, http_limit_options
from kireme.cli.progress import echo_err
from kireme.errors import IndexNotFoundError, KiremeError, MissingExtraError

TOKEN_ENV = "KIREME_SERVE_TOKEN"

SERVE_EXAMPLES = """
\b
Examples:
  kireme serve                                   # ./.kireme/index on http://127.0.0.1:8000
  kireme serve --db docs-index --port 8765
  KIREME_SERVE_TOKEN=s3cret kireme serve --host 0.0.0.0     # other machines: a token is required
  kireme serve --no-index                        # chunking and the page only
  curl -s localhost:8000/search -H 'content-type: application/json' \\
       -d '{"query": "宿泊費の上限", "k": 3, "budget": 1500}' | jq .context.text

\b
Routes: POST /chunk (JSON {"text", "strategy", "max_size", ...: kireme chunk's options with
underscores}, or multipart with a 'file'), POST /search ({"query", "k", "mode", "filters", "budget"}),
POST /ask ({"question", ...; "stream": true for server-sent events}), GET /documents, GET /health,
GET / (a page: chunks drawn over the text, the distance curve, search), GET /docs (OpenAPI, offline).
Errors are {"error": "one line"} with a 4xx/5xx status. A `kireme index` run into the same --db is
picked up by the next request, whole (never a half-written index).
Chat for /ask: --chat-base-url/--chat-model, else KIREME_CHAT_BASE_URL, KIREME_CHAT_MODEL and
KIREME_CHAT_API_KEY (or OPENAI_*), as for kireme ask.
"""


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one), or a usage error in one line."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise click.UsageError(f"--host {host}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise click.UsageError(f"port {port} on {host} is in use: choose another with --port") from None
        raise click.UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


@click.command("serve", epilog=SERVE_EXAMPLES)
@click.option(
    "--db",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".kireme") / "index",
    show_default=True,
    help="The index directory that /search, /ask and /documents answer from (it may be created later by "
    "kireme index: the server picks it up).",
)
@click.option("--no-index", is_flag=True, help="Serve chunking and the page only (no --db).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (0: any free one)."
)
@click.option(
    "--token",
    default=None,
    metavar="TOKEN",
    help=f"Require 'Authorization: Bearer TOKEN' on every route (better: the {TOKEN_ENV} variable, which "
    "other users cannot read in the process list). Needed to listen on anything but loopback.",
)
@click.option(
    "--max-request-size",
    type=ByteSize(),
    default="8M",
    show_default=True,
    help="Largest request body (a text or an uploaded file); larger ones get 413.",
)
@click.option("--chat-base-url", default=None, help="/ask: an OpenAI-compatible endpoint (…/v1).")
@click.option("--chat-model", default=None, help="/ask: the chat model's name.")
@http_limit_options("the chat model of /ask")
@click.option(
    "--warm/--no-warm",
    default=True,
    show_default=True,
    help="Load the embedder and the BM25 model before listening, so the first request does not wait.",
)
def serve_command(
    db: Path,
    no_index: bool,
    host: str,
    port: int,
    token: str | None,
    max_request_size: int,
    chat_base_url: str | None,
    chat_model: str | None,
    http_max_response_bytes: int | None,
    http_deadline: float | None,
    warm: bool,
) -> None:
    """Keep the model and the index open and answer over HTTP: chunk, search, ask, and a page to see the
    cuts. Stop with Ctrl-C (or SIGTERM): requests under way are finished first."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if not token and not _is_loopback(host):
        echo_err(
            f"kireme: error: refusing to listen on {host} without a token: anyone who reaches it could read "
            f"the index; set {TOKEN_ENV} (or --token), or keep --host 127.0.0.1"
        )
        sys.exit(EXIT_USAGE)
    try:
        import uvicorn

        from kireme.serve.app import ChatSettings, create_app
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "fastapi"
        echo_err(f"kireme: error: {MissingExtraError('kireme serve', 'serve', missing)}")
        sys.exit(EXIT_USAGE)
    app = create_app(
        None if no_index else db,
        token=token,
        max_request_size=max_request_size,
        chat=ChatSettings(
            base_url=chat_base_url,
            model=chat_model,
            max_response_bytes=http_max_response_bytes,
            deadline=http_deadline,
        ),
    )
    described = _prepare(app.state.index, warm)
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    echo_err(f"kireme: serving on http://{shown}:{bound} — {described}; Ctrl-C stops")
    if token:
        echo_err("kireme: every route needs the token (a browser: open /?token=… once)")
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=10)
    server = uvicorn.Server(config)
    stopped: list[int] = []
    # uvicorn stops gracefully on SIGINT/SIGTERM, then re-raises the signal to the handlers it found:
    # these, so that a requested stop ends the command with exit 0 and one line, not a traceback
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, frame: stopped.append(number))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    if stopped:
        echo_err(f"kireme: stopped ({signal.Signals(stopped[0]).name})")


def _prepare(index: Any, warm: bool) -> str:
    """Open (and with ``warm`` load) the index; what the start line says about it."""
    if index is None:
        return "chunking only (no index)"
    try:
        if warm:
            index.warm()
        info = index.health()
    except IndexNotFoundError:
        return (
            f"no index in {index.db} yet (kireme index PATH --db {index.db}; it is picked up when it exists)"
        )
    except KiremeError as exc:  # damaged, busy, its embedder missing: said now, and per request until fixed
        echo_err(f"kireme: warning: {exc}")
        return f"index {index.db} (cannot be searched now)"
    return f"index {index.db}: {info['documents']} document(s), {info['rows']} chunks, embedder {info['embedder']}"
