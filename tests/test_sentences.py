"""Sentence and paragraph segmentation on Japanese and English written for these tests."""

import pytest

from kireme.text.sentences import paragraph_spans, sentence_spans


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


def test_japanese_terminators_without_spaces() -> None:
    text = "会議は十時に始まります。資料は各自で印刷してください！質問はありますか？"
    assert sentences(text) == [
        "会議は十時に始まります。",
        "資料は各自で印刷してください！",
        "質問はありますか？",
    ]


def test_quotes_are_not_split_and_closing_brackets_stay() -> None:
    text = "部長は「予算は足りない。追加は難しい！」と述べた。「では延期しよう。」その後、会議は終わった。"
    assert sentences(text) == [
        "部長は「予算は足りない。追加は難しい！」と述べた。",
        "「では延期しよう。」",
        "その後、会議は終わった。",
    ]


def test_hard_wrapped_lines_are_one_sentence_but_items_are_not() -> None:
    text = "この手順書は、新しく配属された\n社員のために作成した。\n・申請書を書く\n・上長に提出する\n【提出先】\n総務課"
    assert sentences(text) == [
        "この手順書は、新しく配属された\n社員のために作成した。",
        "・申請書を書く",
        "・上長に提出する",
        "【提出先】",
        "総務課",
    ]


def test_full_width_period_and_numbers() -> None:
    text = "円周率は約３．１４である．次に面積を求める．"
    assert sentences(text) == ["円周率は約３．１４である．", "次に面積を求める．"]


def test_english_abbreviations_initials_and_decimals() -> None:
    text = (
        "Dr. Tanaka moved to the U.S. in May. She paid $3.50 for coffee, e.g. a latte. "
        "J. R. Smith agreed. Is it done? Yes!"
    )
    assert sentences(text) == [
        "Dr. Tanaka moved to the U.S. in May.",
        "She paid $3.50 for coffee, e.g. a latte.",
        "J. R. Smith agreed.",
        "Is it done?",
        "Yes!",
    ]


def test_initials_after_a_lower_case_word_and_a_suite_number_stay_in_their_sentence() -> None:
    """``Approved by J.`` | ``R. Martinez`` and ``Blvd., Ste.`` | ``400, Portland`` were cut as two sentences
    (the word before ``J.`` is not capitalised; ``Ste.`` was no known abbreviation). A single capital at the
    end of a sentence still ends it."""
    text = (
        "Claims must be filed within 30 days. Approved by J. R. Martinez, Chief Financial Officer. "
        "Write to 1200 Harbor Blvd., Ste. 400, Portland. We answer in a week. It was plan B. Then we left."
    )
    assert sentences(text) == [
        "Claims must be filed within 30 days.",
        "Approved by J. R. Martinez, Chief Financial Officer.",
        "Write to 1200 Harbor Blvd., Ste. 400, Portland.",
        "We answer in a week.",
        "It was plan B.",
        "Then we left.",
    ]


def test_a_url_is_not_cut_after_its_scheme_when_a_long_sentence_is_cut_at_clauses() -> None:
    """The clause level cut after every ``:`` not before a digit, so a sentence too long for a chunk was
    cut between ``https:`` and ``//…``."""
    from kireme import make_chunker

    text = (
        "Amendments take effect 30 days after they are published on the intranet at "
        "https://intranet.example.com/policies/travel-v3.2.html unless a later date is stated in the "
        "amendment itself by the approving officer.\n"
    )
    for strategy in ("sentence", "recursive", "paragraph"):
        chunks = make_chunker(strategy, max_size=150).chunk(text)
        assert not any(c.text.endswith("https:") for c in chunks), [c.text for c in chunks]
        assert any("https://intranet.example.com/policies/travel-v3.2.html" in c.text for c in chunks)
    from kireme.boundaries.levels import CLAUSE

    path = "Open C:\\Users\\me, then note: it is 10:30, see https://x.example.com: done"
    cuts = CLAUSE.cuts(path, 0, len(path))
    assert [path[c - 1] for c in cuts] == [",", ":", ",", ":"]  # after "me," "note:" "10:30," ".com:"
    assert not any(path[c - 3 : c] in ("ps:", " C:") for c in cuts)
    assert CLAUSE.reference.cuts(path, 0, len(path)) == CLAUSE.cuts(path, 0, len(path))


