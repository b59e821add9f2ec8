"""``kireme load``: print the decoded text that every offset refers to."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kireme.cli.common import EXIT_FAILURE, EXIT_USAGE, input_options, load_one
from kireme.errors import LoadError


@click.command(
    "load",
    epilog="""
\b
Examples:
  kireme load 規程.txt > decoded.txt
  kireme load old.txt --encoding cp932
  kireme load notes.md --info        # also print the format and detected encoding to stderr
  kireme load manual.pdf             # the text of every page, blank line between pages
  kireme load analysis.ipynb --outputs text
""",
)
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@input_options
@click.option("--info", is_flag=True, help="Print the document id, format, encoding and title to stderr.")
def load_command(
    path: Path,
    encoding: str | None,
    format_in: str | None,
    outputs: str,
    max_file_size: int,
    title: str | None,
    info: bool,
) -> None:
    """Print the text of PATH exactly as kireme reads it: what chunk offsets refer to.

    Text and Markdown files are decoded as they are (line endings kept); HTML, Word .docx and notebooks
    become Markdown; PDF the text of its pages.
    """
    try:
        doc = load_one(path, encoding, format_in, outputs, max_file_size, title)
    except LoadError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_USAGE if exc.reason == "no such file" else EXIT_FAILURE)
    sys.stdout.buffer.write(doc.text.encode("utf-8"))
    sys.stdout.flush()
    if info:
        details = [f"format={doc.format}"]
        if "encoding" in doc.metadata:
            details.append(f"encoding={doc.metadata['encoding']}")
        if doc.title:
            details.append(f"title={doc.title}")
        details += [f"chars={len(doc.text)}", f"bytes={doc.metadata.get('bytes', '?')}"]
        if doc.metadata.get("running_lines"):  # what a PDF's pages repeated and the text leaves out
            details.append("running_lines=" + " | ".join(doc.metadata["running_lines"]))
        click.echo(f"{doc.id}: " + " ".join(details), err=True)
