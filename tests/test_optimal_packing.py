"""The optimal packer (``packing="optimal"``): all cuts of a span chosen together.

The invariants (exact offsets, sizes, coverage, graphemes) are checked for both packers by the
hypothesis tests in ``test_properties.py``; here: what the optimal packer does *better*, what it keeps
from the greedy one, its options and errors, and that its work stays linear.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
from importlib.util import find_spec

import pytest

import kireme.pack as pack_module
from kireme import Document, chunk, make_chunker
from kireme.boundaries.levels import CLAUSE, PARAGRAPH, SENTENCE, WORD
from kireme.errors import ConfigError
from kireme.length import Chars
from kireme.pack import pack
from kireme.text.headings import ends_with_heading

# the code strategy wants the code extra (tree-sitter), which a test run on a small disk leaves out
_CODE = ("code",) if find_spec("tree_sitter_language_pack") is not None else ()

PROSE_LEVELS = [PARAGRAPH, SENTENCE, CLAUSE, WORD]


def _sentences(n: int) -> str:
    """``n`` Japanese sentences of 14 characters, no paragraph breaks."""
    return "".join(f"申請書は{i:02d}番の窓口に出す。" for i in range(n))


def _sizes(text: str, packing: str, max_size: int, **options) -> list[int]:
    spans = pack(text, PROSE_LEVELS, Chars().for_text(text), max_size=max_size, packing=packing, **options)
    for span in spans:
        assert 0 < span.size <= max_size
    return [span.size for span in spans]


def test_no_small_tail_is_left_behind() -> None:
    text = _sentences(80)  # 1,120 characters: greedy leaves 504 + 504 + 112
    greedy = _sizes(text, "greedy", 512)
    optimal = _sizes(text, "optimal", 512)
    assert len(optimal) == len(greedy) == 3
    assert min(greedy) < 200
    assert min(optimal) >= 350  # three balanced chunks
    assert max(optimal) - min(optimal) < max(greedy) - min(greedy)


def test_a_piece_that_fits_is_never_cut() -> None:
    """Candidates are the greedy packer's: paragraphs that fit stay whole even if sizes are uneven."""
    paragraphs = [
        "規程の目的を定める。" * 6,
        "宿泊費の上限は一泊一万円とする。" * 5,
        "附則として施行日を定める。" * 4,
    ]
    text = "\n\n".join(paragraphs)
    spans = pack(text, PROSE_LEVELS, Chars().for_text(text), max_size=100, packing="optimal")
    assert [text[s.start : s.end] for s in spans] == paragraphs


def test_the_rest_of_a_paragraph_does_not_join_the_next_one_when_it_can_stand_alone() -> None:
    first = "出張の申請は前日までに行う。" * 5  # 70 characters, more than half of the limit
    second = "宿泊費の精算には領収書が要る。" * 8  # 120 characters: must be cut
    text = first + "\n\n" + second
    spans = pack(text, PROSE_LEVELS, Chars().for_text(text), max_size=100, packing="optimal")
    chunks = [text[s.start : s.end] for s in spans]
    assert chunks[0] == first
    assert all("\n\n" not in c for c in chunks)


def test_a_chunk_does_not_end_with_a_heading() -> None:
    body = "宿泊費は一泊につき一万円を上限とする。" * 6
    text = "第1条（目的）\nこの規程は出張の旅費を定める。\n第2条（宿泊費）\n" + body
    spans = pack(text, PROSE_LEVELS, Chars().for_text(text), max_size=60, packing="optimal")
    assert spans
    for span in spans[:-1]:
        assert not ends_with_heading(text, span.end), text[span.start : span.end]


@pytest.mark.parametrize("target", [60, 120])
def test_chunks_aim_at_the_target_size(target: int) -> None:
    text = _sentences(200)
    sizes = _sizes(text, "optimal", 200, target_size=target)
    assert abs(statistics.mean(sizes) - target) <= target * 0.25
    assert max(sizes) <= 200


def test_min_size_is_respected() -> None:
    text = _sentences(36)  # 504 characters at a limit of 100: greedy leaves a short last chunk
    sizes = _sizes(text, "optimal", 100, min_size=60)
    assert min(sizes) >= 60