def test_versus_in_a_case_name_does_not_end_the_sentence() -> None:
    text = "The court cited Smith v. Jones in its ruling. Henry V. Ford disagreed. It ended."
    assert sentences(text) == [
        "The court cited Smith v. Jones in its ruling.",
        "Henry V. Ford disagreed.",
        "It ended.",
    ]


def test_question_inside_quote_followed_by_lowercase_continues() -> None:
    assert sentences('"Are you sure?" he asked. Then he left.') == [
        '"Are you sure?" he asked.',
        "Then he left.",
    ]


def test_unclosed_quote_does_not_swallow_the_document() -> None:
    text = "「閉じない引用。次の文です。最後の文です。"
    assert len(sentences(text)) == 3


def test_paragraphs_blank_lines_and_rule_items() -> None:
    text = "第1条　目的\n本規程は旅費を定める。\n第2条　範囲\n全社員に適用する。\n\n附則\n本規程は四月一日から施行する。"
    assert [text[s:e] for s, e in paragraph_spans(text)] == [
        "第1条　目的\n本規程は旅費を定める。",
        "第2条　範囲\n全社員に適用する。",
        "附則\n本規程は四月一日から施行する。",
    ]


def test_crlf_paragraphs() -> None:
    text = "一つ目の段落。\r\n\r\n二つ目の段落。"
    assert [text[s:e] for s, e in paragraph_spans(text)] == ["一つ目の段落。", "二つ目の段落。"]


def test_tokenised_english_with_a_space_before_the_period() -> None:
    text = "The games were released in 2003 . When the sequel came out , sales rose . version 3 . 5 is out"
    assert sentences(text) == [
        "The games were released in 2003 .",
        "When the sequel came out , sales rose . version 3 . 5 is out",
    ]


def test_lower_cased_corpora_still_have_sentences() -> None:
    sentence = "revenue increased by 4% (4%) due to higher volume in the retail segment"
    text = ". ".join([sentence] * 12) + "."
    assert len(sentences(text)) == 12
    # ordinary text keeps the rule that a lower-case word after a period continues the sentence
    assert len(sentences("We met Dr. smith there. It rained.")) == 2


def test_only_a_text_with_a_full_stop_is_read_for_its_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a text is lower-cased decides only how an ASCII "." is judged: a text without one is never
    scanned for capitals (a whole-text scan of every kana and kanji otherwise)."""
    from kireme.text import caches, sentences

    def refuse(text: str, a: int, b: int) -> bool:
        raise AssertionError("scanned for capitals")

    monkeypatch.setattr(sentences, "_is_caseless", refuse)
    caches.clear_text_caches()
    japanese = "宿泊費の上限は一泊一万二千円とする。東京都内は一万四千円とする。" * 10
    assert len(sentence_spans(japanese)) == 20
    with pytest.raises(AssertionError, match="capitals"):
        sentence_spans("the allowance is paid monthly. it covers meals. " * 10)


# A README in Japanese with the markup, code and URLs a "!" or "?" sits in without ending a sentence.
_MARKUP_README = (
    "設定は次の通りです。\n\n"
    "<!--\nThe original English text stays here. Keep it!\n-->\n\n"
    "値が `a != b` のときは再試行します。画像は下の通りです。\n\n"
    "![構成図](img/arch.png)の左が入口です。\n"
    "詳細は https://example.com/docs?lang=ja&id=3 を見てください。"
    "`user?.name` で名前を読みます。本当?はい、本当です!次へ進みます。\n"
    '`panic!`マクロは println!("{x}") と同じく f()?; の後でも使えます。'
    "`x = !done` や `name?: string` も同じです。\n"
    "<!DOCTYPE html> から書き始めます。Really? Yes.\n"
)


def test_marks_inside_markup_code_and_urls_do_not_end_a_sentence() -> None:
    got = sentences(_MARKUP_README)
    assert got == [
        "設定は次の通りです。",
        "<!--\nThe original English text stays here.",
        "Keep it!",
        "-->",
        "値が `a != b` のときは再試行します。",
        "画像は下の通りです。",
        "![構成図](img/arch.png)の左が入口です。",
        "詳細は https://example.com/docs?lang=ja&id=3 を見てください。",
        "`user?.name` で名前を読みます。",
        "本当?",
        "はい、本当です!",
        "次へ進みます。",
        '`panic!`マクロは println!("{x}") と同じく f()?; の後でも使えます。',
        "`x = !done` や `name?: string` も同じです。",
        "<!DOCTYPE html> から書き始めます。",
        "Really?",
        "Yes.",
    ]


def test_a_numbered_heading_and_a_mark_in_code_span_end_no_sentence() -> None:
    """``2.`` after a heading's or a quote's marks is its number (it was only at a line start), and a ``?``
    inside a code span right after its opening backtick (`` `? :` ``) is code: both used to cut the
    heading line in two, leaving ``## 2.`` alone at a chunk's end."""
    text = (
        "## 2. Indexing the pages\n\nThe loader reads every page. It keeps the links.\n\n"
        "> 3. Keep the quote whole\n\n#### `? :` で表示を切り替える\n\n条件演算子で書きます。"
    )
    assert sentences(text) == [
        "## 2. Indexing the pages",
        "The loader reads every page.",
        "It keeps the links.",
        "> 3. Keep the quote whole",
        "#### `? :` で表示を切り替える",
        "条件演算子で書きます。",
    ]
    # a code span closed before the mark: the mark ends its sentence as before
    assert sentences("Did you run `make`? Yes, twice.") == ["Did you run `make`?", "Yes, twice."]


