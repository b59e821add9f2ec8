"""Contextual retrieval: a chat model writes a short context for each chunk before it is embedded.

A chunk cut from the middle of a document ("上限は1泊12,000円とする。") is ambiguous alone. Asked with
the whole document in view, a model can say where it sits ("旅費規程の第3条、国内出張の宿泊費の上限を定める
条文。"); that sentence goes in front of the chunk's ``embed_text`` (Anthropic's "contextual retrieval"),
so the vector and the BM25 index both see it. ``text``, ``start`` and ``end`` never change.

How ``embed_text`` is made (stable, so the same answer always gives the same text)::

    <context, whitespace collapsed to single spaces, one line>
    <blank line>
    <the chunker's embed_text: title and heading path (--context), then the chunk text>

The first blank line of a contextualized ``embed_text`` therefore ends the model's context.

The request (one per chunk, OpenAI-compatible ``/chat/completions``, temperature 0) is built so that a
provider's prompt cache serves every chunk of a document: a system message with the instruction (the
same for every document of a language: Japanese documents get a Japanese instruction, others are told to
answer in the document's language), then one user message with the document first and the chunk last::

    <document>
    …the document, or a window of it…
    </document>

    <chunk>
    …the chunk's text…
    </chunk>

Long documents: when the document is longer than ``window`` characters, the part sent is a
``window``-character slice around the chunk: it starts ``window // 2`` characters before the chunk's
middle, rounded down to a multiple of ``window // 4`` (and moved back to end at the document's end), so
neighbouring chunks send the very same slice (one cached prefix), and a chunk up to ``window // 2``
characters long lies wholly inside it. ``[…]`` marks where the document was cut.

Answers are cached by a hash of (model, prompt version, the messages) — the messages hold the document
and the chunk, so the key follows the chunk's content and position exactly — in one SQLite file beside
the index's embedding cache (``<db>/cache/contexts.sqlite``), committed after each document, so a re-run
or a run after a crash asks nothing that was answered before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from kireme.document import Chunk, Document
from kireme.errors import ChatError, ConfigError

log = logging.getLogger(__name__)

PROMPT_VERSION = 1  # bump when the instructions or the message layout change: every context is asked again
DEFAULT_WINDOW = 8000  # characters of the document sent with each chunk
DEFAULT_CONCURRENCY = 4
MAX_ANSWER_TOKENS = 300  # the answer is 1-2 sentences; a reasoning model's thoughts need some room too
STOP_AFTER_FAILED_DOCUMENTS = 5  # documents in a row the model failed for: then no more requests
CACHE_FILE = "contexts.sqlite"
SEPARATOR = "\n\n"  # between the model's context and the chunker's embed_text
CUT = "[…]"

INSTRUCTION_JA = (
    "あなたは検索用の索引づくりを手伝います。<document> に文書（長い文書はその一部）、<chunk> にその文書の一部分"
    "（チャンク）が与えられます。このチャンクが文書全体の中でどこに位置し、何について述べているかを、検索でこの"
    "チャンクが見つかりやすくなるように、日本語で1〜2文の簡潔な説明として書いてください。説明だけを答え、"
    "前置き・引用・箇条書きは不要です。"
)
INSTRUCTION_EN = (
    "You help build a search index. <document> holds a document (or a part of a long one) and <chunk> "
    "holds one passage (chunk) of it. Write a short, succinct context of 1-2 sentences that situates this "
    "chunk within the overall document, to improve search retrieval of the chunk. Answer in the language "
    "of the document, with the context only: no preamble, no quotation, no list."
)

_KANA = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9d]")
_LETTER = re.compile(r"\w")
_THINK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)


class ChatModel(Protocol):
    """What a `Contextualizer` needs of a chat client (`kireme.index.chat.ChatClient` is one)."""

    model: str

    def complete(
        self, messages: Sequence[Mapping[str, Any]], temperature: float = 0, max_tokens: int | None = None
    ) -> str: ...


# ------------------------------------------------------------------------------------------- the prompt


def is_japanese(text: str, sample: int = 4000) -> bool:
    """Whether ``text`` reads as Japanese: kana make up at least 5% of the letters of its first
    ``sample`` characters (kana tell Japanese from Chinese; kanji alone do not)."""
    head = text[:sample]
    letters = len(_LETTER.findall(head))
    return letters > 0 and len(_KANA.findall(head)) * 20 >= letters


def document_window(length: int, start: int, end: int, window: int) -> tuple[int, int]:
    """The slice ``[lo, hi)`` of a ``length``-character document sent with the chunk ``[start, end)``.

    The whole document when it fits ``window``; else ``window`` characters starting ``window // 2``
    before the chunk's middle, rounded down to a multiple of ``window // 4`` and kept inside the
    document (see the module's docstring).
    """
    if window < 1:
        raise ConfigError(f"the contextualize window must be at least 1 character, got {window}")
    if length <= window:
        return 0, length
    step = max(1, window // 4)
    middle = (start + end) // 2
    lo = max(0, middle - window // 2) // step * step
    lo = min(lo, length - window)
    return lo, lo + window


def instruction(doc: Document) -> str:
    """The system message for ``doc``: Japanese for a Japanese document, else English (answer in the
    document's language)."""
    return INSTRUCTION_JA if is_japanese(doc.text) else INSTRUCTION_EN


def build_messages(
    doc: Document, chunk: Chunk, window: int = DEFAULT_WINDOW, system: str | None = None
) -> list[dict[str, str]]:
    """The chat messages that ask for the context of ``chunk``: instruction, then document, chunk last."""
    lo, hi = document_window(len(doc.text), chunk.start, chunk.end, window)
    part = doc.text[lo:hi]
    if lo > 0:
        part = f"{CUT}\n{part}"
    if hi < len(doc.text):
        part = f"{part}\n{CUT}"
    user = f"<document>\n{part}\n</document>\n\n<chunk>\n{chunk.text}\n</chunk>"
    return [
        {"role": "system", "content": system if system is not None else instruction(doc)},
        {"role": "user", "content": user},
    ]


def clean_context(answer: str) -> str:
    """The model's answer as one line: a leading ``<think>…</think>`` block dropped, surrounding quotes
    and a ``Context:``/``文脈：`` label removed, every run of whitespace made one space."""
    text = _THINK.sub("", answer)
    text = " ".join(text.split())
    text = re.sub(r"^(?:context|文脈|説明)\s*[:：]\s*", "", text, flags=re.IGNORECASE)
    if len(text) >= 2 and (text[0], text[-1]) in {('"', '"'), ("「", "」"), ("'", "'")}:
        text = text[1:-1].strip()
    return text


def with_context(context: str, embed_text: str) -> str:
    """``embed_text`` with the model's context in front (nothing added for an empty context)."""
    return f"{context}{SEPARATOR}{embed_text}" if context else embed_text


def cache_key(model: str, messages: Sequence[Mapping[str, str]]) -> bytes:
    raw = json.dumps([model, PROMPT_VERSION, list(messages)], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).digest()


# -------------------------------------------------------------------------------------------- the cache


class ContextCache:
    """Contexts by request hash in one SQLite file (``None``: in memory only). A failure of the file
    turns it off for the run with one warning: the cache is only a saving."""

    def __init__(self, directory: str | Path | None) -> None:
        self._memory: dict[bytes, str] = {}
        self._db: sqlite3.Connection | None = None
        self.path: Path | None = None
        if directory is None:
            return
        self.path = Path(directory) / CACHE_FILE
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS contexts (key BLOB PRIMARY KEY, model TEXT NOT NULL, "
                "context TEXT NOT NULL)"
            )
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            self._disable("open", exc)

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, str]:
        found = {k: self._memory[k] for k in keys if k in self._memory}
        missing = [k for k in keys if k not in found]
        if missing and self._db is not None:
            try:
                for at in range(0, len(missing), 500):
                    part = missing[at : at + 500]
                    marks = ",".join("?" * len(part))
                    for key, context in self._db.execute(
                        f"SELECT key, context FROM contexts WHERE key IN ({marks})", part
                    ):
                        found[key] = self._memory[key] = context
            except (OSError, sqlite3.Error) as exc:
                self._disable("read", exc)
        return found

    def put_many(self, model: str, items: Mapping[bytes, str]) -> None:
        """Store ``items`` in one transaction (committed before this returns)."""
        self._memory.update(items)
        if self._db is not None and items:
            try:
                with self._db:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO contexts (key, model, context) VALUES (?, ?, ?)",
                        [(k, model, v) for k, v in items.items()],
                    )
            except (OSError, sqlite3.Error) as exc:
                self._disable("write", exc)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _disable(self, action: str, exc: BaseException) -> None:
        db, self._db = self._db, None
        log.warning(
            "context cache %s: cannot %s it (%s); going on without it for this run", self.path, action, exc
        )
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()


