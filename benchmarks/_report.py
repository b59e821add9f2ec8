"""Printing the benchmarks' result tables: README-ready Markdown, or aligned columns for a terminal."""

from __future__ import annotations


def print_table(title: str, header: list[str], rows: list[list[str]], markdown: bool) -> None:
    """One table under its title; in Markdown the first column is left-aligned, the others right."""
    print(f"\n### {title}\n" if markdown else f"\n== {title}")
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        for cells in rows:
            print("| " + " | ".join(cells) + " |")
        return
    widths = [max([len(h), *(len(c[i]) for c in rows)]) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for cells in rows:
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)))
