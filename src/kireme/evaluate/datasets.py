"""Evaluation datasets: questions with gold answer spans, and documents with gold topic segments.

Two kinds of gold data measure a chunking:

* **QA sets** (`QASet` of `Question`s) for retrieval: does the chunk that a question retrieves contain its
  answer? Every answer span is an exact code-point slice of its document, *verified* when it is loaded
  (``doc.text[start:end] == answer``), so a metric never silently scores against the wrong text.
  Loaders: your own JSONL (`load_questions_jsonl`), SQuAD-format JSON such as JSQuAD and JaQuAD
  (`load_squad`), and Chroma's chunking-evaluation layout (`load_chroma`).
* **Segmentation sets** (`SegmentedDocument`) for boundary metrics: where do the topics change?
  Loaders: a JSONL of segment texts (`load_segments_jsonl`), Choi's C99 ``.ref`` files (`load_choi`), and
  `join_articles`, which concatenates QA articles into documents with known topic boundaries.

Everything is deterministic (sorted file order, seeded sampling) so two runs score the same data. A file
that does not fit its format raises `DatasetError` naming the file, the line when there is one, and the
problem; nothing is guessed (an answer whose offset does not match is an error, or for the public SQuAD
sets a counted skip, never repaired with ``str.find``).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import random
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from kireme.document import Document
from kireme.errors import ConfigError, DatasetError

log = logging.getLogger(__name__)

__all__ = [
    "QASet",
    "Question",
    "SegmentedDocument",
    "join_articles",
    "load_choi",
    "load_chroma",
    "load_questions_jsonl",
    "load_segments_jsonl",
    "load_squad",
]

PathLike = str | os.PathLike[str]

# JSQuAD prefixes every context with its article title: "梅雨 [SEP] 梅雨（つゆ、ばいう）は…".
_SEP_PREFIX = re.compile(r"[^\n]*? \[SEP\] ")
# A Choi .ref segment separator line.
_CHOI_SEPARATOR = "=========="


@dataclass(frozen=True)
class Question:
    """One question and its gold answer, as offsets into the text of the document it is about.

    ``references`` are the gold evidence spans ``(start, end)`` in that document; a loader that knows the
    answer's offset sets them to the answer span, so a retrieval metric can always use ``references``.
    The loaders leave out the whitespace around each span (`ink_span`): a chunk or passage never starts or
    ends with whitespace, so a span judged with the space around it would count as missed where the reader
    has every word of it (a quarter of the excerpts of Chroma's evaluation set start or end with one).
    """

    question: str
    answer: str
    doc_id: str | None = None
    answer_start: int | None = None
    terms: tuple[str, ...] = ()
    references: tuple[tuple[int, int], ...] = ()
    id: str = ""


def ink_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` without the whitespace at either end of ``text[start:end]``; the span itself when it
    holds nothing else (a blank reference stays what it was)."""
    s, e = start, end
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return (s, e) if s < e else (start, end)


@dataclass(frozen=True)
class QASet:
    """A named set of documents and the questions asked about them (``Question.doc_id`` is a document id)."""

    name: str
    documents: list[Document]
    questions: list[Question]


@dataclass(frozen=True)
class SegmentedDocument:
    """A document and its gold topic segments.

    ``segments`` tile ``document.text``: in order, the first starts at 0, each starts where the previous
    one ends, the last ends at ``len(text)``, none is empty. Separator whitespace between two topics
    belongs to the earlier segment, so each segment end is exactly the offset where a chunker should cut.
    """

    document: Document
    segments: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        segments = tuple((int(s), int(e)) for s, e in self.segments)
        object.__setattr__(self, "segments", segments)
        n = len(self.document.text)
        if not segments:
            raise ValueError(f"{self.document.id}: a segmented document needs at least one segment")
        position = 0
        for index, (start, end) in enumerate(segments):
            if start != position or end <= start:
                raise ValueError(
                    f"{self.document.id}: segment {index} is ({start}, {end}); segments must be non-empty "
                    f"and contiguous from 0 (expected a start of {position})"
                )
            position = end
        if position != n:
            raise ValueError(f"{self.document.id}: segments end at {position}, the text at {n}")

    @property
    def boundaries(self) -> tuple[int, ...]:
        """Offsets in the text where one topic ends and the next begins (every segment end but the last)."""
        return tuple(end for _, end in self.segments[:-1])


# ----------------------------------------------------------------------------------------------- helpers


def _check_file(path: Path) -> None:
    """A `DatasetError` unless ``path`` names a file."""
    if not path.exists():
        raise DatasetError(path, "no such file")
    if path.is_dir():
        raise DatasetError(path, "is a directory, expected a file")


def _read_text(path: Path, encoding: str = "utf-8-sig", newline: str | None = None) -> str:
    """The whole file as text, or a `DatasetError` saying why not."""
    _check_file(path)
    try:
        with path.open(encoding=encoding, newline=newline) as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise DatasetError(path, f"not valid {encoding} text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DatasetError(path, exc.strerror or str(exc)) from None


def _read_bytes(path: Path) -> bytes:
    """The whole file, or a `DatasetError` saying why not."""
    _check_file(path)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DatasetError(path, exc.strerror or str(exc)) from None


def _read_detected(path: Path) -> str:
    """A file you wrote (questions): UTF-8, or whichever encoding `kireme.load.encoding.decode` finds —
    a questions file saved from Excel or Notepad in Shift_JIS is read as the documents are."""
    from kireme.errors import DecodeError
    from kireme.load.encoding import decode

    data = _read_bytes(path)
    try:
        return decode(data).text
    except DecodeError as exc:
        raise DatasetError(path, f"{exc} (save it as UTF-8)") from None


def _jsonl_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSONL file (UTF-8, or Shift_JIS, EUC-JP…)."""
    # split on "\n" only: str.splitlines would also split at U+2028 and friends, which JSON strings may hold
    for lineno, line in enumerate(_read_detected(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(path, f"bad JSON: {exc.msg} (column {exc.colno})", lineno) from None
        except RecursionError:
            raise DatasetError(path, "bad JSON: nested too deeply", lineno) from None
        if not isinstance(row, dict):
            raise DatasetError(path, f"expected a JSON object, got {type(row).__name__}", lineno)
        yield lineno, row


def _field(row: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: Path, where: Any) -> Any:
    """``row[key]`` checked to be of ``kind`` (bool is never an int here); ``where`` is a line or a JSON path."""
    line = where if isinstance(where, int) else None
    prefix = "" if isinstance(where, int) else f"{where}: "
    if key not in row:
        raise DatasetError(path, f"{prefix}missing field {key!r}", line)
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise DatasetError(path, f"{prefix}field {key!r} must be {names}, got {type(value).__name__}", line)
    return value


class _DocumentIndex:
    """Resolves a name (document id, path, or file name) to exactly one document id."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.ids = {doc.id for doc in documents}
        self.by_path: dict[str, set[str]] = {}
        self.by_name: dict[str, set[str]] = {}
        for doc in documents:
            names = {doc.id}
            source = doc.metadata.get("source")
            if isinstance(source, str) and source:
                names.add(source)
            for name in names:
                for key in {os.path.normpath(name), os.path.abspath(name)}:
                    self.by_path.setdefault(key, set()).add(doc.id)
                self.by_name.setdefault(PurePosixPath(name.replace("\\", "/")).name, set()).add(doc.id)

    def resolve(self, name: str, base: Path) -> str:
        """The id that ``name`` means; `LookupError` with the reason when there is none or several.

        A relative path is tried as given, from the working directory, and from ``base`` (the folder of
        the file that names it), in that order. A bare file name matches any document with that name.
        """
        if name in self.ids:
            return name
        for key in (os.path.normpath(name), os.path.abspath(name), os.path.abspath(base / name)):
            found = self.by_path.get(key, set())
            if len(found) == 1:
                return next(iter(found))
        if "/" in name.replace("\\", "/"):  # a path that matched nothing: never fall back to its file name
            raise LookupError(f"unknown doc {name!r} (no document has that id or path)")
        found = self.by_name.get(name, set())
        if len(found) == 1:
            return next(iter(found))
        if found:
            raise LookupError(f"doc {name!r} is ambiguous: it matches {', '.join(sorted(found)[:4])}")
        raise LookupError(f"unknown doc {name!r} (no document has that id, path or file name)")


# -------------------------------------------------------------------------------------------- QA loaders


def answer_not_found(question: Question, texts: Mapping[str, str]) -> str | None:
    """Why no chunk can hold ``question``'s answer — it is not in its ``doc`` (or any document) as written —
    or ``None`` when it is (or the question gives offsets). The reason names what would find it: another
    document, full-width and half-width forms read alike (``３，０００円`` for ``3,000円``), a line break."""
    if question.references:
        return None
    answer = question.answer.strip() or question.answer
    where = [question.doc_id] if question.doc_id is not None and question.doc_id in texts else list(texts)
    if any(answer in texts[d] for d in where):
        return None
    if question.doc_id is not None:
        elsewhere = [d for d in texts if d != question.doc_id and answer in texts[d]]
        if elsewhere:
            return f"not in {question.doc_id}, but in {elsewhere[0]}"
    wide = unicodedata.normalize("NFKC", answer)
    if any(wide in unicodedata.normalize("NFKC", texts[d]) for d in where):
        return (
            "not as written; it matches with full-width and half-width forms read alike (３，０００ = 3,000)"
        )
    spaced, joined = " ".join(answer.split()), "".join(answer.split())  # English words, Japanese text
    if any(spaced in " ".join(texts[d].split()) or joined in "".join(texts[d].split()) for d in where):
        return "not as written; it matches across a line break"
    return "in no document"


def _warn_unfindable(path: Path, questions: Sequence[Question], texts: Mapping[str, str]) -> None:
    """Warn about answers that appear in no document (in their ``doc`` when named): no chunk can hold them,
    so they count as misses whatever the chunking — a typo, or another spelling than the text's. Each is
    named with its answer and what would find it (`answer_not_found`)."""
    missing = [(q, why) for q in questions if (why := answer_not_found(q, texts)) is not None]
    if missing:
        shown = "; ".join(f"{q.id} {q.answer[:40]!r}: {why}" for q, why in missing[:10])
        more = f"; and {len(missing) - 10} more" if len(missing) > 10 else ""
        log.warning(
            "%s: %d of %d answers cannot be found as written, so they count as misses whatever the "
            "chunking (%s%s); check them against the text (kireme load shows it)",
            path,
            len(missing),
            len(questions),
            shown,
            more,
        )


def load_questions_jsonl(path: PathLike, documents: Sequence[Document]) -> list[Question]:
    """Questions you wrote, one JSON object a line, about ``documents``.

    Each line is ``{"question", "answer", "doc"?, "terms"?, "answer_start"?, "id"?}``. ``doc`` names a
    document by its id, its path (relative paths may also be relative to this file's folder), or its file
    name (an ambiguous file name is an error: use the path);
    it becomes the question's ``doc_id``. When ``answer_start`` is given the answer must be found exactly
    there (``text[answer_start:answer_start + len(answer)] == answer``), and that span becomes the
    question's reference. ``terms`` is a list or a whitespace-separated string. Blank lines are
    ignored. A question without ``id`` gets ``"<file name>:<line>"``.
    """
    p = Path(path)
    index = _DocumentIndex(documents)
    texts = {doc.id: doc.text for doc in documents}
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for lineno, row in _jsonl_objects(p):
        question = _field(row, "question", str, p, lineno)
        answer = _field(row, "answer", str, p, lineno)
        if not question.strip():
            raise DatasetError(p, "field 'question' is empty", lineno)
        if not answer.strip():
            raise DatasetError(p, "empty 'answer': no chunk could be judged to hold it", lineno)
        doc_id: str | None = None
        if row.get("doc") is not None:
            try:
                doc_id = index.resolve(_field(row, "doc", str, p, lineno), p.parent)
            except LookupError as exc:
                raise DatasetError(p, str(exc), lineno) from None
        terms: tuple[str, ...] = ()
        if row.get("terms") is not None:
            raw = _field(row, "terms", (str, list), p, lineno)
            if isinstance(raw, str):
                terms = tuple(raw.split())
            elif all(isinstance(t, str) for t in raw):
                terms = tuple(t for t in raw if t.strip())
            else:
                raise DatasetError(p, "field 'terms' must list strings", lineno)
        start: int | None = None
        references: tuple[tuple[int, int], ...] = ()
        if row.get("answer_start") is not None:
            start = _field(row, "answer_start", int, p, lineno)
            if doc_id is None:
                raise DatasetError(
                    p, "'answer_start' needs 'doc' (the document it is an offset into)", lineno
                )
            text = texts[doc_id]
            end = start + len(answer)
            if start < 0 or end > len(text):
                raise DatasetError(
                    p,
                    f"answer_start {start} + {len(answer)} is outside {doc_id!r} ({len(text)} chars)",
                    lineno,
                )
            if text[start:end] != answer:
                raise DatasetError(
                    p,
                    f"answer {answer!r} not found at answer_start {start} in {doc_id!r}: text there is "
                    f"{text[start:end]!r}",
                    lineno,
                )
            references = (ink_span(text, start, end),)
        qid = (
            str(_field(row, "id", (str, int), p, lineno))
            if row.get("id") is not None
            else f"{p.name}:{lineno}"
        )
        if qid in seen:
            raise DatasetError(p, f"duplicate id {qid!r} (first on line {seen[qid]})", lineno)
        seen[qid] = lineno
        questions.append(
            Question(
                question=question,
                answer=answer,
                doc_id=doc_id,
                answer_start=start,
                terms=terms,
                references=references,
                id=qid,
            )
        )
    if not questions:
        raise DatasetError(
            p, 'no questions in this file (one JSON object a line: {"question": ..., "answer": ...})'
        )
    _warn_unfindable(p, questions, texts)
    _warn_repeated(p, questions)
    return questions


def _warn_repeated(path: Path, questions: Sequence[Question]) -> None:
    """Warn about questions asked twice (the same question, answer and document): each counts, so a copy
    pasted twice weighs twice in every rate."""
    first: dict[tuple[str, str, str | None], str] = {}
    repeated: list[str] = []
    for q in questions:
        key = (" ".join(q.question.split()), q.answer, q.doc_id)
        if key in first:
            repeated.append(f"{q.id} repeats {first[key]}")
        else:
            first[key] = q.id
    if repeated:
        shown = "; ".join(repeated[:5]) + (f"; and {len(repeated) - 5} more" if len(repeated) > 5 else "")
        log.warning(
            "%s: %d question(s) asked again with the same answer (%s): each counts in every rate; remove "
            "the copies, or give them another answer or doc",
            path,
            len(repeated),
            shown,
        )


def _strip_prefix(context: str, title: str) -> str:
    """The "TITLE [SEP] " prefix JSQuAD puts before a context ("" when there is none)."""
    if context.startswith(f"{title} [SEP] "):
        return f"{title} [SEP] "
    match = _SEP_PREFIX.match(context)
    return match.group(0) if match else ""


def _squad_files(p: Path) -> list[Path]:
    if p.is_dir():
        files = sorted(child for child in p.iterdir() if child.suffix.lower() == ".json" and child.is_file())
        if not files:
            raise DatasetError(p, "directory has no .json files")
        return files
    if not p.exists():
        raise DatasetError(p, "no such file")
    return [p]


def load_squad(
    path: PathLike,
    *,
    name: str | None = None,
    strip_title_prefix: bool = True,
    limit_articles: int | None = None,
) -> QASet:
    """A SQuAD-format file (JSQuAD, JaQuAD), or a directory of them read in sorted order, as a `QASet`.

    Each article becomes one document: its paragraphs' contexts joined with ``"\\n\\n"`` (a context equal
    to the one before it is kept once), id ``"<file name>#<article index>:<title>"``. With
    ``strip_title_prefix`` the ``"TITLE [SEP] "`` that JSQuAD puts before every context is dropped.
    Each question keeps its id and its first answer, mapped to document offsets and verified against the
    document text; one whose text is not there is skipped, never searched for. Unanswerable
    (``is_impossible``) questions are skipped too. Each document's metadata counts ``questions`` kept,
    ``skipped`` (answerable but not kept), ``in_title`` (those of the skipped whose answer lies inside the
    stripped title prefix) and ``unanswerable``.

    JSQuAD answers the question "what is this about" with the title *in the prefix* (``answer_start`` 0):
    469 of the 4,442 valid-v1.3 questions. With the prefix stripped that text is gone, so they are skipped
    and counted as ``in_title``; pass ``strip_title_prefix=False`` to keep them (and the prefixes).
    """
    p = Path(path)
    if limit_articles is not None and limit_articles < 0:
        raise ConfigError(f"limit_articles must be >= 0, got {limit_articles}")
    documents: list[Document] = []
    questions: list[Question] = []
    for file in _squad_files(p):
        if limit_articles is not None and len(documents) >= limit_articles:
            break
        raw = _read_text(file)
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DatasetError(file, f"bad JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
        except RecursionError:
            raise DatasetError(file, "bad JSON: nested too deeply") from None
        if not isinstance(data, dict) or not isinstance(data.get("data"), list):
            raise DatasetError(file, "not SQuAD format: expected an object with a 'data' list of articles")
        for article_index, article in enumerate(data["data"]):
            if limit_articles is not None and len(documents) >= limit_articles:
                break
            loaded = _squad_article(file, article_index, article, strip_title_prefix)
            if loaded is not None:
                documents.append(loaded[0])
                questions.extend(loaded[1])
    if not questions:
        raise DatasetError(p, "no answerable questions in this SQuAD file (its 'data' list holds none)")
    skipped = sum(int(d.metadata.get("skipped", 0)) for d in documents)
    if skipped:
        log.warning(
            "%s: %d question(s) left out: their answer_start does not point at their answer in the context "
            "(%d kept)",
            p,
            skipped,
            len(questions),
        )
    return QASet(
        name=name if name is not None else (p.name if p.is_dir() else p.stem),
        documents=documents,
        questions=questions,
    )


def _squad_article(
    file: Path, article_index: int, article: Any, strip_title_prefix: bool
) -> tuple[Document, list[Question]] | None:
    """One article's document and verified questions (None when it has no text)."""
    where = f"data[{article_index}]"
    if not isinstance(article, dict):
        raise DatasetError(file, f"{where}: expected an object, got {type(article).__name__}")
    title = _field(article, "title", str, file, where)
    paragraphs = _field(article, "paragraphs", list, file, where)
    doc_id = f"{file.name}#{article_index}:{title}"
    parts: list[str] = []
    # (document offset of the kept context, length of the prefix stripped from this context, its qas)
    placed: list[tuple[int, int, list[Any], str]] = []
    offset = 0
    previous: str | None = None
    for paragraph_index, paragraph in enumerate(paragraphs):
        pwhere = f"{where}.paragraphs[{paragraph_index}]"
        if not isinstance(paragraph, dict):
            raise DatasetError(file, f"{pwhere}: expected an object, got {type(paragraph).__name__}")
        context = _field(paragraph, "context", str, file, pwhere)
        qas = _field(paragraph, "qas", list, file, pwhere) if "qas" in paragraph else []
        prefix = len(_strip_prefix(context, title)) if strip_title_prefix else 0
        body = context[prefix:]
        if body == previous:
            start = placed[-1][0]
        else:
            if parts:
                offset += 2  # the "\n\n" between contexts
            start = offset
            parts.append(body)
            offset += len(body)
            previous = body
        placed.append((start, prefix, qas, pwhere))
    text = "\n\n".join(parts)
    if not text:
        return None
    questions: list[Question] = []
    skipped = in_title = unanswerable = 0
    for start, prefix, qas, pwhere in placed:
        for qa_index, qa in enumerate(qas):
            qwhere = f"{pwhere}.qas[{qa_index}]"
            if not isinstance(qa, dict):
                raise DatasetError(file, f"{qwhere}: expected an object, got {type(qa).__name__}")
            question = _field(qa, "question", str, file, qwhere)
            answers = qa.get("answers") or []
            if qa.get("is_impossible") or not answers:
                unanswerable += 1
                continue
            if not isinstance(answers, list) or not isinstance(answers[0], dict):
                raise DatasetError(file, f"{qwhere}: 'answers' must be a list of objects")
            answer = _field(answers[0], "text", str, file, f"{qwhere}.answers[0]")
            answer_start = _field(answers[0], "answer_start", int, file, f"{qwhere}.answers[0]")
            begin = start + answer_start - prefix
            end = begin + len(answer)
            if answer_start < prefix:
                in_title += 1
            if not answer or answer_start < prefix or text[begin:end] != answer:
                skipped += 1
                continue
            questions.append(
                Question(
                    question=question,
                    answer=answer,
                    doc_id=doc_id,
                    answer_start=begin,
                    references=(ink_span(text, begin, end),),
                    id=str(qa.get("id", f"{doc_id}:{len(questions)}")),
                )
            )
    document = Document(
        text=text,
        id=doc_id,
        metadata={
            "title": title,
            "source": file.as_posix(),
            "format": "squad",
            "paragraphs": len(parts),
            "questions": len(questions),
            "skipped": skipped,
            "in_title": in_title,
            "unanswerable": unanswerable,
        },
    )
    return document, questions


def load_chroma(root: PathLike) -> QASet:
    """Chroma's chunking-evaluation data (``corpora/*.md`` + ``questions_df.csv``) as a `QASet`.

    Each corpus file is a document whose id is its file stem (``state_of_the_union``). Each CSV row
    (``question, references, corpus_id``) is a question whose ``references`` are the ``(start_index,
    end_index)`` of its JSON list of excerpts, each checked to be exactly ``content``; ``answer`` is "".
    The corpora are read as Chroma reads them, ``open(path, encoding="utf-8").read()``: UTF-8, indexed by
    code points (the offsets are not byte offsets), newlines as Python's text mode gives them.
    """
    base = Path(root)
    folder = base / "corpora"
    if not folder.is_dir():
        raise DatasetError(base, "no corpora/ folder (expected the Chroma chunking-evaluation layout)")
    by_stem: dict[str, Path] = {}
    for file in sorted(folder.iterdir()):
        if file.suffix.lower() in (".md", ".txt") and file.is_file():
            if file.stem in by_stem:
                raise DatasetError(file, f"corpus {file.stem!r} also exists as {by_stem[file.stem].name}")
            by_stem[file.stem] = file
    if not by_stem:
        raise DatasetError(folder, "no .md or .txt corpus files")
    documents: dict[str, Document] = {}
    for stem, file in by_stem.items():
        documents[stem] = Document(
            text=_read_text(file, encoding="utf-8"),
            id=stem,
            metadata={
                "source": file.as_posix(),
                "format": "markdown" if file.suffix.lower() == ".md" else "text",
                "encoding": "utf-8",
            },
        )
    csv_path = base / "questions_df.csv"
    raw = _read_text(csv_path, newline="")
    reader = csv.DictReader(io.StringIO(raw, newline=""))
    missing = {"question", "references", "corpus_id"} - set(reader.fieldnames or ())
    if missing:
        raise DatasetError(csv_path, f"missing column(s) {', '.join(sorted(missing))}", 1)
    questions: list[Question] = []
    try:
        for row_index, row in enumerate(reader):
            line = reader.line_num
            corpus_id = row["corpus_id"] or ""
            if corpus_id not in documents:
                raise DatasetError(
                    csv_path, f"unknown corpus_id {corpus_id!r} (no corpora/{corpus_id}.md)", line
                )
            text = documents[corpus_id].text
            try:
                refs = json.loads(row["references"] or "")
            except json.JSONDecodeError as exc:
                raise DatasetError(csv_path, f"bad JSON in 'references': {exc.msg}", line) from None
            if not isinstance(refs, list):
                raise DatasetError(csv_path, "'references' must be a JSON list", line)
            spans: list[tuple[int, int]] = []
            for ref_index, ref in enumerate(refs):
                rwhere = f"references[{ref_index}]"
                if not isinstance(ref, dict):
                    raise DatasetError(csv_path, f"{rwhere} must be an object", line)
                content = _field(ref, "content", str, csv_path, rwhere)
                start = _field(ref, "start_index", int, csv_path, rwhere)
                end = _field(ref, "end_index", int, csv_path, rwhere)
                if not 0 <= start <= end <= len(text) or text[start:end] != content:
                    raise DatasetError(
                        csv_path,
                        f"{rwhere}: {corpus_id}[{start}:{end}] is {text[start:end][:40]!r}, not the "
                        f"content {content[:40]!r}",
                        line,
                    )
                spans.append(ink_span(text, start, end))
            questions.append(
                Question(
                    question=row["question"] or "",
                    answer="",
                    doc_id=corpus_id,
                    references=tuple(spans),
                    id=f"{corpus_id}:{row_index}",
                )
            )
    except DatasetError as exc:
        if exc.line is None:  # a _field error: add the CSV line it came from
            raise DatasetError(csv_path, exc.reason, reader.line_num) from None
        raise
    except csv.Error as exc:
        raise DatasetError(csv_path, f"bad CSV: {exc}", reader.line_num) from None
    return QASet(name=base.name, documents=list(documents.values()), questions=questions)


# ---------------------------------------------------------------------------------- segmentation loaders


def _tile(pieces: Sequence[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Concatenate ``pieces`` and return the text with each piece's span."""
    spans: list[tuple[int, int]] = []
    position = 0
    for piece in pieces:
        spans.append((position, position + len(piece)))
        position += len(piece)
    return "".join(pieces), tuple(spans)


def load_segments_jsonl(path: PathLike) -> list[SegmentedDocument]:
    """Documents given as their topic segments: one ``{"id", "segments": [text, ...]}`` a line.

    The document text is the segments concatenated with nothing added (put any separating newlines in
    the segment texts), so each segment's span is exact. A line without ``id`` gets
    ``"<file name>:<line>"``. A file without documents, an empty list, a segment of nothing or only
    whitespace, or a repeated id is an error.
    """
    p = Path(path)
    out: list[SegmentedDocument] = []
    seen: dict[str, int] = {}
    try:
        rows = list(_jsonl_objects(p))
    except DatasetError as exc:
        if exc.line is not None and _looks_like_choi(p):
            raise DatasetError(
                p,
                f"not JSON lines but one sentence a line between {_CHOI_SEPARATOR} lines (Choi's format): "
                "name the file .ref, or give the folder that holds it",
            ) from None
        raise
    for lineno, row in rows:
        doc_id = (
            str(_field(row, "id", (str, int), p, lineno))
            if row.get("id") is not None
            else f"{p.name}:{lineno}"
        )
        segments = _field(row, "segments", list, p, lineno)
        if not segments:
            raise DatasetError(p, f"document {doc_id!r} has no segments", lineno)
        for index, segment in enumerate(segments):
            if not isinstance(segment, str):
                raise DatasetError(
                    p, f"segment {index} must be a string, got {type(segment).__name__}", lineno
                )
            if not segment.strip():
                what = "empty" if not segment else "only whitespace (a topic needs text)"
                raise DatasetError(p, f"segment {index} of {doc_id!r} is {what}", lineno)
        if doc_id in seen:
            raise DatasetError(p, f"duplicate id {doc_id!r} (first on line {seen[doc_id]})", lineno)
        seen[doc_id] = lineno
        text, spans = _tile(segments)
        document = Document(text=text, id=doc_id, metadata={"source": p.as_posix(), "format": "segments"})
        out.append(SegmentedDocument(document=document, segments=spans))
    if not out:
        raise DatasetError(
            p, 'no documents in this file (one JSON object a line: {"id": ..., "segments": [...]})'
        )
    return out


def _looks_like_choi(path: Path) -> bool:
    """Whether a file holds a line that is Choi's segment separator (and so is no JSONL file)."""
    try:
        return any(line.strip() == _CHOI_SEPARATOR for line in _read_choi(path, None).split("\n"))
    except DatasetError:
        return False


def _choi_files(p: Path) -> list[tuple[Path, str]]:
    """(file, id) for a single .ref file or every .ref file under a folder, in sorted order."""
    if not p.exists():
        raise DatasetError(p, "no such file or folder")
    if not p.is_dir():
        return [(p, p.name)]
    found: list[tuple[Path, str]] = []
    for dirpath, dirnames, filenames in os.walk(p):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for filename in sorted(filenames):
            if filename.endswith(".ref"):
                file = Path(dirpath) / filename
                found.append((file, file.relative_to(p).as_posix()))
    if not found:
        raise DatasetError(p, "no .ref files under this folder")
    return sorted(found, key=lambda item: item[1])


def _read_choi(path: Path, encoding: str | None) -> str:
    """A ``.ref`` file's text: in ``encoding`` when given; else UTF-8 (a file of your own), or latin-1
    where it is not valid UTF-8 (Choi's files: ASCII with a few latin-1 bytes)."""
    if encoding is not None:
        return _read_text(path, encoding=encoding)
    data = _read_bytes(path)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def load_choi(folder: PathLike, encoding: str | None = None) -> list[SegmentedDocument]:
    """Choi's (2000) C99 segmentation benchmark: ``.ref`` files under ``folder`` (or one file).

    A ``.ref`` file has one sentence per line, and a line ``==========`` before, between and after its
    segments; Choi's are latin-1, one of your own may be UTF-8 (read as UTF-8 where it is valid, else as
    latin-1; ``encoding`` to say which). The document text is the sentence lines joined with ``"\\n"`` (segments too),
    its id the path relative to ``folder``. Blank lines are not sentences and are dropped, and so is an
    empty segment (two separators in a row: 14 of the 920 files, which then have 9 segments).
    ``metadata["sentence_mode"]`` is ``"lines"``: the lines are the format's sentences, so `kireme eval`
    chunks with ``sentences="lines"`` and measures boundaries in lines.
    """
    out: list[SegmentedDocument] = []
    for file, doc_id in _choi_files(Path(folder)):
        # "\n" only: latin-1 byte 0x85 decodes to U+0085, which str.splitlines treats as a line break
        lines = _read_choi(file, encoding).split("\n")
        if not any(line.strip() == _CHOI_SEPARATOR for line in lines):
            raise DatasetError(file, f"not a Choi .ref file: no {_CHOI_SEPARATOR} separator line")
        groups: list[list[str]] = [[]]
        for line in lines:
            if line.strip() == _CHOI_SEPARATOR:
                groups.append([])
            elif line.strip():
                groups[-1].append(line)
        groups = [group for group in groups if group]
        if not groups:
            raise DatasetError(file, "no sentences between the separators")
        pieces = ["\n".join(group) + "\n" for group in groups]
        pieces[-1] = pieces[-1][:-1]
        text, spans = _tile(pieces)
        document = Document(
            text=text,
            id=doc_id,
            metadata={
                "source": file.as_posix(),
                "format": "choi",
                "sentence_mode": "lines",
                "sentences": sum(len(group) for group in groups),
                "sentences_per_segment": tuple(len(group) for group in groups),
            },
        )
        out.append(SegmentedDocument(document=document, segments=spans))
    return out


def _leading_paragraphs(text: str, paragraphs: int) -> str:
    """The prefix of ``text`` holding its first ``paragraphs`` non-blank paragraphs ("\\n\\n"-separated)."""
    blocks = text.split("\n\n")
    taken = 0
    for end, block in enumerate(blocks, start=1):
        taken += bool(block.strip())
        if taken == paragraphs:
            return "\n\n".join(blocks[:end])
    return text


def join_articles(
    qaset: QASet, *, per_document: int = 4, paragraphs: int = 2, count: int = 50, seed: int = 0
) -> list[SegmentedDocument]:
    """A segmentation set with known topic boundaries, built by concatenating a QA set's articles.

    Each of the ``count`` documents joins ``per_document`` distinct articles chosen at random (the same
    for the same ``seed`` and QA set), each cut to its first ``paragraphs`` paragraphs ("\\n\\n"-separated
    blocks of its text), separated by ``"\\n\\n"``; the gold segments are the articles (the separator
    belongs to the article before it). Document ids are ``"<set name>:join<seed>:<index>"``, and
    ``metadata["articles"]`` lists the source document ids.
    """
    for option, value in (("per_document", per_document), ("paragraphs", paragraphs), ("count", count)):
        if value < 1:
            raise ConfigError(f"{option} must be >= 1, got {value}")
    articles = [doc for doc in qaset.documents if doc.text.strip()]
    if len(articles) < per_document:
        raise ConfigError(
            f"per_document={per_document} but QA set {qaset.name!r} has only {len(articles)} non-empty articles"
        )
    rng = random.Random(seed)
    out: list[SegmentedDocument] = []
    for index in range(count):
        chosen = [articles[i] for i in rng.sample(range(len(articles)), per_document)]
        pieces = [_leading_paragraphs(doc.text, paragraphs) for doc in chosen]
        pieces = [piece + "\n\n" for piece in pieces[:-1]] + [pieces[-1]]
        text, spans = _tile(pieces)
        document = Document(
            text=text,
            id=f"{qaset.name}:join{seed}:{index}",
            metadata={"format": "joined", "articles": tuple(doc.id for doc in chosen)},
        )
        out.append(SegmentedDocument(document=document, segments=spans))
    return out