def test_a_letter_label_at_a_line_start_ends_no_sentence() -> None:
    """``A.`` under a question line was a sentence of its own: the `sentence` strategy ended a chunk with
    ``…\nA.`` and began the next with the answer (a ``Q.`` label alone after a blank line the same)."""
    text = (
        "Q. 有給休暇は何日目に付与されますか？ 半日でも取れますか？\n"
        "A. 六か月後に十日を付与します。半日単位でも取れます。\n\n"
        "Q. How many days are granted? Can I split them?\nA. Ten days. Yes, in halves.\n\n"
        "Options:\na. Morning off"
    )
    assert sentences(text) == [
        "Q. 有給休暇は何日目に付与されますか？",
        "半日でも取れますか？",
        "A. 六か月後に十日を付与します。",
        "半日単位でも取れます。",
        "Q. How many days are granted?",
        "Can I split them?",
        "A. Ten days.",
        "Yes, in halves.",
        "Options:",
        "a. Morning off",  # was "a." | "Morning off"
    ]
    # a letter that ends a sentence stays an end: not at a line start, or no space after its dot
    assert sentences("He got an A. Then he left.") == ["He got an A.", "Then he left."]
    assert sentences("本文です。\n\nQ.\n残業は？") == ["本文です。", "Q.\n残業は？"]


def test_a_straight_quote_after_a_full_stop_opens_the_next_sentence_unless_it_closes_one() -> None:
    """``"`` is both quotes: after ``。`` it was always taken for a closer, so ``"Star"`` lost its opening
    quote to the sentence before (``…あります。"`` | ``Star" を押すと…``)."""
    assert sentences('不具合があります。"Star" を押すと消えます。再表示されます。') == [
        "不具合があります。",
        '"Star" を押すと消えます。',
        "再表示されます。",
    ]
    # one opened before it on the line: it closes, and a particle after it goes on with the sentence
    assert sentences('彼は"行こう。"と言った。次の文です。') == ['彼は"行こう。"と言った。', "次の文です。"]
    assert sentences('He said "Stop." Then he left.') == ['He said "Stop."', "Then he left."]
    assert sentences('終わりです。"') == ['終わりです。"']  # nothing after it to open


def test_a_curly_quote_closed_after_a_full_stop_goes_on_when_a_particle_follows() -> None:
    """``“…”`` and ``‘…’`` quote in Japanese text too (web writing, translations): ``彼は“明日行きます。”``
    | ``と言った。`` was cut after the closing mark — the speaker separated from the words — where the
    straight ``"`` and the bracket ``「」`` went on. A new sentence after the mark still starts one."""
    assert sentences("彼は“明日行きます。”と言った。次の文です。") == [
        "彼は“明日行きます。”と言った。",
        "次の文です。",
    ]
    assert sentences("画面に“保存しました。”と表示され、処理が終わる。") == [
        "画面に“保存しました。”と表示され、処理が終わる。"
    ]
    assert sentences("彼は‘行く。’と答えた。次。") == ["彼は‘行く。’と答えた。", "次。"]
    assert sentences("彼は“行く。”次の文です。") == ["彼は“行く。”", "次の文です。"]
    assert sentences("He wrote “Done.” Then he left.") == ["He wrote “Done.”", "Then he left."]
    assert sentences("She said “Fine.”, and left.") == ["She said “Fine.”, and left."]


