"""Chunks of many documents, one document at a time: `iter_chunks`, and `iter_chunked` beneath it.

Sources are paths (``str`` or `os.PathLike`: a file, or a folder read recursively with
`kireme.load.iter_paths`, the files ``kireme chunk`` reads, in sorted order) and `Document` objects,
alone or in any iterable — a generator is read lazily. A plain string is always a path: to chunk a
text, wrap it in ``Document(text)`` (or call `kireme.chunk`). Files are loaded with `kireme.load.load`,
exactly as the ``kireme`` command loads them.

Memory stays flat: a file is read only when the chunks before it have been taken, so a folder of any
size streams. With ``jobs > 1`` files are loaded and chunked in worker processes (`kireme.parallel`), a
few files ahead of the caller; the chunks, their ids and their order are the same as with ``jobs=1``.
A chunker that embeds (semantic chunking with a model or a server, `Chunker.embeds`) chunks in the
calling process, so the model is loaded once; its files are still loaded in the workers. What goes to
a worker travels by pickle: a chunker with a size function of your own needs a module-level function
(a lambda does not pickle), and a script that uses ``jobs > 1`` needs the usual
``if __name__ == "__main__":`` guard (workers import the main module, as with any process pool that
does not fork).

``errors`` says what a source that cannot be loaded does (a missing or unreadable file, binary data, an
undecodable text, a file over ``max_bytes``): ``"raise"`` (the default) raises its `LoadError` when its
turn comes, after the chunks of the sources before it; ``"skip"`` logs a warning (logger
``kireme.stream``) and goes on. Errors from chunking itself (an embeddings server that cannot be
reached, a separator regex that runs too long) are raised either way: they would repeat for every file.
`iter_chunked` gives every source's outcome, failures included, for callers that report them (the CLI).
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Collection, Generator, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kireme.chunkers import Chunker
from kireme.document import Chunk, Document
from kireme.errors import ConfigError, KiremeError
from kireme.load import iter_paths, load
from kireme.load.registry import MAX_FILE_BYTES, walked_suffixes
from kireme.parallel import ordered_map
from kireme.strategies import make_chunker

if TYPE_CHECKING:
    import numpy as np  # only engines that embed bring vectors: chunking never imports numpy

__all__ = [
    "Chunked",
    "ReadOptions",
    "Source",
    "Sources",
    "Task",
    "iter_chunked",
    "iter_chunks",
    "iter_sources",
    "run_task",
    "run_tasks",
]

log = logging.getLogger(__name__)

Source = str | os.PathLike[str] | Document
"""One source: a file or folder path, or a `Document`."""
Sources = Source | Iterable[Source]
"""One source, or any iterable of them (read lazily)."""


@dataclass(frozen=True)
class ReadOptions:
    """How files are loaded (`kireme.load.load`'s keywords; the CLI's ``--encoding``, ``--format-in``,
    ``--outputs``, ``--max-file-size``, ``--title``)."""

    encoding: str | None = None
    format: str | None = None
    outputs: str = "none"
    max_bytes: int = MAX_FILE_BYTES
    title: str | None = None

    def load(self, path: Path) -> Document:
        return load(
            path,
            self.encoding,
            format=self.format,
            outputs=self.outputs,
            max_bytes=self.max_bytes,
            title=self.title,
        )


@dataclass(frozen=True)
class Chunked:
    """One source's outcome, in source order.

    ``source``: the path as `kireme.load.load` names it (POSIX separators), or the document's id.
    ``document``: ``None`` when loading failed. ``chunks``: ``None`` when loading or chunking failed, or
    when the task asked for none. ``error``: what failed (``document`` tells whether loading or chunking
    did). ``stat``: the file's state before it was read, when the task asked for it (the index records it).
    ``vectors``: the chunks' ``embed_text`` embedded where they were made (`kireme.ray` embeds on the
    cluster), one row per chunk; ``embedded``: how many of them were not found in a cache.
    """

    source: str
    document: Document | None = None
    chunks: list[Chunk] | None = None
    error: KiremeError | None = None
    stat: os.stat_result | None = None
    vectors: np.ndarray | None = None
    embedded: int = 0


@dataclass(frozen=True)
class Task:
    """One source to load and chunk (picklable: it goes to a worker).

    ``chunk``: chunk it here (``False``: only load; the caller chunks). ``known_sha256``: skip chunking
    when the content has this hash (an index already holds its chunks). ``stat``: record the file's state
    before reading it.
    """

    source: Path | Document
    chunk: bool = True
    known_sha256: str | None = None
    stat: bool = False


def run_task(task: Task, chunker: Chunker | None, read: ReadOptions) -> Chunked:
    """Load and chunk one source; a `KiremeError` is returned in the outcome, not raised.

    ``chunker`` ``None``: load only, whatever the task asks."""
    source = task.source
    if isinstance(source, Document):
        doc, name, stat = source, source.id, None
    else:
        name = source.as_posix()
        stat = source.stat() if task.stat and source.exists() else None
        try:
            doc = read.load(source)
        except KiremeError as exc:
            return Chunked(name, error=exc, stat=stat)
    if chunker is None or not task.chunk or doc.sha256 == task.known_sha256:
        return Chunked(name, doc, stat=stat)
    try:
        chunks = chunker.chunk(doc)
    except KiremeError as exc:
        return Chunked(name, doc, error=exc, stat=stat)
    return Chunked(name, doc, chunks, stat=stat)


def task_weight(task: Task) -> int:
    """About how much work a task is: its file's size in bytes (batches of tasks for one worker)."""
    if isinstance(task.source, Document):
        return len(task.source.text)
    try:
        return task.source.stat().st_size
    except OSError:  # its error comes when it is loaded
        return 0


