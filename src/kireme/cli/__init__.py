"""The ``kireme`` command. Data goes to stdout, messages and progress to stderr.

Exit codes: 0 success; 1 some input could not be read, decoded or embedded (the rest still finished);
2 usage error (bad option, missing file, a directory with no readable files); 4 the disk is full.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
from pathlib import Path

import click

from kireme import __version__
from kireme.cli.progress import MessageHandler

# Subcommand name -> (module, attribute), in the order `kireme --help` lists them. A command's module is
# imported only when that command runs (or help lists it): `kireme chunk` does not import the index,
# evaluation or plotting code.
COMMANDS: dict[str, tuple[str, str]] = {
    "chunk": ("kireme.cli.chunk", "chunk"),
    "load": ("kireme.cli.load", "load_command"),
    "inspect": ("kireme.cli.inspect", "inspect_command"),
    "eval": ("kireme.cli.evaluate", "eval_command"),
    "compare": ("kireme.cli.evaluate", "compare_command"),
    "index": ("kireme.cli.index", "index_command"),
    "search": ("kireme.cli.index", "search_command"),
    "ask": ("kireme.cli.index", "ask_command"),
    "check": ("kireme.cli.check", "check_command"),
    "serve": ("kireme.cli.serve", "serve_command"),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        command = getattr(importlib.import_module(target[0]), target[1])
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> object:
        """Run the subcommand; what it could not write is one line, never a traceback: a reader that
        stopped early (``kireme search ... | head``) ends the command quietly with success, a full disk or
        a closed output (``> /dev/full``) is an error naming what failed (exit 4 for a full disk, as
        ``kireme index`` has it)."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            from kireme.cli.common import exit_quietly_on_broken_pipe

            exit_quietly_on_broken_pipe(0)
        except OSError as exc:
            from kireme.cli.common import EXIT_FAILURE, EXIT_STORAGE, STORAGE_ERRNOS
            from kireme.cli.progress import echo_err

            what = exc.filename if exc.filename is not None else "writing the output"
            echo_err(f"kireme: error: {what}: {exc.strerror or exc}")
            sys.exit(EXIT_STORAGE if exc.errno in STORAGE_ERRNOS else EXIT_FAILURE)
        return None


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110}
)
@click.version_option(__version__, prog_name="kireme")
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
      kireme serve                         keep the model and index open: HTTP API and a page of the cuts
    """
    level = logging.WARNING - 10 * verbose
    # records are printed like kireme's own messages: above the progress bars while they are drawn
    logging.basicConfig(
        level=max(level, logging.DEBUG), format="kireme: %(message)s", handlers=[MessageHandler()]
    )


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
