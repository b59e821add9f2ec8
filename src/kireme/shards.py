"""``kireme chunk --output DIR``: chunks written to numbered shard files instead of standard output.

A shard is ``part-NNNNNN.jsonl`` (the rows ``kireme chunk`` prints) or ``part-NNNNNN.parquet`` (the same
fields, `chunk_schema`; needs pyarrow, which the ``index`` extra brings), numbered in input order: the
shards read in name order are the rows a ``kireme chunk`` without ``--output`` prints. A shard appears
whole or not at all (written beside, then renamed). The local engine (`ShardWriter`) and the Ray one
(`kireme.ray.shards`, one shard per group of files) write the same files. Nothing here imports Ray.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kireme.document import Chunk
from kireme.errors import MissingExtraError

if TYPE_CHECKING:
    import pyarrow as pa

ShardFormat = Literal["jsonl", "parquet"]
SHARD_FORMATS: tuple[ShardFormat, ...] = ("jsonl", "parquet")
SHARD_PATTERN = "part-*.{}"
SHARD_ROWS = 50_000  # the local engine closes a shard after the document that brings it to this many chunks

CHUNK_FIELDS: tuple[str, ...] = (
    *("id", "doc_id", "index", "start", "end", "text", "size", "unit", "headings", "metadata"),
    *("title", "embed_text"),
)
"""The columns of a chunk row: the JSONL fields of ``kireme chunk``, in the same order."""


def require_parquet() -> None:
    """A `MissingExtraError` naming the extra when pyarrow (for Parquet shards) is not installed."""
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise MissingExtraError("--format parquet", "index", "pyarrow") from None


def chunk_schema() -> pa.Schema:
    """The Arrow schema of chunk rows (Parquet shards and `kireme.ray.chunk_dataset`): the JSONL fields, typed."""
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("doc_id", pa.string()),
            ("index", pa.int64()),
            ("start", pa.int64()),
            ("end", pa.int64()),
            ("text", pa.string()),
            ("size", pa.int64()),
            ("unit", pa.string()),
            ("headings", pa.list_(pa.string())),
            ("metadata", pa.string()),  # JSON: its keys differ from chunk to chunk
            ("title", pa.string()),
            ("embed_text", pa.string()),
        ]
    )


def chunk_table(chunks: Sequence[Chunk]) -> pa.Table:
    """Chunks as an Arrow table of `chunk_schema` (metadata written as ``kireme chunk`` writes it)."""
    import pyarrow as pa

    rows = [c.to_dict() for c in chunks]
    for row in rows:
        row["metadata"] = json.dumps(row["metadata"], ensure_ascii=False)
    schema = chunk_schema()
    return pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()


def shard_name(group: int, fmt: ShardFormat) -> str:
    return f"part-{group:06d}.{fmt}"


def write_shard(chunks: Sequence[Chunk], path: Path, fmt: ShardFormat) -> None:
    """The chunks in one shard file, atomically (a reader never sees half a shard)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if fmt == "jsonl":
            with temporary.open("w", encoding="utf-8", newline="\n") as out:
                out.writelines(c.to_jsonl() for c in chunks)
        else:
            import pyarrow.parquet as pq

            pq.write_table(chunk_table(chunks), temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def clear_shards(out: Path) -> None:
    """Create ``out`` if needed and remove the shards an earlier run left there (of either format)."""
    out.mkdir(parents=True, exist_ok=True)
    for fmt in SHARD_FORMATS:
        for stale in out.glob(SHARD_PATTERN.format(fmt)):
            stale.unlink()


class ShardWriter:
    """Chunks of consecutive documents into numbered shards in ``out``: a shard is written once it holds
    ``rows`` chunks (after the document that brought it there: a document is never split across shards),
    and the last one by `close` (an empty one when nothing was written, so a reader finds the schema).
    Shards an earlier run left in ``out`` are removed when the writer is made."""

    def __init__(self, out: Path, fmt: ShardFormat = "jsonl", rows: int | None = None) -> None:
        if fmt not in SHARD_FORMATS:
            raise ValueError(f"shard format must be jsonl or parquet, not {fmt!r}")
        if fmt == "parquet":
            require_parquet()
        self.out = out
        self.fmt: ShardFormat = fmt
        self.rows = max(1, rows or SHARD_ROWS)
        self.shards = 0
        self._pending: list[Chunk] = []
        clear_shards(out)

    def add(self, chunks: Sequence[Chunk]) -> None:
        """One document's chunks."""
        self._pending.extend(chunks)
        if len(self._pending) >= self.rows:
            self._flush()

    def close(self) -> None:
        if self._pending or not self.shards:
            self._flush()

    def _flush(self) -> None:
        write_shard(self._pending, self.out / shard_name(self.shards, self.fmt), self.fmt)
        self.shards += 1
        self._pending = []

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        # what was chunked before an error is kept, as standard output keeps the rows printed before it
        if exc_type is None or issubclass(exc_type, Exception):
            try:
                self.close()
            except Exception:
                if exc_type is None:
                    raise
