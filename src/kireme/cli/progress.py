"""One live progress display per command, drawn by rich on stderr.

A command opens one `ProgressDisplay` and hands out *trackers* for what it waits on: files, texts
embedded, chunks contextualized, configurations evaluated. Each tracker is one row of the same rich
`Progress`, so rows never draw over each other. The library knows nothing of this: it keeps its plain
``progress(done, total)`` callbacks, and a tracker is such a callback.

The display draws only when stderr is a terminal and ``--quiet`` was not given. While it is live:

- kireme's messages (`echo_err`, and every logging record through `MessageHandler`) are printed by the
  display's console, so they scroll above the bars instead of being drawn into them; anything else
  written to ``sys.stderr`` is routed the same way by rich.
- data meant for stdout (`write_stdout`) goes straight to stdout, byte for byte, unless stdout is the
  very terminal the bars are drawn on. Then, and only then, whole lines are printed through the same
  console, above the bars, exactly as given (no wrapping, cropping or markup). Buffering stdout until the
  display stops would also keep the listing clean, but a long ``kireme chunk docs/`` would then show
  nothing until the end; printing through the console keeps the listing streaming. Which file descriptor
  carries the characters makes no difference on one terminal, and whenever stdout is a pipe or a file
  nothing is rerouted.

A rate (``35 texts/s``) is measured over the reports of the last `RATE_WINDOW_SECONDS` and shown only
once they span `MIN_RATE_SECONDS`: a first batch reported right after another would otherwise claim
thousands of texts per second, and a pause (a model loading, a slow file) ages out of the window instead
of dragging the figure down for the rest of the run. An ETA (files, configurations) is shown after
`MIN_RATE_SECONDS` and one finished step.

rich is imported only when a display will draw, so piped and ``--quiet`` runs do not pay for it.

rich hides the cursor while it draws and shows it again when the display stops, which leaving the
command's ``with`` block does, also by an exception, ``sys.exit`` or Ctrl-C. SIGTERM ends a process
without that unless the command handles it (``kireme index`` does: `kireme.cli.interrupt`); while the
bars are drawn, a SIGTERM nobody else handles erases them and shows the cursor, then ends the process
as SIGTERM would have.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.progress import Progress, Task, TaskID
    from rich.segment import Segment

__all__ = [
    "MIN_RATE_SECONDS",
    "QUIET_HELP",
    "RATE_WINDOW_SECONDS",
    "MessageHandler",
    "ProgressDisplay",
    "Tracker",
    "echo_err",
    "measured_rate",
    "quiet_option",
    "rate_text",
    "write_stdout",
]

MIN_RATE_SECONDS = 1.0
"""Seconds of measurement before a rate or an ETA is shown."""

RATE_WINDOW_SECONDS = 10.0
"""A rate counts the reports of this many recent seconds."""

QUIET_HELP = "No progress on stderr (errors, warnings and the summary still appear)."

terminal_override: bool | None = None
"""For tests: ``True`` draws as on a terminal whatever stderr is, ``False`` never draws; ``None`` asks
whether stderr is a terminal."""

_active: ProgressDisplay | None = None  # the display that is live now, if any (one per command)


def _activate(display: ProgressDisplay | None, was: ProgressDisplay | None = None) -> None:
    """Make ``display`` the live one (``None``: no display, if ``was`` is still the live one)."""
    global _active
    if display is not None or _active is was:
        _active = display


def quiet_option(func: Any) -> Any:
    """``--quiet/-q``: the same option, with the same help, on every command that shows progress."""
    return click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)(func)


def echo_err(message: str) -> None:
    """Print one message line on stderr: above the live display when one is drawn, else as click does."""
    console = _active.console if _active is not None else None
    if console is not None:
        console.print(message, markup=False, highlight=False, emoji=False, soft_wrap=True)
    else:
        click.echo(message, err=True)


def write_stdout(text: str) -> None:
    """Write command output (chunk rows, tables) to stdout without mixing it into the live display."""
    display = _active
    if display is None or not display.stdout_shares_terminal:
        sys.stdout.write(text)
    else:
        display.print_lines(text)


class MessageHandler(logging.Handler):
    """A logging handler that writes each record with `echo_err`, so library warnings logged while the
    bars are drawn appear above them."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            echo_err(self.format(record))
        except Exception:  # a handler must never raise into the code that logged
            self.handleError(record)


def measured_rate(samples: deque[tuple[float, int]], now: float, count: int) -> float | None:
    """Add the report ``(now, count)`` to ``samples`` and return the rate over the last
    `RATE_WINDOW_SECONDS` (count per second), or ``None`` while the reports span less than
    `MIN_RATE_SECONDS` or nothing was done in them."""
    samples.append((now, count))
    while len(samples) > 1 and now - samples[0][0] > RATE_WINDOW_SECONDS:
        samples.popleft()
    first_time, first_count = samples[0]
    seconds = now - first_time
    if seconds < MIN_RATE_SECONDS or count <= first_count:
        return None
    return (count - first_count) / seconds


