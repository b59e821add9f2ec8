"""Hypothesis strategies for text that breaks naive chunkers: Japanese, combining marks, emoji, CRLF."""

from __future__ import annotations

from hypothesis import strategies as st

# Pieces that are hard to cut correctly, mixed with ordinary Japanese and English words.
_ATOMS = [
    "今日は",
    "晴れ",
    "です",
    "。",
    "、",
    "！",
    "？",
    "「",
    "」",
    "『",
    "』",
    "（",
    "）",
    "【重要】",
    "第3条",
    "１０，０００円",
    "３．１４",
    "．",
    "・",
    "1. ",
    "宿泊費",
    "カタカナ",
    "ｶﾀｶﾅ",
    "the ",
    "cat ",
    "Dr. ",
    "e.g. ",
    "U.S. ",
    "sat. ",
    "Hello! ",
    "Why? ",
    "3.14 ",
    "word",
    "\n",
    "\r\n",
    "\n\n",
    "\r\n\r\n",
    " ",
    "  ",
    "\u3000",
    "\t",
    "\u200b",
    "e\u0301",
    "\u0301",
    "か\u3099",
    "\u3099",  # combining marks (also orphaned ones)
    "👨\u200d👩\u200d👧\u200d👦",
    "👍🏽",
    "🇯🇵",
    "🇺🇸🇯🇵",
    "\u2764\ufe0f",
    "\u200d",
    "\u0915\u094d\u0937",
    "\u1100\u1161\u11a8",  # Devanagari conjunct, Hangul jamo
]

atoms = st.sampled_from(_ATOMS)
long_runs = st.builds(
    lambda ch, n: ch * n, st.sampled_from(["あ", "x", "日", "e\u0301", "👍🏽", "１"]), st.integers(20, 300)
)
any_chars = st.characters(blacklist_categories=("Cs",))

texts = st.lists(st.one_of(atoms, atoms, atoms, long_runs, st.text(any_chars, max_size=8)), max_size=60).map(
    "".join
)
