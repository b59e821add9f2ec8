"""Why a filtered search found nothing: the filter value no document of the index has, and the names meant.

Filters match whole values exactly (``source`` is the path as it was given to ``kireme index``:
``docs/O'Reilly.md``, not ``O'Reilly.md``). A search whose filter names no document answers nothing, which
looks like a search that found no match; `filter_miss` tells the two apart, so the command line can say
``no document has source=O'Reilly.md; did you mean docs/O'Reilly.md?`` instead of staying silent.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kireme.index.manifest import Manifest
from kireme.index.store import held_headings, split_filter

if TYPE_CHECKING:
    from kireme.index.search import Searcher

SUGGESTIONS = 3  # names offered for a value no document has
CLOSE_MATCH_LIMIT = 20_000  # names compared by spelling (difflib) at most: beyond, only same-name matches


def filter_miss(searcher: Searcher, where: Mapping[str, str] | None) -> str | None:
    """For a search that found nothing: the first value of ``where`` no committed document has (``doc_id``,
    ``source``: with the names nearest to it) or no chunk has (``format``, ``title``), as one sentence;
    ``None`` when each value alone is held by some chunk (then the query, or only the combination of the
    values, matched nothing) or when the store cannot be asked (a hint never fails a search). A
    ``heading`` value no chunk's heading path holds is said too, with the headings that hold it."""
    store_where, post = split_filter(where)
    if not store_where:
        return _heading_miss(searcher, post) if post else None
    try:
        manifest = Manifest(searcher.db / "manifest.sqlite")
        try:
            entries = manifest.documents()
        finally:
            manifest.close()
    except Exception:
        return None
    names = {
        "doc_id": sorted(entries),
        "source": sorted({entry.source for entry in entries.values()}),
    }
    held_names = {key: set(values) for key, values in names.items()}
    for key, value in store_where.items():
        if key in names:
            if value in held_names[key]:
                continue
            near = near_names(value, names[key])
            if near:
                return f"no document has {key}={shown(value)}; did you mean {' or '.join(map(shown, near))}?"
            example = f"; {key}s in this index look like {shown(names[key][0])}" if names[key] else ""
            return f"no document has {key}={shown(value)} (filters match whole values exactly){example}"
        try:
            held = next(iter(searcher.store.chunks({key: value})), None) is not None
        except Exception:
            return None
        if not held:
            return f"no chunk has {key}={shown(value)} (filters match whole values exactly)"
    return _heading_miss(searcher, post, store_where) if post else None


HEADINGS_READ = 200_000  # chunks whose headings a hint reads at most (a hint must stay cheap)


def _heading_miss(
    searcher: Searcher, post: Mapping[str, str], store_where: Mapping[str, str] | None = None
) -> str | None:
    """``heading=VALUE`` that no chunk (of those the store filters keep) has in its heading path: one
    sentence with the headings meant (those holding the value, ``第3章 精算`` for ``第3章``, else the nearest
    by spelling); ``None`` when some chunk has it, or the store cannot be asked."""
    value = post.get("heading")
    if value is None:
        return None
    headings: set[str] = set()
    try:
        for n, chunk in enumerate(searcher.store.chunks(dict(store_where) if store_where else None)):
            if n >= HEADINGS_READ:
                break
            headings.update(held_headings(chunk))
    except Exception:
        return None
    if value in headings:
        return None
    want = _folded(value)
    near = sorted(h for h in headings if want and want in _folded(h))[:SUGGESTIONS]
    if not near and len(headings) <= CLOSE_MATCH_LIMIT:
        near = difflib.get_close_matches(value, sorted(headings), n=SUGGESTIONS, cutoff=0.6)
    whole = "a heading matches whole"
    if near:
        return f"no chunk has heading={shown(value)} ({whole}); did you mean {' or '.join(map(shown, near))}?"
    return f"no chunk has heading={shown(value)} ({whole})"


def near_names(value: str, names: Iterable[str], limit: int = SUGGESTIONS) -> list[str]:
    """The names a user who typed ``value`` may have meant, at most ``limit``: those equal to it up to
    surrounding spaces, Unicode normalisation and case, or whose path ends with it (a bare file name for
    ``docs/O'Reilly.md``), or with the same file name; else the nearest by spelling.

    >>> near_names("O'Reilly.md", ["docs/O'Reilly.md", "docs/faq.md"])
    ["docs/O'Reilly.md"]
    >>> near_names(" docs/faq.md", ["docs/O'Reilly.md", "docs/faq.md"])
    ['docs/faq.md']
    >>> near_names("docs/faq.mdx", ["docs/O'Reilly.md", "docs/faq.md"])
    ['docs/faq.md']
    """
    names = list(names)
    want = _folded(value)
    base = want.rpartition("/")[2]
    same = []
    for name in names:
        folded = _folded(name)
        if folded == want or folded.endswith("/" + want) or folded.rpartition("/")[2] == base:
            same.append(name)
    if same or len(names) > CLOSE_MATCH_LIMIT:
        return sorted(same)[:limit]
    return difflib.get_close_matches(value, names, n=limit, cutoff=0.8)


def _folded(name: str) -> str:
    return unicodedata.normalize("NFC", name.strip()).casefold()


def shown(value: str) -> str:
    """``value`` as typed when it reads unambiguously, else as a Python literal (surrounding spaces,
    control characters and bytes that are not UTF-8 made visible, so the line always prints).

    >>> shown("docs/O'Reilly.md")
    "docs/O'Reilly.md"
    >>> shown("a.md ")
    "'a.md '"
    >>> shown("bad\\udcff.md")
    "'bad\\\\udcff.md'"
    """
    if value and value == value.strip() and value.isprintable():
        return value
    return repr(value)