def rate_text(task: Task) -> str:
    """What the rate column shows for ``task``: ``35 texts/s`` (the rate its tracker measured, see
    `measured_rate`), ``ETA 0:12`` (steps: remaining steps at the average pace since the row started, once
    `MIN_RATE_SECONDS` have passed and a step is done), or nothing."""
    parts = []
    rate = task.fields.get("rate")
    if rate is not None:
        noun = task.fields.get("noun", "")
        parts.append(f"{rate:.1f} {noun}/s" if rate < 10 else f"{rate:,.0f} {noun}/s")
    since = task.fields.get("since")
    if task.fields.get("show_eta") and since is not None and task.total and task.completed > 0:
        seconds = task.get_time() - since
        if seconds >= MIN_RATE_SECONDS and task.total > task.completed:
            parts.append("ETA " + _clock((task.total - task.completed) * seconds / task.completed))
    return ", ".join(parts)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _progress(console: Console, get_time: Callable[[], float] | None) -> Progress:
    """The rich `Progress` of a display: label, bar, ``done/total noun``, rate or ETA, time elapsed."""
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class CountColumn(ProgressColumn):
        """``120/480 texts``."""

        def render(self, task: Task) -> Text:
            total = "?" if task.total is None else f"{int(task.total):,}"
            return Text(f"{int(task.completed):,}/{total} {task.fields.get('noun', '')}".rstrip())

    class RateColumn(ProgressColumn):
        """The rate and ETA of `rate_text`: blank until there is enough to measure."""

        def render(self, task: Task) -> Text:
            return Text(rate_text(task), style="progress.data.speed")

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=30),
        CountColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        redirect_stdout=False,  # stdout is data: see write_stdout
        redirect_stderr=True,  # stray writes to sys.stderr scroll above the bars
        get_time=get_time,
    )