def iter_sources(sources: Sources, suffixes: Collection[str] | None = None) -> Iterator[Path | Document]:
    """Each source as a file path or a `Document`: folders expanded (recursively, sorted), lazily, to
    their files with one of ``suffixes`` (default: the documents; `kireme.load.registry.walked_suffixes`)."""
    if isinstance(sources, (str, os.PathLike, Document)):
        sources = [sources]
    elif isinstance(sources, (bytes, bytearray)):
        raise TypeError("sources must be paths (str or os.PathLike) or Documents, not bytes")
    for source in sources:
        if isinstance(source, Document):
            yield source
        elif isinstance(source, (str, os.PathLike)):
            path = Path(source)
            if isinstance(source, str) and "\n" in source and not path.exists():
                raise ConfigError(
                    "a source that holds a line break is not a path: iter_chunks reads paths; "
                    "wrap a text in kireme.Document(text)"
                )
            yield from iter_paths(path, suffixes)
        else:
            raise TypeError(
                f"a source must be a path (str or os.PathLike) or a Document, not {type(source).__name__}"
            )


def iter_chunked(
    sources: Sources,
    chunker: Chunker,
    *,
    jobs: int = 1,
    read: ReadOptions | None = None,
    stat: bool = False,
) -> Generator[Chunked, None, None]:
    """Every source's outcome (`Chunked`), in order, one document at a time; failures are outcomes.

    ``jobs > 1`` loads and chunks in that many worker processes (`run_tasks`). ``stat`` records each
    file's state before it is read.
    """
    walked = walked_suffixes(chunker.strategy, getattr(chunker, "language", None))
    tasks = (Task(source, stat=stat) for source in iter_sources(sources, walked))
    return run_tasks(tasks, chunker, jobs=jobs, read=read)


