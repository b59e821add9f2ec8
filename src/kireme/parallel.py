"""Process pools for per-file work (loading, chunking), with the results in input order.

`ordered_map` runs a module-level function over items in worker processes and yields the results in
the order of the items, keeping only a few items in flight (memory stays flat however many there are).
It is what ``kireme chunk --jobs N`` and ``kireme index --jobs N`` use; their output is the same as
with ``--jobs 1`` because every result comes back in its input's place.

Workers are started with the ``forkserver`` method where the platform has it (``spawn`` elsewhere),
never by a plain ``fork``: the calling process may already run threads (a progress display, an
embedder's thread pool, a tokenizer) and a forked copy of a process with threads can deadlock. The fork
server is a fresh interpreter that imports only `PRELOAD` (no numpy, no threads), so each worker is a
cheap fork of it.

Log records that a worker emits (a loader's warning about malformed HTML, say) are sent back with the
item's result and handled by the caller's loggers, in order, as if the work had run in the caller.
Workers ignore Ctrl-C: the caller stops the pool.
"""

from __future__ import annotations

import logging
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from kireme.errors import KiremeError

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = [
    "AHEAD_PER_JOB",
    "AUTO_MIN_BYTES",
    "BATCH_ITEMS",
    "BATCH_WEIGHT",
    "PRELOAD",
    "choose_jobs",
    "file_sizes",
    "ordered_map",
    "start_method",
    "usable_cores",
]

T = TypeVar("T")
R = TypeVar("R")

_Outcome = tuple[R | None, Exception | None, list[logging.LogRecord]]  # one item: result, error, logs

PRELOAD = ["kireme.stream"]
"""Modules the fork server imports once, so every worker starts with them loaded."""

AHEAD_PER_JOB = 4
"""Items submitted ahead per worker: enough to keep each busy, few enough to keep memory flat."""

BATCH_WEIGHT = 64 << 10
"""A batch of items for one worker task closes once it weighs this much (bytes of files, for kireme)."""

BATCH_ITEMS = 32
"""The most items in one worker task."""

