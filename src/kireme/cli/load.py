"""``kireme load``: print the decoded text that every offset refers to."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kireme.cli.common import EXIT_FAILURE, EXIT_USAGE, load_one
from kireme.document import LoadError


@click.command(
    "load",
    epilog="""
\b
Examples:
  kireme load 規程.txt > decoded.txt
  kireme load old.txt --encoding cp932
  kireme load notes.md --info        # also print the detected encoding to stderr
""",
)
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option(
    "--encoding", default=None, metavar="NAME", help="Decode with this encoding instead of detecting it."
)
@click.option("--info", is_flag=True, help="Print the document id and detected encoding to stderr.")
def load_command(path: Path, encoding: str | None, info: bool) -> None:
    """Print the decoded text of PATH exactly (line endings kept): what chunk offsets refer to."""
    try:
        doc = load_one(path, encoding)
    except LoadError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_USAGE if exc.reason == "no such file" else EXIT_FAILURE)
    sys.stdout.buffer.write(doc.text.encode("utf-8"))
    sys.stdout.flush()
    if info:
        click.echo(
            f"{doc.id}: encoding={doc.metadata['encoding']} chars={len(doc.text)} bytes={doc.metadata['bytes']}",
            err=True,
        )
