"""The ``lines`` sentence mode: text that comes one sentence a line (transcripts, Choi's benchmark) is cut
at its line ends, by every strategy and by ``kireme eval`` on Choi ``.ref`` files without being asked."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kireme import SemanticChunker, make_chunker
from kireme.boundaries.levels import CLAUSE, LINE, PARAGRAPH, SENTENCE, WORD, with_sentences
from kireme.chunkers import ParagraphChunker, RecursiveChunker, SentenceChunker
from kireme.cli import cli
from kireme.embed import KeywordEmbedder
from kireme.errors import ConfigError
from kireme.evaluate.datasets import load_choi
from kireme.evaluate.runner import evaluate_segmentation, unit_ends
from kireme.semantic.units import semantic_units
from kireme.strategies import chunker_from_options
from kireme.structure.chunker import StructureChunker
from kireme.text.sentences import line_spans, sentence_spans

# A transcript in lower case without punctuation, one utterance a line: kireme's sentence rules find no
# sentence end in it (a single line break is not one), the lines are the sentences.
RAIL = [
    "the train left the station late and the train was full",
    "people on the station platform waited for the next train",
    "the train station has a new platform for the express train",
    "the train driver stopped the train before the station signal",
    "the next train to the station leaves the platform at noon",
]
GARDEN = [
    "the garden tomatoes need water in the garden every evening",
    "the garden beds are full of tomatoes and onions this summer",
    "weeds grow fast in the garden beds between the onions",
    "she waters the garden tomatoes and the onions after work",
    "the garden gives more tomatoes than the family can eat",
]
TOPICS = {"rail": ["train", "station", "platform"], "garden": ["garden", "tomato", "onion"]}
LINES = RAIL + GARDEN
TRANSCRIPT = "\n".join(LINES) + "\n"


def line_ends(text: str) -> set[int]:
    return {text.index(line) + len(line) for line in text.split("\n") if line}


def test_line_spans_are_the_non_blank_lines_trimmed() -> None:
    text = "  first line . \r\n\n second。 third\n\u3000\nlast"
    assert [text[a:b] for a, b in line_spans(text)] == ["first line .", "second。 third", "last"]
    assert sentence_spans(text, "lines") == line_spans(text)
    assert line_spans("") == [] and line_spans("\n \n") == [] and line_spans("x") == [(0, 1)]
    # the rules see one sentence in the transcript; the lines mode sees every line
    assert len(sentence_spans(TRANSCRIPT)) == 1
    assert [TRANSCRIPT[a:b] for a, b in sentence_spans(TRANSCRIPT, "lines")] == LINES
    with pytest.raises(ConfigError, match="sentences must be one of auto, lines"):
        sentence_spans(TRANSCRIPT, "words")


def test_with_sentences_puts_line_breaks_before_the_sentence_rules() -> None:
    assert with_sentences([SENTENCE, CLAUSE, WORD]) == [SENTENCE, CLAUSE, WORD]
    assert with_sentences([SENTENCE, CLAUSE, WORD], "lines") == [LINE, SENTENCE, CLAUSE, WORD]
    assert with_sentences([PARAGRAPH, SENTENCE, CLAUSE], "lines") == [PARAGRAPH, LINE, SENTENCE, CLAUSE]
    # a LINE below the sentence rules (a long sentence cut at its lines) moves up, once
    tail = [SENTENCE, CLAUSE, LINE, WORD]
    assert with_sentences(tail) == tail
    assert with_sentences(tail, "lines") == [LINE, SENTENCE, CLAUSE, WORD]
    # a preset that cuts at line breaks already is left alone; so is one without sentences
    assert with_sentences([PARAGRAPH, LINE, SENTENCE], "lines") == [PARAGRAPH, LINE, SENTENCE]
    assert with_sentences([CLAUSE, WORD], "lines") == [CLAUSE, WORD]


@pytest.mark.parametrize("cls", [SentenceChunker, ParagraphChunker, RecursiveChunker])
def test_packing_strategies_cut_a_line_per_sentence_document_at_line_ends(cls: type) -> None:
    ends = line_ends(TRANSCRIPT)
    chunks = cls(max_size=130, sentences="lines").chunk(TRANSCRIPT)
    assert len(chunks) > 2
    assert all(c.end in ends for c in chunks)
    assert all(TRANSCRIPT[c.start : c.end] == c.text for c in chunks)


def test_the_sentence_rules_alone_cut_the_one_sentence_transcript_at_its_line_ends() -> None:
    # the rules see one "sentence"; too long for a chunk, it is cut at its line breaks before its words
    chunks = SentenceChunker(max_size=130).chunk(TRANSCRIPT)
    assert len(chunks) > 1 and all(c.end in line_ends(TRANSCRIPT) for c in chunks)


def test_semantic_units_and_topic_cut_follow_the_lines() -> None:
    units = semantic_units(TRANSCRIPT, sentences="lines")
    assert [TRANSCRIPT[a:b] for a, b in units] == LINES
    # without the mode the whole transcript is one "sentence", cut into pieces of at most 300 characters
    assert len(semantic_units(TRANSCRIPT)) < len(LINES)
    chunker = SemanticChunker(
        similarity=KeywordEmbedder(TOPICS), cache_dir=False, max_size=1000, sentences="lines"
    )
    analysis = chunker.analyze(TRANSCRIPT)
    assert len(analysis.units) == len(LINES)
    chunks = chunker.chunk(TRANSCRIPT)
    assert all(c.end in line_ends(TRANSCRIPT) for c in chunks)
    assert [c.text for c in chunks] == ["\n".join(RAIL), "\n".join(GARDEN)]


def test_a_line_longer_than_a_unit_is_cut_at_its_sentence_ends_first() -> None:
    line = "The first part is here. " * 10 + "The second part is there."
    units = semantic_units(line + "\nshort line", max_unit_chars=100, sentences="lines")
    assert [line[a:b].endswith(".") for a, b in units[:-1]] == [True] * (len(units) - 1)
    assert all(b - a <= 100 for a, b in units)


def test_the_mode_names_itself_in_the_config_only_when_set() -> None:
    auto, lines = SentenceChunker(), SentenceChunker(sentences="lines")
    assert "sentences" not in auto.config  # the ids of every existing chunking stay as they were
    assert lines.config["sentences"] == "lines" and lines.config_hash != auto.config_hash
    assert SemanticChunker(similarity="bigram", sentences="lines").config["sentences"] == "lines"
    with pytest.raises(ConfigError, match="sentences must be one of"):
        SentenceChunker(sentences="line")
    built = chunker_from_options("paragraph", sentences="lines")
    assert built.sentences == "lines"


def test_structure_chunker_takes_the_mode() -> None:
    chunks = StructureChunker(max_size=130, sentences="lines").chunk(TRANSCRIPT)
    assert all(c.end in line_ends(TRANSCRIPT) for c in chunks)


# --- evaluation: Choi .ref files are one sentence a line, by their format -----------------------------


def write_choi(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    body = "==========\n" + "\n".join(RAIL) + "\n==========\n" + "\n".join(GARDEN) + "\n==========\n"
    (folder / "0.ref").write_text(body, encoding="latin-1")
    return folder


def test_choi_documents_say_their_lines_are_sentences(tmp_path: Path) -> None:
    [sd] = load_choi(write_choi(tmp_path / "choi"))
    assert sd.document.metadata["sentence_mode"] == "lines"
    text = sd.document.text
    assert unit_ends(text, "lines") == sorted(line_ends(text))
    assert len(unit_ends(text)) >= len(LINES)  # the rules' ends and the lines together
    chunker = SemanticChunker(similarity=KeywordEmbedder(TOPICS), cache_dir=False, max_size=1000)
    row = evaluate_segmentation(replace(chunker, sentences="lines"), [sd])
    assert row.boundary_f1 == 1.0 and row.pk == 0.0
    assert evaluate_segmentation(chunker, [sd]).boundary_f1 < 1.0  # the rules: one "sentence" of 589 chars


def run_cli(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import kireme.semantic.backends as backends

    monkeypatch.setattr(backends, "make_embedder", lambda spec, purpose: KeywordEmbedder(TOPICS))


def test_eval_on_choi_cuts_at_lines_unless_told_otherwise(tmp_path: Path, fake_model: None) -> None:
    folder = write_choi(tmp_path / "choi")
    common = ["eval", "--segments", str(folder), "-s", "semantic", "--no-cache"]
    common += ["--max-size", "1000", "--format", "jsonl", "-q"]
    lines = json.loads(run_cli(*common).stdout.splitlines()[0])
    assert lines["chunks"] == 2 and lines["boundary_f1"] == 1.0 and lines["pk"] == 0.0
    told = run_cli(*common, "--sentences", "auto")
    assert json.loads(told.stdout.splitlines()[0])["boundary_f1"] < 1.0


def test_chunk_and_inspect_take_sentences_lines(tmp_path: Path) -> None:
    path = tmp_path / "talk.txt"
    path.write_text(TRANSCRIPT, encoding="utf-8")
    result = run_cli("chunk", str(path), "-s", "sentence", "--max-size", "130", "--sentences", "lines")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows and all(row["end"] in line_ends(TRANSCRIPT) for row in rows)
    shown = run_cli("inspect", str(path), "--similarity", "bigram", "--no-cache", "--sentences", "lines")
    assert f"{len(LINES)} sentences" in shown.stdout
    shown = run_cli("inspect", str(path), "--similarity", "bigram", "--no-cache")
    assert f"{len(semantic_units(TRANSCRIPT))} sentences" in shown.stdout  # pieces of the one "sentence"
    assert "--sentences [auto|lines]" in run_cli("chunk", "--help").stdout


def test_compare_takes_sentences_lines(tmp_path: Path) -> None:
    path = tmp_path / "talk.txt"
    path.write_text(TRANSCRIPT, encoding="utf-8")
    questions = tmp_path / "qa.jsonl"
    row = {
        "question": "which train leaves the platform at noon",
        "answer": "leaves the platform at noon",
        "doc": str(path),
    }
    questions.write_text(json.dumps(row) + "\n", encoding="utf-8")
    common = ["compare", str(path), "--questions", str(questions), "-s", "semantic", "--sizes", "1000"]
    common += ["--similarity", "bigram", "--no-cache", "--retriever", "bm25", "--format", "jsonl", "-q"]
    by_lines = json.loads(run_cli(*common, "--sentences", "lines").stdout.splitlines()[0])
    by_rules = json.loads(run_cli(*common).stdout.splitlines()[0])
    assert by_lines["hits"] == 1
    # the lines compared one by one: the topic change from the trains to the garden is found; by the
    # rules the transcript is one "sentence" cut into pieces of 300 characters, compared as two units
    assert by_lines["chunks"] == 2 and by_rules["chunks"] == 1


@pytest.mark.parametrize("strategy", ["sentence", "recursive", "paragraph", "markdown"])
def test_in_the_lines_mode_a_short_line_is_a_sentence_not_a_heading(strategy: str) -> None:
    """With ``sentences="lines"`` every line is a sentence: a short line without a full stop was read as a
    heading kept with its body, so it took the start of the next line with it, cut mid-line though every
    line fit (``…may this year\nthe new desks come soon`` | ``and the chairs follow later``)."""
    text = (
        "the office moves in may this year\nthe new desks come soon and the chairs follow later\n"
        "expense claims go online in july\n来月から経費精算は新しいシステムで行うので各自の申請方法を確認しておく\n"
    )
    chunks = make_chunker(strategy, max_size=60, sentences="lines").chunk(text)
    assert [c.text for c in chunks] == [line for line in text.splitlines()]


def test_the_semantic_strategy_in_the_lines_mode_cuts_between_lines() -> None:
    """``-s semantic --sentences lines`` still read each short line as a heading: no line end could be a cut,
    and whole lines that fit were cut at clauses (``電池は一回の`` | ``充電で十時間もちます``)."""
    text = (
        "今日は新しい製品の説明をします\nこの製品は軽くて持ち運びが簡単です\n電池は一回の充電で十時間もちます\n"
        "次にお昼ご飯の話をします\n社員食堂のカレーが値上がりしました\n"
    )
    lines = text.splitlines()
    for max_size in (20, 40, 60):
        chunks = SemanticChunker(similarity="bigram", max_size=max_size, sentences="lines").chunk(text)
        assert all(set(c.text.split("\n")) <= set(lines) for c in chunks), (
            max_size,
            [c.text for c in chunks],
        )