class _Raw:
    """Text that rich writes exactly as given: no wrapping, cropping, markup or control-code stripping."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        from rich.segment import Segment

        yield Segment(self.text)


def _terminal_console() -> Console | None:
    """A console on stderr when the display should draw there (a terminal, or the tests' override)."""
    if terminal_override is False:
        return None
    if terminal_override is None:
        try:
            if not sys.stderr.isatty():
                return None
        except (AttributeError, ValueError, OSError):  # a closed or odd stream
            return None
    from rich.console import Console

    console = Console(stderr=True, force_terminal=True if terminal_override else None)
    if not console.is_terminal or console.is_dumb_terminal:  # TTY_COMPATIBLE=0, TERM=dumb
        return None
    return console


def _same_terminal(out: IO[str], err: IO[str]) -> bool:
    """Whether ``out`` and ``err`` write to one terminal device (then their output shares the screen)."""
    try:
        if not (out.isatty() and err.isatty()):
            return False
        a, b = os.fstat(out.fileno()), os.fstat(err.fileno())
    except (AttributeError, ValueError, OSError):  # no file descriptor (captured streams)
        return False
    return (a.st_rdev, a.st_ino, a.st_dev) == (b.st_rdev, b.st_ino, b.st_dev)


class Tracker:
    """One row of a `ProgressDisplay`; call it as ``tracker(done, total)`` or `advance` it.

    ``restarts=True`` is for callbacks whose count starts again at every call (an embedder reports
    ``(done, total)`` per batch of one call, then a new call starts at its first batch): the calls are
    summed into one growing count. A tracker of a display that does not draw, or that has closed, does
    nothing.
    """

    def __init__(
        self,
        display: ProgressDisplay,
        label: str,
        noun: str,
        *,
        total: int | None = None,
        rate: bool = False,
        eta: bool = False,
        restarts: bool = False,
    ) -> None:
        self.display = display
        self.label = label
        self.noun = noun
        self.total = total
        self.rate = rate
        self.eta = eta
        self.restarts = restarts
        self.task: TaskID | None = None
        self.completed = 0
        self._base = 0  # restarts: what the calls before this one did
        self._last = (0, 0)  # restarts: the last (done, total) of the current call
        self._samples: deque[tuple[float, int]] = deque()  # recent (time, completed) reports
        self.measured: float | None = None  # the rate shown, None until it can be measured
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        """Report ``done`` of ``total`` (the library's ``progress`` callback)."""
        if not self.display.enabled:
            return
        with self._lock:
            if self.restarts:
                last_done, last_total = self._last
                if last_done >= last_total or done < last_done or total != last_total:
                    self._base += last_done  # a new call: the previous one is over
                self._last = (done, total)
                done, total = self._base + done, self._base + total
            self.completed, self.total = done, total
            if self.rate:
                self.measured = measured_rate(self._samples, self.display.now(), done)
            self.display._update(self)

    def advance(self, steps: int = 1) -> None:
        """One more step (a file, a configuration) done."""
        if not self.display.enabled:
            return
        with self._lock:
            self.completed += steps
            self.display._update(self)


class ProgressDisplay:
    """The one live display of a command: a rich `Progress` on stderr, started at the first report.

    Use it as a context manager around the command's work; `close` (or leaving the block, also by an
    exception or ``sys.exit``) erases the bars, so the summary that follows stands alone.
    ``console`` and ``get_time`` are for tests.
    """

    def __init__(
        self,
        *,
        quiet: bool = False,
        console: Console | None = None,
        get_time: Callable[[], float] | None = None,
    ) -> None:
        self.console: Console | None = None
        self.progress: Progress | None = None
        if not quiet:
            self.console = console or _terminal_console()
        if self.console is not None:
            self.progress = _progress(self.console, get_time)
        self.enabled = self.progress is not None
        self.stdout_shares_terminal = False
        self._started = False
        self._closed = False
        self._pending = ""  # the unfinished last line of stdout text printed through the console
        self._lock = threading.RLock()
        self._on_sigterm: Callable[[int, Any], None] | None = None  # installed while the bars are drawn

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tracker(self, label: str, noun: str, *, rate: bool = True, restarts: bool = False) -> Tracker:
        """A row for a library ``progress(done, total)`` callback (embedding, contextualizing), shown from
        its first report, with a rate once it can be measured."""
        return Tracker(self, label, noun, rate=rate, restarts=restarts)

    def steps(self, label: str, total: int, noun: str) -> Tracker:
        """A row counting ``total`` steps (files, configurations) with an ETA; not drawn for one step."""
        tracker = Tracker(self, label, noun, total=total, eta=True)
        if total > 1:
            self._update(tracker)
        return tracker

    def iterate(self, items: Iterable[Any], label: str, noun: str) -> Iterator[Any]:
        """``items`` one by one, advancing a `steps` row after each."""
        items = list(items)
        row = self.steps(label, len(items), noun)
        for item in items:
            yield item
            row.advance()

    def now(self) -> float:
        """The display's clock (seconds)."""
        return self.progress.get_time() if self.progress is not None else 0.0

    def _update(self, tracker: Tracker) -> None:
        with self._lock:
            progress = self.progress
            if progress is None or self._closed:
                return
            if tracker.task is None:
                if tracker.total is not None and tracker.total <= 1 and tracker.eta:
                    return  # a single file or configuration: no bar
                tracker.task = progress.add_task(
                    tracker.label,
                    total=tracker.total,
                    completed=tracker.completed,
                    noun=tracker.noun,
                    rate=tracker.measured,
                    show_eta=tracker.eta,
                    since=progress.get_time(),
                )
                if not self._started:
                    self._started = True
                    self.stdout_shares_terminal = _same_terminal(sys.stdout, sys.stderr)
                    progress.start()
                    _activate(self)
                    self._catch_sigterm()
            else:
                progress.update(
                    tracker.task, total=tracker.total, completed=tracker.completed, rate=tracker.measured
                )

    def print_lines(self, text: str) -> None:
        """Print stdout text above the bars, whole lines only (a line is never split by a redraw)."""
        with self._lock:
            if self.console is None or not self._started or self._closed:
                sys.stdout.write(text)
                return
            self._pending += text
            head, newline, self._pending = self._pending.rpartition("\n")
            if newline:
                self.console.print(_Raw(head + newline), end="", soft_wrap=True)

    def close(self) -> None:
        """Stop and erase the display; later reports are ignored."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.progress is None or not self._started:
                return
            try:
                self.progress.stop()  # erases the bars and shows the cursor again
            finally:
                _activate(None, was=self)
                self._release_sigterm()
            if self._pending:
                sys.stdout.write(self._pending)
                self._pending = ""

    def _catch_sigterm(self) -> None:
        """While the bars are drawn, a SIGTERM that would end the process at once (its default action)
        first closes the display, so the terminal is not left with the cursor hidden."""
        if threading.current_thread() is not threading.main_thread():
            return  # handlers can be set only there; a display started elsewhere is left as it is
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return  # the command handles SIGTERM itself (and leaves its with-blocks, which close this)

        def on_sigterm(signum: int, frame: Any) -> None:
            try:
                self.close()
            finally:  # then end as SIGTERM ends a process: the parent sees the signal
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        signal.signal(signal.SIGTERM, on_sigterm)
        self._on_sigterm = on_sigterm

    def _release_sigterm(self) -> None:
        handler, self._on_sigterm = self._on_sigterm, None
        if handler is None or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is handler:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
