"""The per-text caches of the text layer, and one call that empties them all.

Several analyses are kept for the last few texts, keyed by the text itself, because a strategy's levels,
its packer and its chunks' context all ask about the same document: the Markdown outline
(`kireme.text.markdown`), a plain text's tables (`kireme.text.csvtable`) and their headers
(`kireme.text.tableheaders`), the headings of a plain text's articles and chapters
(`kireme.text.articles`), the divisions of English ones (`kireme.text.divisions`), wiki sections
(`kireme.text.wikitext`) and underlined titles (`kireme.text.underlines`), the paragraph breaks and
sentence index (`kireme.text.sentences`) and, for text without safe break pairs, every grapheme boundary
(`kireme.text.graphemes`). They are an optimisation only: clearing them never changes a result. Benchmarks clear them before every pass so a
repeated document is not measured warm; long-running hosts may clear them to let go of large texts.
Per-process caches that do not depend on a text (compiled patterns, the tokenizer, the parser) stay.
"""

from __future__ import annotations

from kireme.text import (
    articles,
    csvtable,
    divisions,
    graphemes,
    markdown,
    openers,
    sentences,
    tableheaders,
    underlines,
    wikitext,
)

__all__ = ["clear_text_caches"]


def clear_text_caches() -> None:
    """Forget every analysis kept for a text (outlines, table headers, sentence indexes, paragraph breaks,
    grapheme boundaries)."""
    markdown._outline.cache_clear()
    markdown._plain_text_tables.cache_clear()
    csvtable._pasted_tables.cache_clear()
    sentences.sentence_index.cache_clear()
    sentences._breaks.cache_clear()
    graphemes._all_boundaries.cache_clear()
    tableheaders._table_headers.cache_clear()
    articles._article_headings.cache_clear()
    wikitext._wiki_headings.cache_clear()
    underlines._underlined_headings.cache_clear()
    divisions._division_headings.cache_clear()
    openers._grouped.cache_clear()
