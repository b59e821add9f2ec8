"""The ``kireme`` command. Data goes to stdout, messages and progress to stderr.

Exit codes: 0 success; 1 some input could not be read, decoded or embedded (the rest still finished);
2 usage error (bad option, missing file, a directory with no readable files).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path

import click

from kireme.cli.check import check_command
from kireme.cli.chunk import chunk
from kireme.cli.evaluate import compare_command, eval_command
from kireme.cli.index import ask_command, index_command, search_command
from kireme.cli.inspect import inspect_command
from kireme.cli.load import load_command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="kireme")
@click.option("-v", "--verbose", count=True, help="More messages on stderr (-vv for debug).")
def cli(verbose: int) -> None:
    """kireme (切れ目): cut documents into chunks for RAG at the right places.

    \b
    Start with:
      kireme chunk FILE --format text      see how a document is cut
      kireme load FILE                     the decoded text all offsets refer to
      kireme inspect FILE                  sentence-to-sentence similarity, before a semantic threshold
      kireme eval FILE --questions Q.jsonl  hit rate and characters passed, per strategy and size
      kireme index DIR                     chunk, embed and store (incremental) in ./.kireme/index
      kireme search "QUERY"                hybrid search;  kireme ask "QUESTION": context + answer
      kireme check                         is the index whole? (--repair fixes what it can)
    """
    level = logging.WARNING - 10 * verbose
    logging.basicConfig(level=max(level, logging.DEBUG), format="kireme: %(message)s", stream=sys.stderr)


cli.add_command(chunk)
cli.add_command(load_command)
cli.add_command(inspect_command)
cli.add_command(eval_command)
cli.add_command(compare_command)
cli.add_command(index_command)
cli.add_command(search_command)
cli.add_command(ask_command)
cli.add_command(check_command)


def separators_from_argv(argv: list[str]) -> list[str]:
    """Let ``--separators A B C`` take several values, as the usage line promises (click takes one)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        out.append(arg)
        i += 1
        if arg == "--separators":
            taken = 0
            while i < len(argv):
                nxt = argv[i]
                if taken and (nxt.startswith("--") or Path(nxt).exists()):
                    break
                if taken:
                    out.append("--separators")
                out.append(nxt)
                taken += 1
                i += 1
    return out


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``kireme`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    printable_streams()
    cli.main(args=separators_from_argv(args), prog_name="kireme")


def printable_streams() -> None:
    """A file name that is not valid UTF-8 (kept as surrogate escapes) prints as ``\\udcff`` instead of
    stopping the command with a traceback, whatever the terminal's encoding."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # a stream already written in another mode
                reconfigure(errors="backslashreplace")