def test_a_comma_after_a_closing_bracket_goes_on_with_the_sentence() -> None:
    """``（…を除く。）、第六項`` ended a sentence after ``）``, the next opening with ``、`` (law text: a chunk
    of lawqa started ``、第六項、第七項及び第十一項の規定にかかわらず…``); a particle after it already went on."""
    text = "同条第二項（第三号ハに係る部分を除く。）、第六項の規定にかかわらず、承認を与える。次の条に移る。"
    assert sentences(text) == [
        "同条第二項（第三号ハに係る部分を除く。）、第六項の規定にかかわらず、承認を与える。",
        "次の条に移る。",
    ]
    assert sentences("彼は「行く。」、と短く答えた。翌日に出発した。") == [
        "彼は「行く。」、と短く答えた。",
        "翌日に出発した。",
    ]
    assert sentences('He said "Go.", then left. The door shut.') == [
        'He said "Go.", then left.',
        "The door shut.",
    ]
    # a closing bracket with nothing after it but the next sentence still ends one
    assert sentences("（注：この条は削除。）次の条に移る。") == ["（注：この条は削除。）", "次の条に移る。"]


WRAPPED = (
    "When the program returns, both variables point at the same buffer, and this is a\n"
    "problem: when the two owners go out of scope, both of them try to release the\n"
    "same memory. Releasing it twice corrupts the allocator.\n"
)


def test_a_wrapped_english_line_that_starts_like_a_label_goes_on_with_its_sentence() -> None:
    """A hard wrap that happens to start with a lower-case word and a colon is not a "label: value" line:
    the line above and the line itself end inside the sentence."""
    assert sentences(WRAPPED) == [
        "When the program returns, both variables point at the same buffer, and this is a\n"
        "problem: when the two owners go out of scope, both of them try to release the\n"
        "same memory.",
        "Releasing it twice corrupts the allocator.",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # under a short line (a title, a lead-in): a label line of its own
        ("Configuration\nname: kireme\nversion: 1.0\n", ["Configuration\nname: kireme", "version: 1.0"]),
        # under another label line, however long
        (
            "owner: the team that keeps the index and answers for its uptime and data\n"
            "contact: the address that reaches whoever is on call this week\nsee the wiki\n",
            [
                "owner: the team that keeps the index and answers for its uptime and data",
                "contact: the address that reaches whoever is on call this week",
                "see the wiki",
            ],
        ),
        # the line above ends its sentence (a lower-case word after its "." starts none): a label line
        (
            "Every setting below can also be given on the command line instead.\n"
            "default: the value used when nothing is given\nrange: from one to ten\n",
            [
                "Every setting below can also be given on the command line instead.\n"
                "default: the value used when nothing is given",
                "range: from one to ten",
            ],
        ),
        # Japanese labels keep their rule
        ("出張の日程と行き先は次のとおりとし、変更があれば連絡する\n日時：三月一日\n場所：大阪\n", None),
    ],
)
def test_label_lines_still_end_their_sentence(text: str, expected: list[str] | None) -> None:
    got = sentences(text)
    if expected is None:  # each label line ends a sentence
        assert got == [
            "出張の日程と行き先は次のとおりとし、変更があれば連絡する\n日時：三月一日",
            "場所：大阪",
        ]
    else:
        assert got == expected


def test_a_label_like_wrap_followed_by_an_item_still_ends_before_the_item() -> None:
    text = (
        "The configuration file is read once when the server starts, so every change\n"
        "needs: a restart of the server, or a reload signal sent to its process\n"
        "- restart with the service manager\n"
    )
    got = sentences(text)
    assert got[-1] == "- restart with the service manager"
    assert got[0].endswith("sent to its process") and got[0].startswith("The configuration")


def test_a_heading_number_after_its_label_word_ends_no_sentence() -> None:
    """``ARTICLE 5. CONFIDENTIALITY`` was two sentences, so `sentence` ended a chunk with ``ARTICLE 5.``
    and began the next with ``CONFIDENTIALITY``; ``PART II. DEFINITIONS`` the same."""
    text = (
        "ARTICLE 5. CONFIDENTIALITY\n\nEach party shall keep the other's information secret.\n\n"
        "PART II. DEFINITIONS\n\nSection 2. Scope of the services\n\nIt costs 5. Then it is paid."
    )
    assert sentences(text) == [
        "ARTICLE 5. CONFIDENTIALITY",
        "Each party shall keep the other's information secret.",
        "PART II. DEFINITIONS",
        "Section 2. Scope of the services",
        "It costs 5.",  # a number after two words, or after a word that labels nothing, still ends one
        "Then it is paid.",
    ]


