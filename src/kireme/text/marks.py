"""One vocabulary of the marks that end sentences, close quotes and start list items (Japanese and English).

Sentence splitting (`kireme.text.sentences`), the heading heuristic (`kireme.text.headings`) and the
paragraph starts of hard-wrapped PDF text (`kireme.text.paragraphs`) all read these, so the three never
disagree on what ends a sentence or starts an item. The character sets hold no regex metacharacters
except where noted, so they can be put inside ``[...]`` as they are.
"""

from __future__ import annotations

# End a sentence wherever they stand (Japanese style: no space needed after them); the last six are the
# full stops and question marks of Hindi and other Devanagari text (। ॥), Arabic and Persian (؟), Urdu
# (۔), Amharic (።) and Burmese (။), which no rule for "." would find.
TERMINATORS = "。！？!?｡‼⁇⁈⁉।॥؟۔።။"
# End a sentence only in context: ``．`` not between digits, ``.`` not after an abbreviation or a number.
FULL_STOPS = "．."
# Closing brackets and quotes that stay with the sentence they close (``…です。」``).
CLOSERS = "」』）)】〉》〕］]｝}〙〗\"'”’»›"
# Closing marks of Japanese quotes and brackets: a line of hard-wrapped text that ends in one usually ends
# its sentence even without a terminator (``「ありがとう」``).
QUOTE_CLOSERS = "」』）"
# Opening bracket -> its closing bracket: nothing inside a balanced pair ends a sentence.
OPEN_TO_CLOSE = {
    "「": "」",
    "『": "』",
    "（": "）",
    "(": ")",
    "【": "】",
    "〈": "〉",
    "《": "》",
    "〔": "〕",
}
# Mid-sentence pauses: a line ending in one is prose, not a title.
CLAUSE_MARKS = "、，,;；:："
# Bullets that start a list item.
BULLETS = "・•●○◆◇■□▪▫‣※"
# A numbered article, chapter or section heading of Japanese rules and laws (a regex): 第3条, 第十二章.
ARTICLE = r"第[0-9０-９一二三四五六七八九十百千]+[条章節項款編]"

# A regex (no groups) matching the start of an item line, leading spaces included: ``【``, ``第3条``,
# ``1.``, ``（1）``, ``①``, a bullet, or ``- ``/``* ``/``+ ``.
ITEM_MARKER = (
    r"[ \t\u3000]*(?:"
    r"【"
    rf"|{ARTICLE}"
    r"|[0-9０-９]{1,3}[.．)）]\s?"
    r"|[（(][0-9０-９一二三四五六七八九十a-zA-Zａ-ｚア-ン]{1,3}[）)]"
    r"|[①-⑳]"
    rf"|[{BULLETS}]"
    r"|[-*+][ \t]"
    r")"
)