# --------------------------------------------------------------------------------------- the requester


@dataclass
class ContextStats:
    """What a `Contextualizer` did in one run (``--format json``: the ``contextualize`` object)."""

    requests: int = 0  # chat requests sent (a retried request counts once)
    cached: int = 0  # contexts found in the cache
    chars_sent: int = 0  # characters of the messages sent
    chunks: int = 0  # chunks given a context
    documents_without_context: int = 0  # indexed without context: asking had stopped (see ``stopped``)
    stopped: str | None = None  # why no more requests were sent, once they were not


@dataclass
class Contextualizer:
    """Asks ``client`` for the context of each chunk of a document, in parallel, within a budget.

    ``concurrency`` requests run at once (threads; the requests of one document are sent together);
    ``budget`` caps the requests of this contextualizer's life (``None``: no cap). Once the budget is
    spent, or the model failed for `STOP_AFTER_FAILED_DOCUMENTS` documents in a row, no more requests
    are sent (``stats.stopped`` says why): a document whose contexts are not all in the cache then gets
    none (`contexts` returns ``None``) and the answers received so far stay cached for the next run.
    ``progress(done, total)`` is called after each answer, with the requests finished and sent so far.
    """

    client: ChatModel
    cache: ContextCache = field(default_factory=lambda: ContextCache(None))
    concurrency: int = DEFAULT_CONCURRENCY
    budget: int | None = None
    window: int = DEFAULT_WINDOW
    progress: Callable[[int, int], None] | None = None
    stats: ContextStats = field(default_factory=ContextStats)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"contextualize concurrency must be at least 1, got {self.concurrency}")
        if self.budget is not None and self.budget < 0:
            raise ConfigError(f"contextualize budget must not be negative, got {self.budget}")
        if self.window < 100:
            raise ConfigError(f"the contextualize window must be at least 100 characters, got {self.window}")
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._failed_in_a_row = 0
        self._sent = 0  # requests handed to the pool, and finished (answered, failed or cancelled)
        self._done = 0

    @property
    def model(self) -> str:
        return str(self.client.model)

    @property
    def config(self) -> dict[str, Any]:
        """What decides the contexts (part of each manifest entry's configuration): model, prompt, window."""
        return {"model": self.model, "prompt": PROMPT_VERSION, "window": self.window}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self.cache.close()

    def __enter__(self) -> Contextualizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------------------------- asking
    def contexts(self, doc: Document, chunks: Sequence[Chunk]) -> list[str] | None:
        """The context of each chunk (cached or asked now), or ``None`` when asking had to stop first.

        A chunk the model fails for (after the client's retries) raises `ChatError` naming the chunk;
        the answers received before are cached all the same.
        """
        if not chunks:
            return []
        system = instruction(doc)
        keys = []
        requests: dict[bytes, tuple[Chunk, list[dict[str, str]]]] = {}
        for c in chunks:
            messages = build_messages(doc, c, self.window, system)
            key = cache_key(self.model, messages)
            keys.append(key)
            requests.setdefault(key, (c, messages))
        found = self.cache.get_many(list(requests))
        self.stats.cached += sum(1 for k in keys if k in found)
        todo = [k for k in requests if k not in found]
        if todo and self.stats.stopped is None:
            allowed = len(todo) if self.budget is None else max(0, self.budget - self.stats.requests)
            if allowed < len(todo):
                self.stats.stopped = f"the budget of {self.budget} request(s) was spent"
            answered = self._ask({k: requests[k] for k in todo[:allowed]})
            found.update(answered)
        if any(k not in found for k in keys):
            self.stats.documents_without_context += 1
            return None
        return [found[k] for k in keys]

    def apply(
        self,
        doc: Document,
        chunks: Sequence[Chunk],
        limit: tuple[int, Callable[[str], int]] | None = None,
    ) -> tuple[list[Chunk], bool]:
        """``chunks`` with their context in front of ``embed_text``, and whether they got one.

        ``limit``: ``(max tokens, counter)`` of the embedder; a context that would push an
        ``embed_text`` past it is shortened (``…`` at the cut), or left out when nothing of it fits.
        """
        contexts = self.contexts(doc, chunks)
        if contexts is None:
            return list(chunks), False
        out = []
        for c, context in zip(chunks, contexts, strict=True):
            if limit is not None:
                context = _fit(context, c.embed_text, *limit)
            out.append(replace(c, embed_text=with_context(context, c.embed_text)))
            self.stats.chunks += bool(context)
        return out, True

    def _ask(self, todo: dict[bytes, tuple[Chunk, list[dict[str, str]]]]) -> dict[bytes, str]:
        if not todo:
            return {}
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="kireme-contextualize")
        futures: dict[Future[str], bytes] = {
            self._pool.submit(self._request, messages): key for key, (_, messages) in todo.items()
        }
        self._sent += len(futures)
        answered: dict[bytes, str] = {}
        failure: tuple[Chunk, ChatError] | None = None
        try:
            for future in as_completed(futures):
                key = futures[future]
                self._done += 1
                try:
                    answered[key] = future.result()
                except CancelledError:
                    continue
                except ChatError as exc:
                    if failure is None:
                        failure = (todo[key][0], exc)
                        for other in futures:  # one chunk failed: the document fails, ask no more of it
                            other.cancel()
                    continue
                if self.progress is not None:
                    self.progress(self._done, self._sent)
        finally:
            self.cache.put_many(self.model, answered)  # whatever was answered is paid for: keep it
        if failure is not None:
            self._failed_in_a_row += 1
            if self._failed_in_a_row >= STOP_AFTER_FAILED_DOCUMENTS and self.stats.stopped is None:
                self.stats.stopped = f"the chat model failed for {self._failed_in_a_row} documents in a row"
            chunk, error = failure
            raise ChatError(f"no context for chunk {chunk.index} [{chunk.start}:{chunk.end}]: {error}")
        self._failed_in_a_row = 0
        return answered

    def _request(self, messages: list[dict[str, str]]) -> str:
        with self._lock:
            self.stats.requests += 1
            self.stats.chars_sent += sum(len(m["content"]) for m in messages)
        context = clean_context(self.client.complete(messages, temperature=0, max_tokens=MAX_ANSWER_TOKENS))
        if not context:
            raise ChatError(f"the chat model {self.model!r} answered with an empty context")
        return context


def _fit(context: str, embed_text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """The longest head of ``context`` (cut with ``…``) that keeps the embed_text within ``max_tokens``."""
    if not context or count(with_context(context, embed_text)) <= max_tokens:
        return context
    lo, hi = 0, len(context) - 1  # the longest n with context[:n] + "…" fitting; 0: none fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(with_context(context[:mid].rstrip() + "…", embed_text)) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    log.debug("a context was cut to %d of %d characters to fit the embedder", lo, len(context))
    return context[:lo].rstrip() + "…" if lo else ""