def test_full_stops_of_other_scripts_end_sentences() -> None:
    """``।`` (Hindi), ``؟`` (Arabic), ``۔`` (Urdu), ``።`` (Amharic) and ``။`` (Burmese) end a sentence as
    ``。`` does; they were read as letters, so a long sentence of these scripts was cut between words."""
    hindi = "यह पहला वाक्य है। यह दूसरा वाक्य है॥ तीसरा वाक्य यहाँ है।"
    assert sentences(hindi) == ["यह पहला वाक्य है।", "यह दूसरा वाक्य है॥", "तीसरा वाक्य यहाँ है।"]
    arabic = "هل وصل التقرير؟ نعم وصل أمس. متى الاجتماع؟"
    assert sentences(arabic) == ["هل وصل التقرير؟", "نعم وصل أمس.", "متى الاجتماع؟"]
    urdu = "یہ پہلا جملہ ہے۔ یہ دوسرا جملہ ہے۔"
    assert sentences(urdu) == ["یہ پہلا جملہ ہے۔", "یہ دوسرا جملہ ہے۔"]
    assert len(sentences("ይህ የመጀመሪያ ነው። ይህ ሁለተኛ ነው።")) == 2
    assert len(sentences("ဒါက ပထမ ဝါကျ ဖြစ်တယ်။ ဒါက ဒုတိယ ဖြစ်တယ်။")) == 2


def test_a_numbered_faq_label_opens_its_question() -> None:
    text = "Q3. What is the daily allowance abroad?\nA3. It is 80 dollars. See Q12. Then apply.\nB2. ok"
    assert sentences(text) == [
        "Q3. What is the daily allowance abroad?",
        "A3. It is 80 dollars.",
        "See Q12.",
        "Then apply.",
        "B2. ok",
    ]


def test_a_reference_or_a_citation_after_an_abbreviation_ends_no_sentence() -> None:
    """``Smith et al. (2020)``, ``Sec. 4.2`` and ``Eq. (3)`` were cut after the dot (a bracket or a digit may
    start a sentence): a citation lost its year, a clause its number. A word that names a numbered place
    ends nothing before a number or bracket; the same word at a sentence's end still ends it."""
    text = (
        "Dense retrievers embed queries. Smith et al. (2020) showed that length matters. "
        "As set out in Sec. 4.2 of the Agreement, fees are due monthly. Apply Eq. (3) to the data. "
        "See Zhang et al. [12] for details. He loves modern art. She loves music. It was 2019. 3 people came."
    )
    assert sentences(text) == [
        "Dense retrievers embed queries.",
        "Smith et al. (2020) showed that length matters.",
        "As set out in Sec. 4.2 of the Agreement, fees are due monthly.",
        "Apply Eq. (3) to the data.",
        "See Zhang et al. [12] for details.",
        "He loves modern art.",
        "She loves music.",
        "It was 2019.",
        "3 people came.",
    ]


def test_a_footnote_marker_after_a_full_stop_stays_with_its_sentence() -> None:
    """Text copied from an encyclopedia or a report puts footnote markers after the full stop: the English
    ``.[1] It`` ended no sentence at all (a period must be followed by a space), and the Japanese
    ``。[1]従業員`` gave the marker to the next sentence. A link or a definition is not a marker."""
    english = "The plant opened in 1998.[1] It employs 400 people.[2][3] Output doubled in 2004."
    assert sentences(english) == [
        "The plant opened in 1998.[1]",
        "It employs 400 people.[2][3]",
        "Output doubled in 2004.",
    ]
    japanese = "工場は1998年に開業した。[1]従業員は400人である。[^2]生産量は2004年に倍増した。"
    assert sentences(japanese) == [
        "工場は1998年に開業した。[1]",
        "従業員は400人である。[^2]",
        "生産量は2004年に倍増した。",
    ]
    assert sentences("手順は次を参照。[1](https://example.com)を開く。") == [
        "手順は次を参照。",
        "[1](https://example.com)を開く。",
    ]
    assert sentences("規程です。(注1)次の文です。") == ["規程です。", "(注1)次の文です。"]
