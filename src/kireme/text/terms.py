"""Search terms without a morphological analyser: words for spaced scripts, character bigrams for Japanese.

One tokeniser for every keyword match in kireme: the ``terms`` and ``bm25`` evaluation retrievers
(`kireme.evaluate.retrievers`) and BM25 search of an index (`kireme.index.search`), so a question is
tokenised the same way wherever it is asked.
"""

from __future__ import annotations

import regex

__all__ = ["tokenize"]

_WORD = regex.compile(r"[\p{Latin}\p{N}]+|[\p{Han}\p{Hiragana}\p{Katakana}ー々]+|[^\s\p{P}\p{S}]+")
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}ー々]")


def tokenize(text: str) -> list[str]:
    """Words for spaced scripts, character bigrams (and single characters) for Japanese runs.

    >>> tokenize("Hotel rates: 宿泊費の上限")
    ['hotel', 'rates', '宿泊', '泊費', '費の', 'の上', '上限']
    """
    tokens: list[str] = []
    for m in _WORD.finditer(text.lower()):
        word = m.group()
        if _CJK.match(word):
            if len(word) == 1:
                tokens.append(word)
            else:
                tokens.extend(word[i : i + 2] for i in range(len(word) - 1))
        else:
            tokens.append(word)
    return tokens
