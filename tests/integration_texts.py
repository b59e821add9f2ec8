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

# A web page as a site serves it (navigation, script, style, footer around the content) and a Markdown file:
# what the loader adapters read in the end-to-end tests. In the page, the meeting-room section answers
# "会議室の予約" in a long paragraph, while a short one about a budget meeting holds the same characters in
# other words: Haystack's default BM25 (one token per Japanese character) ranks the short one first.
FACILITIES_HTML = """\
<!DOCTYPE html>
<html lang="ja">
<head>
<meta charset="utf-8">
<title>総務部のご案内</title>
<script>var tracking = "UA-0000";</script>
<style>body { color: #333; }</style>
</head>
<body>
<nav><a href="/">ホーム</a> | <a href="/faq">よくある質問</a> | <a href="/login">ログイン</a></nav>
<main>
<h1>総務部のご案内</h1>
<h2>施設</h2>
<p>会議室の予約は、社内ポータルの施設ページから前日の17時までに行ってください。当日の変更は総務部へ電話で連絡します。</p>
<h2>予算</h2>
<p>予算会議の議題は、室内の約束事の見直しです。</p>
<h2>在宅勤務</h2>
<p>在宅勤務手当として、月額三千円を給与に加算して支給します。光回線の工事費は会社が負担します。</p>
</main>
<footer>&copy; 2026 総務部</footer>
</body>
</html>
"""

TRAVEL_MD = """\
# 出張旅費規程

## 第1章 交通費

新幹線の利用は片道100km以上の出張に限る。グリーン車の料金は支給しない。

## 第2章 宿泊費

宿泊費の上限は一泊12,000円とする。東京都内は14,000円まで認める。

## 第3章 精算

出張後1週間以内に精算書を提出する。領収書のない支出は原則として認めない。
"""

# What must never reach a chunk of the page: tags, the doctype, the script, the navigation, the footer.
PAGE_FURNITURE = ("<", "DOCTYPE", "tracking", "ログイン", "よくある質問", "©")


def write_corpus(folder: Path) -> tuple[Path, Path]:
    """The web page and the Markdown file, written into ``folder``: ``(page, rules)``."""
    page = folder / "facilities.html"
    rules = folder / "travel.md"
    page.write_text(FACILITIES_HTML, encoding="utf-8")
    rules.write_text(TRAVEL_MD, encoding="utf-8")
    return page, rules


def write_pdf(path: Path, pages: list[list[str]]) -> Path:
    """A PDF with one page per list of lines (English: the standard font), drawn with reportlab."""
    import io

    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    for lines in pages:
        c.setFont("Helvetica", 11)
        y = 760
        for line in lines:
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()
    path.write_bytes(buf.getvalue())
    return path