AUTO_MIN_BYTES = 1 << 20
"""The default (``--jobs`` not given) starts at most one worker per this many bytes of input: below it
in all, it stays in one process."""


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def choose_jobs(requested: int | None, sizes: Sequence[int]) -> int:
    """How many worker processes to use for files of these ``sizes`` (bytes); ``1`` means no pool.

    ``requested`` (``--jobs N``) is honoured up to one worker per file. ``None`` (the default) takes the
    usable cores, but no more than one worker per `AUTO_MIN_BYTES` of input: starting a worker (about
    half a second, and its own tokenizer in memory) must pay for itself, so a single file or files under
    `AUTO_MIN_BYTES` in all stay in one process.
    """
    if len(sizes) < 2:
        return 1
    if requested is not None:
        return max(1, min(requested, len(sizes)))
    return max(1, min(usable_cores(), len(sizes), sum(sizes) // AUTO_MIN_BYTES))


def file_sizes(paths: Iterable[os.PathLike[str] | str]) -> list[int]:
    """Each file's size in bytes (0 for one that cannot be read: its error comes when it is loaded)."""
    sizes = []
    for path in paths:
        try:
            sizes.append(os.stat(path).st_size)
        except (OSError, ValueError):
            sizes.append(0)
    return sizes


def start_method() -> str:
    """``forkserver`` where available (Linux, macOS), else ``spawn`` (Windows); never ``fork``."""
    import multiprocessing  # here: a command that runs in one process does not pay for the import

    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def ordered_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    jobs: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
    weigh: Callable[[T], int] | None = None,
    batch_weight: int = BATCH_WEIGHT,
    batch_items: int = BATCH_ITEMS,
    ahead: int | None = None,
) -> Iterator[R]:
    """``fn(item)`` for each item, computed in ``jobs`` worker processes, yielded in the items' order.

    ``fn`` and ``initializer`` must be module-level functions (workers import them by name); items,
    ``initargs`` and results travel by pickle. ``initializer(*initargs)`` runs once in each worker (send
    a chunker there once, not with every item).

    Items go to the workers in batches (a task costs about a millisecond of messaging, more than a small
    file takes to chunk): up to ``batch_items`` items, closed early once their ``weigh`` (bytes, say)
    reaches ``batch_weight``; without ``weigh`` every item weighs nothing. At most ``ahead`` batches
    (default ``AHEAD_PER_JOB`` per worker) are in flight, and ``items`` is read only that far ahead.

    An exception raised by ``fn`` is raised here, when its item's turn comes (the items before it are
    yielded first). A worker that dies (killed, out of memory) is a `KiremeError`. Closing the generator
    early cancels the batches not yet started.

    As with any process pool that does not fork, a script that calls this at import time must guard its
    entry point with ``if __name__ == "__main__":`` (workers import the main module).
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    jobs = max(1, jobs)
    ahead = max(1, ahead if ahead is not None else AHEAD_PER_JOB * jobs)
    method = start_method()
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(PRELOAD)
    level = logging.getLogger().getEffectiveLevel()
    pool = ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_start_worker, initargs=(level, initializer, initargs)
    )
    pending: deque[Future[list[_Outcome[R]]]] = deque()
    batches = make_batches(items, weigh, batch_weight, max(1, batch_items))
    broken = False
    try:
        for batch in batches:
            pending.append(pool.submit(_call, fn, batch))
            if len(pending) >= ahead:
                break
        while pending:
            future = pending.popleft()
            try:
                outcomes = future.result()
            except BrokenProcessPool:
                broken = True
                raise KiremeError(
                    "a worker process stopped abruptly (killed, out of memory, or a script that starts "
                    "workers without an 'if __name__ == \"__main__\":' guard); run again with fewer jobs "
                    "(--jobs 1 works in one process)"
                ) from None
            for batch in batches:  # keep the workers busy while the caller works on these results
                pending.append(pool.submit(_call, fn, batch))
                break
            for result, error, records in outcomes:
                replay(records)
                if error is not None:
                    raise error
                yield cast(R, result)
    finally:
        # a pool whose worker was killed (a signal sent to the whole process group) may never hear back
        # from the others: waiting for them hung the caller, holding the index's lock
        pool.shutdown(wait=not broken, cancel_futures=True)


def make_batches(
    items: Iterable[T], weigh: Callable[[T], int] | None, batch_weight: int, batch_items: int
) -> Iterator[list[T]]:
    """Consecutive batches of ``items``, each closed at ``batch_items`` items or ``batch_weight`` in all
    (``weigh`` gives an item's weight; ``None``: only the count)."""
    batch: list[T] = []
    weight = 0
    for item in items:
        batch.append(item)
        weight += weigh(item) if weigh is not None else 0
        if len(batch) >= batch_items or weight >= batch_weight:
            yield batch
            batch, weight = [], 0
    if batch:
        yield batch


# ------------------------------------------------------------------------------------------- in workers

_records: list[logging.LogRecord] = []


def picklable(record: logging.LogRecord) -> logging.LogRecord:
    """``record`` made picklable in place (message formatted, traceback as text), to send to the caller."""
    record.msg = record.getMessage()
    record.args = None
    if record.exc_info:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.exc_info = None
    return record


class _Collect(logging.Handler):
    """Keeps a worker's log records, made picklable, to send back with the item's result."""

    def emit(self, record: logging.LogRecord) -> None:
        _records.append(picklable(record))


def _start_worker(level: int, initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    root = logging.getLogger()
    root.handlers[:] = [_Collect()]
    root.setLevel(level)
    if initializer is not None:
        initializer(*initargs)


def _call(fn: Callable[[T], R], batch: list[T]) -> list[_Outcome[R]]:
    """``fn`` over a batch: each item's result or exception, with the log records it emitted."""
    outcomes: list[_Outcome[R]] = []
    for item in batch:
        _records.clear()
        try:
            outcomes.append((fn(item), None, list(_records)))
        except Exception as exc:  # raised in the caller, at this item's turn
            outcomes.append((None, exc, list(_records)))
    _records.clear()
    return outcomes


def replay(records: list[logging.LogRecord]) -> None:
    """A worker's log records (a process pool's or a Ray task's), handled by this process's loggers
    (their levels and handlers)."""
    for record in records:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)
