"""``kireme check``: verify an index directory (and repair what the store alone allows)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kireme.cli.common import EXIT_FAILURE, EXIT_STORAGE, EXIT_USAGE
from kireme.errors import DiskFullError, IndexNotFoundError, KiremeError, ReadOnlyError


@click.command(
    "check",
    epilog="""
\b
Examples:
  kireme check                       # the index in ./.kireme/index: exit 0 healthy, 1 damaged
                                     # (4: --repair on a full or read-only disk, nothing changed)
  kireme check --repair              # fix what the store alone allows, say what needs a rebuild
  kireme check --deep                # also read every row against its digest, BM25 against the rows
  kireme check --deep --repair       # drop documents whose rows changed; kireme index adds them again
  kireme check --db idx --format json
  kireme index --rebuild docs/       # what to run when the manifest or the store itself is damaged
""",
)
@click.option(
    "--db",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".kireme") / "index",
    show_default=True,
    help="The index directory.",
)
@click.option(
    "--repair",
    is_flag=True,
    help="Rebuild manifest entries from stored rows, drop rows no entry can own, rebuild the BM25 cache, "
    "delete a damaged embedding cache.",
)
@click.option(
    "--deep",
    is_flag=True,
    help="Also read every row: ids, offsets, text and embed_text against the digest recorded when they "
    "were written and text against the kept document; the BM25 cache against one built from the rows. "
    "Reads the whole index: minutes on a large one.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def check_command(db: Path, repair: bool, deep: bool, fmt: str) -> None:
    """Check that manifest, store, BM25 cache and embedding cache of an index agree.

    Run it without writing first: it opens everything read-only unless --repair is given (stop any
    running `kireme index` before repairing).
    """
    from kireme.index.check import check_index

    try:
        if repair and (db / "manifest.sqlite").exists():
            from kireme.index.ingest import IndexLock

            with IndexLock(db):  # never repair under a running `kireme index`
                report = check_index(db, repair=True, deep=deep)
        else:
            report = check_index(db, repair=repair, deep=deep)
    except IndexNotFoundError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except (DiskFullError, ReadOnlyError) as exc:  # --repair on a disk it cannot write: nothing changed
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_STORAGE)
    except KiremeError as exc:  # busy, or a lock that is not a lock file
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_FAILURE)
    except Exception as exc:  # --repair: a store's own words for a full or read-only disk
        from kireme.index.media import disk_failure

        failure = disk_failure(exc, db)
        if failure is None:
            raise
        click.echo(f"kireme: error: {failure}", err=True)
        sys.exit(EXIT_STORAGE)
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        for f in report.findings:
            mark = "repaired" if f.repaired else f.level
            click.echo(f"{mark:>8}  {f.part}: {f.detail}")
        verdict = "healthy" if report.healthy else "damaged"
        hint = (
            f" — run 'kireme index --rebuild PATH... --db {db}'"
            if report.needs_rebuild
            else (f" — run 'kireme check {'--deep ' if deep else ''}--repair'" if not report.healthy else "")
        )
        click.echo(f"{db}: {verdict}{hint}", err=True)
    sys.exit(0 if report.healthy else EXIT_FAILURE)
