"""Evaluation dataset loaders: exact, verified offsets on tiny fixtures, and every error path.

The fixtures under ``fixtures/eval/`` are our own sentences. The last tests read the public corpora in
``../shared/corpora`` and are skipped when that folder is absent.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from kireme import load
from kireme.document import Chunk, Document
from kireme.errors import ConfigError, DatasetError
from kireme.evaluate.datasets import (
    QASet,
    SegmentedDocument,
    answer_not_found,
    ink_span,
    join_articles,
    load_choi,
    load_chroma,
    load_questions_jsonl,
    load_segments_jsonl,
    load_squad,
)
from kireme.evaluate.metrics import answered_by, contains_answer

FIXTURES = Path(__file__).parent / "fixtures" / "eval"
CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"


def _doc(qaset: QASet, doc_id: str | None) -> Document:
    return next(d for d in qaset.documents if d.id == doc_id)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _error(path: Path, line: int | None, match: str, call) -> DatasetError:  # type: ignore[no-untyped-def]
    """Run ``call``; it must raise a DatasetError naming ``path`` (and ``line``) whose text has ``match``."""
    with pytest.raises(DatasetError, match=match) as info:
        call()
    error = info.value
    assert error.path == path.as_posix()
    assert error.line == line
    where = f"{path.as_posix()}:{line}: " if line is not None else f"{path.as_posix()}: "
    assert str(error).startswith(where)
    assert "\n" not in str(error)
    return error


def _covers(sd: SegmentedDocument) -> None:
    """Segments tile the text: contiguous from 0 to its end, none empty."""
    assert sd.segments[0][0] == 0 and sd.segments[-1][1] == len(sd.document.text)
    assert all(a[1] == b[0] for a, b in zip(sd.segments, sd.segments[1:], strict=False))
    assert all(s < e for s, e in sd.segments)
    assert sd.boundaries == tuple(e for _, e in sd.segments[:-1])


# ------------------------------------------------------------------------------------ questions JSONL


def _guide_docs() -> list[Document]:
    return [
        load(FIXTURES / "docs/a/guide.md"),
        load(FIXTURES / "docs/b/guide.md"),
        load(FIXTURES / "docs/faq.txt"),
    ]


def test_questions_jsonl_resolves_docs_and_verifies_offsets() -> None:
    docs = _guide_docs()
    questions = load_questions_jsonl(FIXTURES / "questions.jsonl", docs)
    assert len(questions) == 4  # the blank line is ignored
    boot, hold, charge, orphan = questions
    texts = {d.id: d.text for d in docs}
    # by a path relative to the JSONL file's folder
    assert boot.doc_id == (FIXTURES / "docs/a/guide.md").as_posix() and boot.id == "boot"
    assert boot.terms == ("電源ボタン", "起動")
    assert boot.answer_start == 13 and boot.references == ((13, 15),)
    assert texts[boot.doc_id][13:15] == boot.answer == "三秒"
    # terms as a whitespace-separated string; no answer_start -> no references
    assert hold.doc_id == (FIXTURES / "docs/b/guide.md").as_posix()
    assert hold.terms == ("power", "button", "hold") and hold.references == () and hold.answer_start is None
    assert hold.id == "questions.jsonl:3"  # default id: file name and line
    # by its (unique) file name
    assert charge.doc_id == (FIXTURES / "docs/faq.txt").as_posix()
    s, e = charge.references[0]
    assert texts[charge.doc_id][s:e] == charge.answer == "二時間"
    assert orphan.doc_id is None and orphan.references == ()


def test_questions_jsonl_resolves_by_id(tmp_path: Path) -> None:
    docs = [Document("返品は七日以内に受け付けます。", id="policy/returns"), Document("Other text.", id="x")]
    path = _write(
        tmp_path / "q.jsonl",
        '{"question": "返品は？", "answer": "七日以内", "doc": "policy/returns", "answer_start": 3}\n',
    )
    [question] = load_questions_jsonl(path, docs)
    assert question.doc_id == "policy/returns" and question.references == ((3, 7),)
    # by the file name of an id that is a path
    path2 = _write(
        tmp_path / "q2.jsonl", '{"question": "返品は？", "answer": "七日以内", "doc": "returns"}\n'
    )
    assert load_questions_jsonl(path2, docs)[0].doc_id == "policy/returns"


@pytest.mark.parametrize(
    ("lines", "line", "match"),
    [
        (['{"question": "a", "answer": "b"}', '{"question": "a", "answer": }'], 2, "bad JSON"),
        (['["question", "answer"]'], 1, "expected a JSON object"),
        (['{"answer": "b"}'], 1, "missing field 'question'"),
        (["", '{"question": "a"}'], 2, "missing field 'answer'"),
        (['{"question": "a", "answer": 3}'], 1, "field 'answer' must be str"),
        (['{"question": " ", "answer": "b"}'], 1, "field 'question' is empty"),
        (['{"question": "a", "answer": "b", "doc": "nowhere.md"}'], 1, "unknown doc 'nowhere.md'"),
        (['{"question": "a", "answer": "b", "doc": "guide.md"}'], 1, "doc 'guide.md' is ambiguous"),
        (['{"question": "a", "answer": "b", "doc": "docs/c/faq.txt"}'], 1, "unknown doc 'docs/c/faq.txt'"),
        (
            ['{"question": "a", "answer": "三時間", "doc": "faq.txt", "answer_start": 12}'],
            1,
            "not found at answer_start 12",
        ),
        (['{"question": "a", "answer": "三秒", "doc": "faq.txt", "answer_start": 999}'], 1, "outside"),
        (['{"question": "a", "answer": "三秒", "doc": "faq.txt", "answer_start": -1}'], 1, "outside"),
        (['{"question": "a", "answer": "三秒", "answer_start": 13}'], 1, "needs 'doc'"),
        (['{"question": "a", "answer": "", "doc": "faq.txt", "answer_start": 1}'], 1, "empty 'answer'"),
        (['{"question": "a", "answer": "  "}'], 1, "empty 'answer'"),  # no chunk can hold it: always a miss
        ([""], None, "no questions in this file"),
        (['{"question": "a", "answer": "b", "doc": "faq.txt", "answer_start": true}'], 1, "must be int"),
        (['{"question": "a", "answer": "b", "terms": 5}'], 1, "'terms' must be str or list"),
        (['{"question": "a", "answer": "b", "terms": ["x", 1]}'], 1, "must list strings"),
        (
            ['{"question": "a", "answer": "b", "id": "q"}', '{"question": "c", "answer": "d", "id": "q"}'],
            2,
            "duplicate id 'q'",
        ),
    ],
)
def test_questions_jsonl_errors_name_file_and_line(
    tmp_path: Path, lines: list[str], line: int, match: str
) -> None:
    docs = _guide_docs()
    path = _write(tmp_path / "bad.jsonl", "\n".join(lines) + "\n")
    _error(path, line, match, lambda: load_questions_jsonl(path, docs))


def test_an_answer_found_in_no_document_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Such a question counts as a miss whatever the chunking; it used to be scored silently."""
    docs = _guide_docs()
    text = docs[0].text
    present = next(word for word in text.split() if len(word) >= 2)
    path = _write(
        tmp_path / "q.jsonl",
        json.dumps({"question": "a", "answer": present}, ensure_ascii=False)
        + "\n"
        + json.dumps({"question": "b", "answer": "どこにもない答え"}, ensure_ascii=False)
        + "\n",
    )
    with caplog.at_level("WARNING"):
        questions = load_questions_jsonl(path, docs)
    assert len(questions) == 2
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert "1 of 2 answers cannot be found as written" in warning
    assert "q.jsonl:2 'どこにもない答え': in no document" in warning