def test_text_that_fits_is_one_chunk() -> None:
    assert _sizes("短い文。もう一つ。", "optimal", 100) == [9]


def test_no_punctuation_falls_back_to_words_and_graphemes() -> None:
    text = " ".join(["kireme"] * 300) + "あ" * 500
    spans = pack(text, PROSE_LEVELS, Chars().for_text(text), max_size=64, packing="optimal")
    assert "".join(text[s.start : s.end] for s in spans).replace(" ", "") == text.replace(" ", "")
    assert all(s.size <= 64 for s in spans)


def test_every_strategy_takes_the_option_and_ids_record_it() -> None:
    doc = Document("# 規程\n\n" + _sentences(60), id="rules.md", metadata={"format": "markdown"})
    for strategy in ("recursive", "sentence", "paragraph", "markdown", "fixed", "json", *_CODE):
        language = {"language": "python"} if strategy == "code" else {}  # Markdown read as Python
        greedy = make_chunker(strategy, max_size=200, **language)
        optimal = make_chunker(strategy, max_size=200, packing="optimal", **language)
        assert "packing" not in greedy.config  # ids of greedy chunks are what they always were
        assert optimal.config["packing"] == "optimal"
        assert greedy.config_hash != optimal.config_hash
        chunks = optimal.chunk(doc)
        assert all(doc.text[c.start : c.end] == c.text and c.size <= 200 for c in chunks)


def test_semantic_topics_are_packed_optimally_inside() -> None:
    topic = "旅費の規程は出張の費用を定める。" * 20 + "\n\n" + "Cats sleep most of the day. " * 20
    chunks = chunk(topic, "semantic", max_size=120, similarity="bigram", cache_dir=False, packing="optimal")
    assert all(topic[c.start : c.end] == c.text and c.size <= 120 for c in chunks)
    assert not any("旅費" in c.text and "Cats" in c.text for c in chunks)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"packing": "best"}, "packing must be one of greedy, optimal"),
        ({"target_size": 100}, "packing='optimal'"),
        ({"packing": "optimal", "target_size": 0}, "between 1 and max_size"),
        ({"packing": "optimal", "target_size": 300}, "between 1 and max_size"),
    ],
)
def test_bad_options_are_config_errors(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_chunker("recursive", max_size=200, **options)


def test_cli_packing_options(tmp_path) -> None:
    path = tmp_path / "rules.txt"
    path.write_text(_sentences(80), encoding="utf-8")

    def kireme(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "kireme.cli", "chunk", str(path), "--max-size", "512", *args]
        return subprocess.run(command, capture_output=True, text=True, encoding="utf-8")

    greedy = kireme("--format", "jsonl")
    optimal = kireme("--packing", "optimal", "--format", "jsonl")
    assert greedy.returncode == optimal.returncode == 0
    assert greedy.stdout != optimal.stdout
    assert optimal.stdout.count('"size": ') == 3
    bad = kireme("--target-size", "100")
    assert bad.returncode == 2
    assert "--target-size needs --packing optimal" in bad.stderr


def _dp_steps(monkeypatch, text: str) -> tuple[int, int]:
    steps = []
    original = pack_module._OptimalPacker.run

    def run(self):
        out = original(self)
        steps.append(self.dp_steps)
        return out

    monkeypatch.setattr(pack_module._OptimalPacker, "run", run)
    n = len(chunk(text, "recursive", max_size=2000, packing="optimal"))
    return sum(steps), n


def test_dp_work_is_linear_where_candidates_are_dense(monkeypatch) -> None:
    """Every word a candidate (no punctuation): thinning keeps the chunks weighed per start bounded."""
    rng = random.Random(3)
    words = ["kireme", "cut", "chunk", "offset", "grapheme", "budget"]

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    small_steps, small_chunks = _dp_steps(monkeypatch, text(10_000))
    large_steps, large_chunks = _dp_steps(monkeypatch, text(40_000))
    assert large_chunks >= 3 * small_chunks
    assert large_steps <= 4 * small_steps * 1.5
    assert large_steps / large_chunks <= 8 * pack_module.GRAIN**2
