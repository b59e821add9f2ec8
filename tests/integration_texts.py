"""Texts the framework adapter tests share: a document with a repeated sentence, and a Markdown file."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOWANCE = ROOT / "examples" / "travel-allowance.md"

# "承知しました。" ends the first paragraph and is the whole second one: a search for the second chunk's
# text from anywhere before its own place (LangChain's `find`, LlamaIndex's NodeParser, which searches
# from one past the previous node's start) finds the first occurrence.
REPEATED = (
    "申請書の内容を確認します。承知しました。\n\n"
    "承知しました。\n\n"
    "経費の精算は月末に締め切ります。領収書を必ず添付してください。\n\n"
    "領収書を必ず添付してください。"
)