def test_an_answer_that_cannot_be_found_says_what_would_find_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every answer no document holds as written was one line of ids, the first three; and in
    ``--show-misses`` "no chunk holds it whole", the words for a cut chunking made. Each is named now with
    its answer and why: another document, full-width and half-width forms, a line break, or nowhere."""
    docs = [
        Document("日当は３，０００円とする。申請は\n月末までに行う。", id="rules.txt"),
        Document("在宅勤務は１週につき３日までとする。", id="remote.txt"),
    ]
    rows = [
        {"question": "日当は？", "answer": "3,000円"},
        {"question": "申請は？", "answer": "申請は月末まで"},
        {"question": "在宅は？", "answer": "１週につき３日まで", "doc": "rules.txt"},
        {"question": "誰が？", "answer": "山田太郎"},
        {"question": "いつ？", "answer": "月末までに行う"},
    ]
    path = _write(tmp_path / "q.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    with caplog.at_level("WARNING"):
        questions = load_questions_jsonl(path, docs)
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert "4 of 5 answers cannot be found as written" in warning
    assert "q.jsonl:1 '3,000円': not as written; it matches with full-width and half-width forms" in warning
    assert "q.jsonl:2 '申請は月末まで': not as written; it matches across a line break" in warning
    assert "q.jsonl:3 '１週につき３日まで': not in rules.txt, but in remote.txt" in warning
    assert "q.jsonl:4 '山田太郎': in no document" in warning
    texts = {d.id: d.text for d in docs}
    assert answer_not_found(questions[4], texts) is None


def test_questions_jsonl_missing_and_undecodable_files(tmp_path: Path) -> None:
    missing = tmp_path / "none.jsonl"
    _error(missing, None, "no such file", lambda: load_questions_jsonl(missing, []))
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"question": "a"}\x00\x00\xff\xfe\x00\x01')
    _error(binary, None, "binary file", lambda: load_questions_jsonl(binary, []))


def test_a_questions_file_in_shift_jis_is_read_as_documents_are(tmp_path: Path) -> None:
    """A questions file saved from Excel or Notepad in Shift_JIS failed with "not valid utf-8-sig text";
    the documents beside it were read in any Japanese encoding. It is read the same way now."""
    docs = [Document("日当は二千円とする。\n", id="rules.txt")]
    path = tmp_path / "q.jsonl"
    path.write_bytes('{"question": "日当はいくら？", "answer": "二千円"}\r\n'.encode("cp932"))
    [question] = load_questions_jsonl(path, docs)
    assert (question.question, question.answer) == ("日当はいくら？", "二千円")


# ---------------------------------------------------------------------------------------------- SQuAD


def test_squad_maps_and_verifies_answers_with_prefix_stripped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING"):
        qaset = load_squad(FIXTURES / "squad-mini.json")
    # the questions left out are said, not dropped silently
    assert any("2 question(s) left out" in r.getMessage() for r in caplog.records)
    assert qaset.name == "squad-mini"
    senbei, fog = qaset.documents
    assert senbei.id == "squad-mini.json#0:炭酸せんべい" and senbei.metadata["title"] == "炭酸せんべい"
    assert fog.id == "squad-mini.json#1:朝霧"
    # prefixes gone, the repeated context kept once, contexts joined by a blank line
    assert senbei.text == (
        "炭酸せんべいは、温泉の炭酸水を生地に混ぜて焼いた薄い煎餅である。\n\n"
        "兵庫県の有馬温泉では明治時代から土産物として売られている。"
    )
    assert "[SEP]" not in fog.text and fog.text.endswith(
        "Morning fog forms when the ground cools overnight under a clear sky."
    )
    assert fog.text.count("\n\n") == 2  # one inside the first context, one between the contexts
    by_id = {q.id: q for q in qaset.questions}
    assert sorted(by_id) == ["f1", "f2", "t1", "t3", "t4"]
    for q in qaset.questions:
        text = _doc(qaset, q.doc_id).text
        assert q.answer_start is not None
        assert text[q.answer_start : q.answer_start + len(q.answer)] == q.answer
        assert q.references == ((q.answer_start, q.answer_start + len(q.answer)),)
    # the prefix "炭酸せんべい [SEP] " (13 chars) is subtracted: 温泉の炭酸水 is at 21 in the context, 8 in the text
    assert by_id["t1"].answer_start == 8
    # a question on the repeated context maps into the one kept copy
    assert by_id["t3"].answer_start == senbei.text.index("薄い煎餅")
    # second paragraph: its offset in the document (33 + 2) plus its answer_start minus the prefix; first answer used
    assert by_id["t4"].answer == "有馬温泉" and by_id["t4"].answer_start == senbei.text.index("有馬温泉")
    assert by_id["f2"].answer_start == fog.text.index("when the ground")
    # t2 (answer in the title prefix) and t5 (text does not match) are skipped and counted; t6 is unanswerable
    assert (senbei.metadata["questions"], senbei.metadata["skipped"], senbei.metadata["in_title"]) == (
        3,
        2,
        1,
    )
    assert senbei.metadata["unanswerable"] == 1 and fog.metadata["skipped"] == 0


def test_a_squad_file_without_questions_is_an_error(tmp_path: Path) -> None:
    """It was scored 0.000 with exit 0."""
    empty = _write(tmp_path / "empty.json", '{"data": []}')
    _error(empty, None, "no answerable questions", lambda: load_squad(empty))


def test_squad_without_prefix_stripping_keeps_title_answers() -> None:
    qaset = load_squad(FIXTURES / "squad-mini.json", strip_title_prefix=False, name="raw")
    assert qaset.name == "raw"
    senbei = qaset.documents[0]
    assert senbei.text.startswith("炭酸せんべい [SEP] 炭酸せんべいは")
    by_id = {q.id: q for q in qaset.questions}
    assert by_id["t2"].answer_start == 0 and by_id["t1"].answer_start == 21
    assert "t5" not in by_id  # a wrong offset is still skipped, never searched for
    for q in qaset.questions:
        text = _doc(qaset, q.doc_id).text
        assert text[q.references[0][0] : q.references[0][1]] == q.answer


def test_squad_directory_in_sorted_order_and_limit(tmp_path: Path) -> None:
    data = (FIXTURES / "squad-mini.json").read_text(encoding="utf-8")
    _write(tmp_path / "dev" / "b.json", data)
    _write(tmp_path / "dev" / "a.json", data)
    _write(tmp_path / "dev" / "notes.txt", "not json")
    qaset = load_squad(tmp_path / "dev")
    assert qaset.name == "dev"
    assert [d.id for d in qaset.documents] == [
        "a.json#0:炭酸せんべい",
        "a.json#1:朝霧",
        "b.json#0:炭酸せんべい",
        "b.json#1:朝霧",
    ]
    assert len(qaset.questions) == 10
    limited = load_squad(tmp_path / "dev", limit_articles=3)
    assert [d.id for d in limited.documents][-1] == "b.json#0:炭酸せんべい" and len(limited.documents) == 3


def test_squad_errors(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad.json", '{"data": [\n  {"title": "x",\n   "paragraphs": [}\n]}')
    _error(bad, 3, "bad JSON", lambda: load_squad(bad))
    flat = _write(tmp_path / "flat.json", '[{"title": "x"}]')
    _error(flat, None, "not SQuAD format", lambda: load_squad(flat))
    no_context = _write(
        tmp_path / "nc.json", json.dumps({"data": [{"title": "x", "paragraphs": [{"qas": []}]}]})
    )
    _error(
        no_context,
        None,
        r"data\[0\]\.paragraphs\[0\]: missing field 'context'",
        lambda: load_squad(no_context),
    )
    bad_start = {"data": [{"title": "x", "paragraphs": [{"context": "abc", "qas": [
        {"id": "1", "question": "q", "answers": [{"text": "a", "answer_start": "0"}]}]}]}]}  # fmt: skip
    bad_start_path = _write(tmp_path / "bs.json", json.dumps(bad_start))
    _error(
        bad_start_path,
        None,
        r"qas\[0\]\.answers\[0\]: field 'answer_start' must be int",
        lambda: load_squad(bad_start_path),
    )
    (tmp_path / "empty").mkdir()
    _error(tmp_path / "empty", None, "no .json files", lambda: load_squad(tmp_path / "empty"))
    _error(tmp_path / "none.json", None, "no such file", lambda: load_squad(tmp_path / "none.json"))


# --------------------------------------------------------------------------------------------- Chroma


def test_chroma_layout_references_are_code_point_offsets() -> None:
    qaset = load_chroma(FIXTURES / "chroma")
    assert qaset.name == "chroma"
    assert [d.id for d in qaset.documents] == ["garden_club", "library_news"]
    assert len(qaset.questions) == 3
    first, _, third = qaset.questions
    assert first.doc_id == "library_news" and first.answer == "" and len(first.references) == 2
    assert third.question == "What will the club plant,\nand when?"  # a quoted field spanning two lines
    news = _doc(qaset, "library_news").text
    s, e = first.references[0]
    assert news[s:e] == "新しい閲覧室は三階にあります。"
    # offsets count code points, not UTF-8 bytes
    assert news.encode("utf-8")[s:e] != news[s:e].encode("utf-8")
    assert _doc(qaset, "garden_club").metadata["format"] == "text"
    assert {q.id for q in qaset.questions} == {"library_news:0", "library_news:1", "garden_club:2"}


def _chroma(tmp_path: Path, rows: str) -> Path:
    _write(tmp_path / "corpora" / "memo.md", "買い物リスト：牛乳と卵。\n")
    return _write(tmp_path / "questions_df.csv", rows)


@pytest.mark.parametrize(
    ("rows", "line", "match"),
    [
        ("question,references\nq,[]\n", 1, "missing column"),
        ("question,references,corpus_id\nq,[],memo\nq,[],notes\n", 3, "unknown corpus_id 'notes'"),
        (
            'question,references,corpus_id\nq,"[{""content"": ""牛乳"", ""start_index"": 8, ""end_index"": 10}]",memo\n',
            2,
            r"memo\[8:10\] is '乳と'",
        ),
        (
            'question,references,corpus_id\nq,"[{""content"": ""牛乳"", ""start_index"": 7, ""end_index"": 99}]",memo\n',
            2,
            "not the content",
        ),
        ("question,references,corpus_id\nq,[{,memo\n", 2, "bad JSON in 'references'"),
        ("question,references,corpus_id\nq,{},memo\n", 2, "must be a JSON list"),
        (
            'question,references,corpus_id\nq,"[{""content"": ""牛乳""}]",memo\n',
            2,
            r"references\[0\]: missing field 'start_index'",
        ),
    ],
)
def test_chroma_errors_name_file_and_line(tmp_path: Path, rows: str, line: int, match: str) -> None:
    csv_path = _chroma(tmp_path, rows)
    with pytest.raises(DatasetError, match=match) as info:
        load_chroma(tmp_path)
    assert info.value.path == csv_path.as_posix() and info.value.line == line
    assert str(info.value).startswith(f"{csv_path.as_posix()}:{line}: ")


def _chunk(text: str, doc_id: str, start: int, end: int) -> Chunk:
    return Chunk(text[start:end], start, end, doc_id, 0, f"{doc_id}:{start}", end - start, "chars")


def test_chroma_references_leave_out_the_whitespace_around_them(tmp_path: Path) -> None:
    """An excerpt given with the space before it and the line break after it (as a quarter of Chroma's are)
    is judged on its words: the trimmed chunk that holds all of them answers the question, and a chunk that
    misses a word still does not."""
    text = "Opening hours changed. The reading room is now on the third floor.\nCoffee is not allowed.\n"
    _write(tmp_path / "corpora" / "memo.md", text)
    excerpt = " The reading room is now on the third floor.\n"
    start = text.index(excerpt)
    refs = json.dumps([{"content": excerpt, "start_index": start, "end_index": start + len(excerpt)}])
    rows = io.StringIO()
    csv.writer(rows).writerows([("question", "references", "corpus_id"), ("Where?", refs, "memo")])
    _write(tmp_path / "questions_df.csv", rows.getvalue())
    (question,) = load_chroma(tmp_path).questions
    (ref,) = question.references
    assert text[ref[0] : ref[1]] == "The reading room is now on the third floor."
    words = text.index("The reading")
    whole, short = _chunk(text, "memo", words, ref[1]), _chunk(text, "memo", words, ref[1] - 1)
    assert answered_by(question, [whole]) and not answered_by(question, [short])


def test_ink_span_trims_both_ends_and_keeps_a_blank_span() -> None:
    text = "\u3000 答えは四十二です。\n\n   "
    assert ink_span(text, 0, len(text)) == (2, 11)
    assert text[2:11] == "答えは四十二です。"
    assert ink_span(text, 11, len(text)) == (11, len(text))  # nothing but whitespace: left as it is
    assert ink_span(text, 3, 5) == (3, 5)


def test_answer_text_with_spaces_matches_the_trimmed_chunk(tmp_path: Path) -> None:
    """``answer_start`` with an answer that ends in a space: the reference leaves the space out; a question
    with the answer text only (no offset) is matched without its spaces too."""
    doc = Document("会議は十時から 始まります。", id="memo")
    path = _write(
        tmp_path / "q.jsonl",
        json.dumps({"question": "いつ？", "answer": "十時から ", "doc": "memo", "answer_start": 3})
        + "\n"
        + json.dumps({"question": "いつ？", "answer": " 十時から ", "doc": "memo"})
        + "\n",
    )
    with_offset, text_only = load_questions_jsonl(path, [doc])
    assert with_offset.references == ((3, 7),)
    chunk = _chunk(doc.text, "memo", 0, 7)
    assert contains_answer(with_offset, chunk) and contains_answer(text_only, chunk)


def test_chroma_layout_errors(tmp_path: Path) -> None:
    _error(tmp_path, None, "no corpora/ folder", lambda: load_chroma(tmp_path))
    (tmp_path / "corpora").mkdir()
    _error(tmp_path / "corpora", None, "no .md or .txt", lambda: load_chroma(tmp_path))
    _write(tmp_path / "corpora" / "a.md", "x")
    _write(tmp_path / "corpora" / "a.txt", "y")
    _error(tmp_path / "corpora" / "a.txt", None, "also exists as a.md", lambda: load_chroma(tmp_path))
    (tmp_path / "corpora" / "a.txt").unlink()
    _error(tmp_path / "questions_df.csv", None, "no such file", lambda: load_chroma(tmp_path))


# --------------------------------------------------------------------------------------- segmentations


def test_segments_jsonl_concatenates_without_separator() -> None:
    seasons, single = load_segments_jsonl(FIXTURES / "segments.jsonl")
    assert seasons.document.id == "seasons"
    assert (
        seasons.document.text
        == "春は桜が咲く。花見の季節だ。\n夏は海で泳ぐ。日差しが強い。\nAutumn brings red leaves."
    )
    assert [seasons.document.text[s:e] for s, e in seasons.segments] == [
        "春は桜が咲く。花見の季節だ。\n",
        "夏は海で泳ぐ。日差しが強い。\n",
        "Autumn brings red leaves.",
    ]
    assert seasons.boundaries == (15, 30)
    _covers(seasons)
    assert single.document.id == "segments.jsonl:2" and single.boundaries == ()


@pytest.mark.parametrize(
    ("lines", "line", "match"),
    [
        (['{"id": "a", "segments": []}'], 1, "has no segments"),
        (
            ['{"id": "a", "segments": ["x"]}', '{"id": "b", "segments": ["x", ""]}'],
            2,
            "segment 1 of 'b' is empty",
        ),
        (['{"id": "a", "segments": ["x", 3]}'], 1, "segment 1 must be a string"),
        (['{"id": "a"}'], 1, "missing field 'segments'"),
        (['{"id": "a", "segments": "x"}'], 1, "'segments' must be list"),
        (['{"id": "a", "segments": ["x"]}', "", '{"id": "a", "segments": ["y"]}'], 3, "duplicate id 'a'"),
        (["{nope"], 1, "bad JSON"),
        # a topic of only whitespace was counted as a topic (3 topics in a text of 2)
        (
            ['{"id": "a", "segments": ["一つ目の話題。", "\\n\\n", "二つ目の話題。"]}'],
            1,
            "segment 1 of 'a' is only whitespace",
        ),
        # an empty file reported a perfect Pk of 0 and exited 0
        ([], None, "no documents in this file"),
        (["", "  "], None, "no documents in this file"),
    ],
)
def test_segments_jsonl_errors(tmp_path: Path, lines: list[str], line: int | None, match: str) -> None:
    path = _write(tmp_path / "segs.jsonl", "\n".join(lines) + "\n")
    _error(path, line, match, lambda: load_segments_jsonl(path))


def test_segmented_document_checks_its_segments() -> None:
    doc = Document("abcdef", id="d")
    assert SegmentedDocument(doc, ((0, 2), (2, 6))).boundaries == (2,)
    for bad in [(), ((0, 2), (3, 6)), ((0, 6), (6, 6)), ((1, 6),), ((0, 5),)]:
        with pytest.raises(ValueError, match="d: "):
            SegmentedDocument(doc, bad)


def test_choi_folder_boundaries() -> None:
    docs = load_choi(FIXTURES / "choi")
    assert [sd.document.id for sd in docs] == ["1/0.ref", "2/1.ref"]
    first, second = docs
    # latin-1: the byte 0xE9 is "é"; sentences joined by "\n", segments by a single "\n" too
    assert first.document.text == (
        "The kettle whistled at dawn . \nTea was poured for everyone . \n"
        "Rain fell on the café roof . \n"
        "Trains left the station on time . \nNobody missed one . "
    )
    pieces = [first.document.text[s:e] for s, e in first.segments]
    assert pieces[1] == "Rain fell on the café roof . \n"
    assert pieces[2].startswith("Trains") and not pieces[2].endswith("\n")
    assert first.boundaries == (len("The kettle whistled at dawn . \nTea was poured for everyone . \n"), 92)
    assert first.document.text[first.boundaries[1] :].startswith("Trains")
    assert first.document.metadata["sentences_per_segment"] == (2, 1, 2)
    _covers(first)
    # an empty segment (two separators in a row) and a blank line are dropped
    assert second.document.text == "A fox crossed the road . \nThe river rose after the storm . "
    assert len(second.segments) == 2
    _covers(second)
    # a single file: its id is its name
    [alone] = load_choi(FIXTURES / "choi" / "1" / "0.ref")
    assert alone.document.id == "0.ref" and alone.segments == first.segments


def test_a_ref_file_of_your_own_in_utf8_is_read_as_utf8(tmp_path: Path) -> None:
    """A ``.ref`` file was always read as latin-1: a Japanese one written in UTF-8 became mojibake (three
    "characters" per kana, so ``--max-size`` counted bytes) and was scored wrongly, without a word. UTF-8
    where it is valid, latin-1 (Choi's own files) where not, or the encoding given."""
    body = (
        "==========\n来月の予定を確認する。\n会議室は三階です。\n==========\n新しい机が届く。\n==========\n"
    )
    mine = tmp_path / "memo.ref"
    mine.write_text(body, encoding="utf-8")
    [sd] = load_choi(mine)
    assert sd.document.text == "来月の予定を確認する。\n会議室は三階です。\n新しい机が届く。"
    assert [sd.document.text[a:b] for a, b in sd.segments][1] == "新しい机が届く。"
    choi = tmp_path / "choi.ref"
    choi.write_bytes(
        "==========\nTea in the café . \n==========\nRain fell . \n==========\n".encode("latin-1")
    )
    assert load_choi(choi)[0].document.text.startswith("Tea in the café .")
    sjis = tmp_path / "sjis.ref"
    sjis.write_bytes(body.encode("shift_jis"))
    assert load_choi(sjis, encoding="shift_jis")[0].document.text == sd.document.text


def test_a_choi_file_not_named_ref_is_said_to_be_one(tmp_path: Path) -> None:
    """``eval --segments choi1.txt`` said ``bad JSON: Expecting value`` of a Choi file named ``.txt``: it says
    what the file is and how to give it."""
    plain = _write(
        tmp_path / "choi1.txt", "==========\none sentence .\n==========\nanother one .\n==========\n"
    )
    _error(plain, None, "Choi's format\\): name the file .ref", lambda: load_segments_jsonl(plain))
    broken = _write(tmp_path / "broken.jsonl", '{"id": "a", "segments": ["x"]}\n{nope\n')
    _error(broken, 2, "bad JSON", lambda: load_segments_jsonl(broken))  # any other bad line: as before


def test_choi_errors(tmp_path: Path) -> None:
    _error(tmp_path / "nothing", None, "no such file", lambda: load_choi(tmp_path / "nothing"))
    (tmp_path / "empty").mkdir()
    _error(tmp_path / "empty", None, "no .ref files", lambda: load_choi(tmp_path / "empty"))
    plain = _write(tmp_path / "plain.ref", "just a sentence .\n")
    _error(plain, None, "no ========== separator", lambda: load_choi(plain))
    hollow = _write(tmp_path / "hollow.ref", "==========\n\n==========\n")
    _error(hollow, None, "no sentences", lambda: load_choi(hollow))


# -------------------------------------------------------------------------------------- join_articles


def _articles() -> QASet:
    texts = [
        "りんごは秋に実る。\n\n青森県が産地として知られる。\n\n品種は多い。",
        "Cats sleep a lot.\n\nThey also purr.",
        "雪は冬に降る。",
        "\n\n先頭が空の記事。\n\n二段落目。\n\n三段落目。",
        "Bridges span rivers.\n\nSome are very old.\n\nMany are made of steel.",
        "茶は静岡県で多く作られる。\n\n新茶は五月ごろ。",
    ]
    docs = [Document(t, id=f"art{i}") for i, t in enumerate(texts)]
    return QASet(name="mini", documents=[*docs, Document("   ", id="blank")], questions=[])


def test_join_articles_is_reproducible_and_segments_cover_the_text() -> None:
    qaset = _articles()
    joined = join_articles(qaset, per_document=3, paragraphs=2, count=8, seed=7)
    again = join_articles(qaset, per_document=3, paragraphs=2, count=8, seed=7)
    assert [(sd.document.text, sd.segments) for sd in joined] == [
        (sd.document.text, sd.segments) for sd in again
    ]
    other = join_articles(qaset, per_document=3, paragraphs=2, count=8, seed=8)
    assert [sd.document.text for sd in joined] != [sd.document.text for sd in other]
    texts = {d.id: d.text for d in qaset.documents}
    for index, sd in enumerate(joined):
        assert sd.document.id == f"mini:join7:{index}"
        _covers(sd)
        sources = sd.document.metadata["articles"]
        assert len(set(sources)) == 3 and "blank" not in sources
        for (s, e), source, is_last in zip(sd.segments, sources, [False, False, True], strict=True):
            piece = sd.document.text[s:e]
            body = piece if is_last else piece.removesuffix("\n\n")
            assert is_last or piece.endswith("\n\n")
            assert texts[source].startswith(body)  # a prefix of the article ...
            assert sum(1 for block in body.split("\n\n") if block.strip()) == min(
                2, sum(1 for block in texts[source].split("\n\n") if block.strip())
            )  # ... holding its first two non-blank paragraphs


def test_join_articles_paragraph_cut() -> None:
    qaset = QASet("one", [Document("一段落目。\n\n二段落目。\n\n三段落目。", id="a")], [])
    [sd] = join_articles(qaset, per_document=1, paragraphs=2, count=1)
    assert sd.document.text == "一段落目。\n\n二段落目。" and sd.segments == ((0, 12),)


def test_join_articles_rejects_bad_options() -> None:
    qaset = _articles()
    with pytest.raises(ConfigError, match="only 6 non-empty articles"):
        join_articles(qaset, per_document=7)
    for option in ("per_document", "paragraphs", "count"):
        with pytest.raises(ConfigError, match=option):
            join_articles(qaset, **{option: 0})


# ------------------------------------------------------------------------------ public corpora (optional)


def _corpus(relative: str) -> Path:
    path = CORPORA / relative
    if not path.exists():
        pytest.skip(f"public corpus not present: {path}")
    return path


def _check_squad(qaset: QASet) -> tuple[int, int, int]:
    texts = {d.id: d.text for d in qaset.documents}
    for q in qaset.questions:
        assert q.answer_start is not None and q.doc_id is not None
        assert texts[q.doc_id][q.answer_start : q.answer_start + len(q.answer)] == q.answer
    kept = len(qaset.questions)
    skipped = sum(d.metadata["skipped"] for d in qaset.documents)
    in_title = sum(d.metadata["in_title"] for d in qaset.documents)
    return kept, skipped, in_title


def test_real_jsquad_answers_map() -> None:
    path = _corpus("jsquad/valid-v1.3.json")
    kept, skipped, in_title = _check_squad(load_squad(path))
    # answers that point at the title inside the stripped "TITLE [SEP] " prefix cannot map; of the rest >= 99%
    assert kept / (kept + skipped - in_title) >= 0.99
    assert in_title / (kept + skipped) < 0.15
    raw_kept, raw_skipped, _ = _check_squad(load_squad(path, strip_title_prefix=False))
    assert raw_kept / (raw_kept + raw_skipped) >= 0.99


def test_real_jaquad_answers_map() -> None:
    qaset = load_squad(_corpus("jaquad/dev"))
    kept, skipped, in_title = _check_squad(qaset)
    assert in_title == 0 and kept / (kept + skipped) >= 0.99
    assert len(qaset.documents) == 101


def test_real_chroma_references_match() -> None:
    qaset = load_chroma(_corpus("chroma-chunking-eval"))  # raises on any reference that does not match
    assert len(qaset.questions) == 472
    assert sum(len(q.references) for q in qaset.questions) == 790
    texts = {d.id: d.text for d in qaset.documents}
    assert all(texts[q.doc_id or ""][s:e] for q in qaset.questions for s, e in q.references)


def test_real_choi_segments() -> None:
    docs = load_choi(_corpus("choi-segmentation/data/choi"))
    assert len(docs) == 920
    assert {len(sd.segments) for sd in docs} == {9, 10}
    for sd in docs[:50]:
        _covers(sd)


def test_a_question_asked_twice_is_said(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A question pasted twice without an id counted twice in every rate without a word."""
    docs = [Document("日当は二千円とする。\n", id="rules.txt")]
    row = json.dumps({"question": "日当は？", "answer": "二千円"}, ensure_ascii=False) + "\n"
    other = json.dumps({"question": "日当は？", "answer": "日当"}, ensure_ascii=False) + "\n"
    path = _write(tmp_path / "q.jsonl", row + other + row)
    with caplog.at_level("WARNING"):
        assert len(load_questions_jsonl(path, docs)) == 3  # still read: the user decides
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert "1 question(s) asked again with the same answer (q.jsonl:3 repeats q.jsonl:1)" in warning