def run_tasks(
    tasks: Iterable[Task], chunker: Chunker, *, jobs: int = 1, read: ReadOptions | None = None
) -> Generator[Chunked, None, None]:
    """Each task's outcome (`run_task`), in order; ``tasks`` is read lazily, a few ahead of the caller.

    ``jobs > 1``: in that many worker processes (`kireme.parallel.ordered_map`; the chunker and
    ``read`` are sent to each once). A chunker that embeds (`Chunker.embeds`) is not sent: the workers
    load, and the tasks that ask for chunks are chunked here, so its model is loaded once.
    """
    read = read or ReadOptions()
    if jobs <= 1:
        yield from (run_task(task, chunker, read) for task in tasks)
        return
    chunk_here = chunker.embeds
    wanted: deque[bool] = deque()  # chunk_here: whether each task in flight asked for chunks

    def sent(tasks: Iterable[Task]) -> Iterator[Task]:
        for task in tasks:
            if chunk_here:
                wanted.append(task.chunk)
                task = replace(task, chunk=False)
            yield task

    outcomes = ordered_map(
        _worker_task,
        sent(tasks),
        jobs=jobs,
        initializer=_start_worker,
        initargs=(None if chunk_here else chunker, read),
        weigh=task_weight,
    )
    for outcome in outcomes:
        if chunk_here and wanted.popleft() and outcome.document is not None and outcome.error is None:
            chunked = run_task(Task(outcome.document), chunker, read)
            outcome = replace(outcome, chunks=chunked.chunks, error=chunked.error)
        yield outcome


def iter_chunks(
    sources: Sources,
    strategy: str = "recursive",
    *,
    chunker: Chunker | None = None,
    jobs: int = 1,
    errors: Literal["raise", "skip"] = "raise",
    encoding: str | None = None,
    format: str | None = None,
    outputs: str = "none",
    max_bytes: int = MAX_FILE_BYTES,
    **options: Any,
) -> Iterator[Chunk]:
    """The chunks of every source, document by document (see the module docstring).

    ``strategy`` and ``options`` make the chunker as `kireme.chunk` does (or pass a ``chunker``).
    ``jobs``: worker processes for loading and chunking (``1``, the default: this process only).
    ``errors``: ``"raise"`` or ``"skip"`` a source that cannot be loaded. ``encoding``, ``format``,
    ``outputs``, ``max_bytes``: how files are read (`kireme.load.load`). Options are checked (and the
    chunker made) at the call; sources are read as the chunks are taken.

    Examples:
        >>> from kireme import Document, iter_chunks
        >>> docs = [Document("今日は晴れ。明日は雨。", id="a"), Document("Rain. Then sun.", id="b")]
        >>> [(c.doc_id, c.text) for c in iter_chunks(docs, "sentence", max_size=10)]
        [('a', '今日は晴れ。'), ('a', '明日は雨。'), ('b', 'Rain.'), ('b', 'Then sun.')]
    """
    if errors not in ("raise", "skip"):
        raise ConfigError(f"errors must be 'raise' or 'skip', not {errors!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"jobs must be a positive integer, not {jobs!r}")
    if chunker is None:
        chunker = make_chunker(strategy, **options)
    elif options:
        raise ConfigError(f"pass either a chunker or chunking options, not both ({', '.join(options)})")
    read = ReadOptions(encoding, format, outputs, max_bytes)
    return _chunks(iter_chunked(sources, chunker, jobs=jobs, read=read), skip=errors == "skip")


def _chunks(outcomes: Iterator[Chunked], skip: bool) -> Iterator[Chunk]:
    for outcome in outcomes:
        if outcome.error is not None:
            if outcome.document is not None or not skip:
                raise outcome.error
            log.warning("skipped %s", outcome.error)
            continue
        yield from outcome.chunks or ()


# ------------------------------------------------------------------------------------------- in workers

_worker: tuple[Chunker | None, ReadOptions] | None = None


def _start_worker(chunker: Chunker | None, read: ReadOptions) -> None:
    global _worker
    _worker = (chunker, read)


def _worker_task(task: Task) -> Chunked:
    assert _worker is not None, "_start_worker runs first in every worker"
    chunker, read = _worker
    assert chunker is not None or not task.chunk, "a chunker that embeds is not sent to workers"
    return run_task(task, chunker, read)
