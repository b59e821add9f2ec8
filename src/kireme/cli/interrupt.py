"""Ctrl-C and SIGTERM during a long command: stop at the next safe point, say what was kept, exit 128 + N.

`Stopper.install` makes the first SIGINT or SIGTERM set a flag, nothing more. The command's callbacks
check it (`Stopper.check`, `Stopper.checked`: after each file, each batch of texts embedded, each
context answered) and raise `Interrupted` there, so a batch in flight finishes or is dropped whole, and
nothing is cut off in the middle of a write: the ``with`` blocks on the way out release the index, close
the store and close the progress display, which shows the cursor again. The command then says what was
kept and exits with 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM), as shells report a
process a signal ended.

A second signal, for when the safe point is far away (a server that does not answer), stops at once:
the cursor is shown again, one line is printed, and the process exits with the same code. What earlier
batches committed is kept either way; the next run of the same command finishes the rest.

Handlers can be set only in the main thread; elsewhere `install` leaves the signals as they are.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["SHOW_CURSOR", "Interrupted", "Stopper"]

SHOW_CURSOR = "\x1b[?25h"
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """Raised at a safe point after SIGINT or SIGTERM (a `KeyboardInterrupt`: ``except Exception`` lets it
    through)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal's number: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class Stopper:
    """The signal received, if any, and the checks that act on it (see the module docstring)."""

    def __init__(self, at_once_message: str = "") -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}
        self._at_once = False
        self._message = at_once_message

    @classmethod
    def install(cls, at_once_message: str = "") -> Stopper:
        """A stopper whose handlers take SIGINT and SIGTERM until `restore`; ``at_once_message``: the line
        a second signal prints (default: what `kireme index` keeps)."""
        stopper = cls(at_once_message)
        if _in_main_thread():
            for signum in SIGNALS:
                stopper._previous[signum] = signal.getsignal(signum)
                signal.signal(signum, stopper._receive)
        return stopper

    def restore(self) -> None:
        """Give SIGINT and SIGTERM back to the handlers they had before `install`."""
        previous, self._previous = self._previous, {}
        if previous and _in_main_thread():
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def check(self) -> None:
        """Raise `Interrupted` if a signal came (in the main thread; other threads carry on)."""
        if self.signum is not None and _in_main_thread():
            raise Interrupted(self.signum)

    def checked(self, callback: Callable[..., None]) -> Callable[..., None]:
        """``callback`` (a progress or per-file callback), then `check`."""

        def call(*args: Any) -> None:
            callback(*args)
            self.check()

        return call

    @contextlib.contextmanager
    def at_once(self) -> Iterator[None]:
        """A stretch that may be abandoned anywhere (it writes nothing that a reader could see half
        done): a signal raises `Interrupted` at once instead of at the next check."""
        self.check()
        self._at_once = True
        try:
            yield
        finally:
            self._at_once = False

    def _receive(self, signum: int, frame: Any) -> None:
        if self.signum is None:
            self.signum = signum
            if self._at_once:
                raise Interrupted(signum)
            return
        _stop_at_once(signum, self._message)


def _stop_at_once(signum: int, message: str = "") -> None:
    """The second signal: show the cursor, say so in one line, and exit without waiting for anything."""
    message = (
        "\nkireme: "
        + (
            message
            or "stopped at once: documents committed before are kept; run the same command again to continue "
            "from there"
        )
        + "\n"
    )
    try:
        with contextlib.suppress(OSError):
            if os.isatty(2):
                os.write(2, SHOW_CURSOR.encode())
            os.write(2, message.encode())
    finally:
        os._exit(128 + signum)
