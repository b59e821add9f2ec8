"""The inspection page (structure, escaping, and live behaviour in headless Chromium) and the PNG plot.

The browser test needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package; it
skips without them. ``KIREME_SCREENSHOT=/path.png`` saves a screenshot of the page it opened.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from kireme import SemanticChunker
from kireme.embed import KeywordEmbedder
from kireme.errors import MissingExtraError
from kireme.report import render_inspection_html, save_distance_plot
from kireme.semantic.chunker import SemanticAnalysis
from kireme.semantic.thresholds import Threshold

TOPICS = {"a": ["ラーメン", "スープ"], "b": ["駅", "電車"]}
TEXT = "ラーメンのスープ。スープが熱い。駅で電車を待つ。電車が来た。"
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
HOSTILE = f"ラーメンのスープ。{SCRIPT}のスープ。駅で電車を待つ。{IMG}電車が来た。終わり&amp;。"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def analyze(text: str = TEXT, threshold: str = "auto", similarity=None):
    similarity = similarity or KeywordEmbedder(TOPICS)
    return SemanticChunker(similarity=similarity, threshold=threshold, cache_dir=False).analyze(text)


def page_data(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="kireme-data">(.*?)</script>', page, re.S)
    assert match, "data block missing"
    return json.loads(match.group(1))


# --- HTML structure, no browser ----------------------------------------------------------------------


def test_data_block_round_trips_the_analysis():
    analysis = analyze(threshold="auto:depth")  # a rule with a distance level
    data = page_data(render_inspection_html(analysis, title="doc.txt", thresholds={"percentile:95": 0.9}))
    assert data["units"] == [list(u) for u in analysis.units]
    assert data["sentences"] == [TEXT[a:b] for a, b in analysis.units]
    assert data["distances"] == pytest.approx(analysis.distances.tolist())
    assert data["similarities"] == pytest.approx(analysis.similarities.tolist())
    assert data["cut_gaps"] == analysis.cut_gaps == [1]
    assert data["threshold"] == str(analysis.threshold)
    assert data["level"] == pytest.approx(analysis.level)
    assert data["similarity"] == analysis.similarity_name
    assert data["thresholds"] == {"percentile:95": 0.9}


def test_page_is_self_contained_japanese_html():
    page = render_inspection_html(analyze(), title="doc.txt")
    assert page.startswith("<!DOCTYPE html>")
    assert '<html lang="ja">' in page and '<meta charset="utf-8">' in page
    assert '<input type="range" id="threshold"' in page and 'id="chunk-count"' in page
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(", page)


def test_slider_spans_the_distances():
    analysis = analyze(threshold="auto:depth")
    page = render_inspection_html(analysis)
    attrs = dict(re.findall(r'(min|max|value)="([^"]+)"', re.search(r'<input type="range"[^>]*>', page)[0]))
    lo, hi, value = float(attrs["min"]), float(attrs["max"]), float(attrs["value"])
    assert lo < analysis.distances.min() and hi == analysis.distances.max()
    assert value == pytest.approx(analysis.level)


def test_the_default_rule_with_an_embedder_has_no_level_and_the_slider_starts_at_as_many_cuts():
    analysis = analyze()  # plain auto with an embedder: the global segmentation, no distance level
    assert str(analysis.threshold) == "auto:kcpd" and analysis.cut_gaps == [1]
    page = render_inspection_html(analysis)
    data = page_data(page)
    assert data["level"] is None and data["cut_gaps"] == [1] and data["threshold"] == "auto:kcpd"
    value = float(re.search(r'<input type="range"[^>]*value="([^"]+)"', page)[1])
    assert [i for i, d in enumerate(analysis.distances) if d > value] == [1]


def test_gradient_rule_has_no_distance_level():
    analysis = analyze(threshold="gradient:50")
    data = page_data(render_inspection_html(analysis))
    assert data["level"] is None and data["threshold"] == "gradient:50"


def test_hostile_document_and_title_stay_text():
    analysis = analyze(HOSTILE)
    page = render_inspection_html(analysis, title=SCRIPT + IMG)
    lowered = page.lower()
    assert "<script>alert" not in lowered and "<img src=x" not in lowered
    assert lowered.count("</script") == 2  # the data block's and the code's, nothing from the document
    data = page_data(page)
    assert "".join(data["sentences"]) == HOSTILE[analysis.units[0][0] : analysis.units[-1][1]]
    assert data["title"] == SCRIPT + IMG


def test_empty_and_single_sentence_documents_render():
    for text in ("", "一文だけ。"):
        page = render_inspection_html(analyze(text, similarity="bigram"))
        assert page_data(page)["distances"] == []
        assert "disabled" in re.search(r'<input type="range"[^>]*>', page)[0]


# --- a real browser ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            pytest.skip(f"{path} is missing (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--window-size=1200,1400",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=str(CHROMEDRIVER))
    driver = webdriver.Chrome(service=service, options=options)
    yield driver
    driver.quit()


def open_page(driver, tmp_path: Path, page: str) -> None:
    path = tmp_path / "inspect.html"
    path.write_text(page, encoding="utf-8")
    driver.get(path.as_uri())


def set_slider(driver, value: str) -> str:
    driver.execute_script(
        "var s = document.getElementById('threshold'); s.value = s[arguments[0]];"
        "s.dispatchEvent(new Event('input', {bubbles: true}));",
        value,
    )
    return driver.find_element("id", "chunk-count").text


@pytest.mark.slow  # a headless browser
def test_slider_redraws_chunks_live(browser, tmp_path):
    from selenium.webdriver.common.by import By

    analysis = analyze()
    open_page(browser, tmp_path, render_inspection_html(analysis, title="ramen-and-trains.txt"))
    assert browser.find_element(By.ID, "chunk-count").text == "2 chunks"  # the rule's own cut
    assert len(browser.find_elements(By.CSS_SELECTOR, "#document .chunk")) == 2
    assert set_slider(browser, "max") == "1 chunk"
    assert set_slider(browser, "min") == f"{len(analysis.units)} chunks"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#document .unit")) == len(analysis.units)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#bars .bar.cut")) == len(analysis.units) - 1
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


@pytest.mark.slow  # a headless browser
def test_gaps_are_numbered_from_zero_as_in_the_cli_and_the_plot(browser, tmp_path):
    """Gap i lies between sentence i and i+1, as in `kireme inspect`'s table, its PNG and the docs."""
    from selenium.webdriver.common.by import By

    analysis = analyze()
    assert analysis.cut_gaps == [1]
    last = len(analysis.distances) - 1
    open_page(browser, tmp_path, render_inspection_html(analysis, title="ramen-and-trains.txt"))
    axis = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".axis span")]
    assert axis[0] == "gap 0" and axis[-1] == f"gap {last}", axis
    bars = browser.find_elements(By.CSS_SELECTOR, "#bars .bar")
    assert bars[0].get_attribute("title").startswith("gap 0: ")
    assert bars[-1].get_attribute("title").startswith(f"gap {last}: ")
    rows = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#document .gap .value")]
    assert [row.split(" · ")[0] for row in rows] == [f"gap {i}" for i in range(last + 1)], rows
    assert "✂ cut" in rows[1] and not any("✂" in row for i, row in enumerate(rows) if i != 1), rows


@pytest.mark.slow  # a headless browser
def test_hostile_document_shows_as_text_without_running(browser, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    analysis = analyze(HOSTILE)
    page = render_inspection_html(analysis, title=SCRIPT, thresholds={"percentile:50": 0.5})
    open_page(browser, tmp_path, page)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert SCRIPT in body and IMG in body and "終わり&amp;。" in body
    assert not browser.find_elements(By.CSS_SELECTOR, "img")
    assert len(browser.find_elements(By.TAG_NAME, "script")) == 2
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert  # noqa: B018 - reading it is the check
    browser.find_element(By.CSS_SELECTOR, "#presets button:nth-child(2)").click()
    assert browser.find_element(By.ID, "chunk-count").text.endswith("chunks")


@pytest.mark.slow  # a headless browser
def test_screenshot_of_a_longer_document(browser, tmp_path):
    text = (
        "札幌の味噌ラーメンは濃厚なスープが特徴だ。味噌ラーメンのスープには豚骨を使う店が多い。"
        "濃厚な味噌スープに太い縮れ麺がよく合う。東京駅から新幹線で大阪駅へ向かった。"
        "新幹線の車内は静かで座席も快適だった。大阪駅に着くと新幹線を降りた。"
        "明日の天気は全国的に雨の予報です。雨は午後から強く降る予報です。週末は晴れる予報です。"
    )
    analysis = analyze(text, threshold="percentile:80", similarity="bigram")
    thresholds = {"auto:otsu": analysis.level * 0.9, "percentile:50": float(sorted(analysis.distances)[4])}
    open_page(browser, tmp_path, render_inspection_html(analysis, title="sample.txt", thresholds=thresholds))
    assert browser.find_element("id", "chunk-count").text.endswith("chunks")
    if shot := os.environ.get("KIREME_SCREENSHOT"):
        browser.save_screenshot(shot)


# --- PNG plot ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", ["auto", "gradient:50"])
def test_distance_plot_is_a_png(tmp_path, threshold):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    path = tmp_path / "distances.png"
    save_distance_plot(analyze(threshold=threshold), path, title="ramen and trains")
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert 5_000 < len(data) < 2_000_000


def test_distance_plot_is_written_in_the_format_its_name_asks_for(tmp_path):
    """``--plot p.svg`` wrote PNG data under that name; an unknown suffix still gets a PNG."""
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    analysis = analyze()
    save_distance_plot(analysis, tmp_path / "p.svg")
    assert b"<svg" in (tmp_path / "p.svg").read_bytes()[:500]
    save_distance_plot(analysis, tmp_path / "p.pdf")
    assert (tmp_path / "p.pdf").read_bytes().startswith(b"%PDF")
    save_distance_plot(analysis, tmp_path / "p.plot")
    assert (tmp_path / "p.plot").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("font", [None, "installed"])
def test_a_japanese_title_draws_no_boxes_and_warns_nothing(tmp_path, monkeypatch, font):
    """``kireme inspect 議事録.txt --plot`` drew the file name as boxes and printed one matplotlib warning per
    missing glyph, ``-q`` or not: the title is drawn in a Japanese font where one is installed, else the
    default title is."""
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    import warnings

    from kireme.report import plot

    if font is None:
        monkeypatch.setattr(plot, "_cjk_font", lambda: None)
    elif plot._cjk_font() is None:
        pytest.skip("no font with Japanese glyphs is installed here")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save_distance_plot(analyze(), tmp_path / "p.png", title="議事録.txt")
    assert not [w for w in caught if "Glyph" in str(w.message)]
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")


def test_distance_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError, match=re.escape("kireme[plot]")):
        save_distance_plot(analyze(), tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_the_printed_threshold_level_cuts_the_same_gaps() -> None:
    """`kireme inspect` printed the level rounded (0.0918 as 0.092): ``absolute:0.092`` then cut nothing."""
    from types import SimpleNamespace

    from kireme.cli.inspect import _shown_level

    distances = np.array([0.05, 0.091788, 0.0915, 0.2])
    level = 0.091788 - 2e-6  # auto:depth's: just below the smallest distance it cuts
    analysis = SimpleNamespace(distances=distances, cut_gaps=[1, 3])
    shown = _shown_level(level, analysis)  # type: ignore[arg-type]
    assert shown == "0.0917"
    assert Threshold.parse(f"absolute:{shown}").cuts(distances)[0] == [1, 3]
    assert _shown_level(0.3, SimpleNamespace(distances=np.array([0.05, 0.2]), cut_gaps=[])) == "0.300"  # type: ignore[arg-type]


def _analysis(distances: list[float], threshold: str) -> SemanticAnalysis:
    """An analysis of made-up distances between one-character sentences (``a.b.c.``...)."""
    d = np.array(distances)
    text = "".join(f"{chr(97 + i)}。" for i in range(len(d) + 1))
    units = [(2 * i, 2 * i + 2) for i in range(len(d) + 1)]
    rule = Threshold.parse(threshold)
    cut_gaps, level = rule.cuts(d)
    return SemanticAnalysis(text, units, 1 - d, d, rule, level, cut_gaps, "made-up")


def test_a_level_is_offered_only_where_it_gives_the_rules_own_cuts() -> None:
    """`kireme inspect` offered ``absolute:<auto:depth's lowest cut>`` as the same cuts; depth cuts the
    deepest dips, so gaps above that distance that are no dip were cut too (8 chunks for 4)."""
    dip = _analysis([0.1, 0.5, 0.45, 0.1, 0.3, 0.1], "auto:depth")
    assert dip.cut_gaps == [1, 4]  # 0.45 is above the lowest cut (0.3) but no peak of its own
    assert dip.distance_level is None
    page = page_data(render_inspection_html(dip, title="d"))
    assert page["level"] is None
    peaks = _analysis([0.1, 0.5, 0.1, 0.1, 0.3, 0.1], "auto:depth")
    assert peaks.cut_gaps == [1, 4]
    assert peaks.distance_level is not None
    assert Threshold.parse(f"absolute:{peaks.distance_level!r}").cuts(peaks.distances)[0] == [1, 4]
    assert _analysis([0.1, 0.2, 0.6], "gradient").distance_level is None


def test_copies_of_one_sentence_are_not_cut_apart_by_rounding_noise() -> None:
    """The distances between copies of one sentence are rounding noise (1e-16 to 1e-13): a rule relative
    to the document's own distances cut off the last copy."""
    noise = [3e-16, 2e-15, 0.0, 4e-14, 1e-15, 3e-16]
    for rule in ("percentile:95", "stddev:1", "gradient:95", "auto:depth", "auto:otsu", "auto:gap"):
        assert Threshold.parse(rule).cuts(np.array(noise))[0] == [], rule


def test_inspect_marks_the_cuts_the_chunks_have_after_a_heading_moved_them(tmp_path: Path) -> None:
    """A topic cut right after a heading line moves before the heading when chunking; `inspect` marked
    it at its first place (and counted a cut the chunks do not have)."""
    from click.testing import CliRunner

    from kireme.cli import cli

    path = tmp_path / "memo.txt"
    path.write_text(
        "議事録\n\n猫は魚が大好きです。猫は一日中よく寝ます。電車は朝に混雑します。\n", encoding="utf-8"
    )
    args = ["--similarity", "bigram", "--threshold", "absolute:0.9"]
    rows = CliRunner().invoke(cli, ["inspect", str(path), "--format", "jsonl", *args])
    assert rows.exit_code == 0, rows.output
    marked = [json.loads(line) for line in rows.stdout.splitlines()]
    assert [r["cut"] for r in marked] == [False, True, True]  # gap 0 is after the heading: no cut there
    assert "2 topic cuts" in rows.stderr
    chunks = CliRunner().invoke(cli, ["chunk", str(path), "-s", "semantic", "--format", "jsonl", *args])
    starts = [json.loads(line)["start"] for line in chunks.stdout.splitlines()]
    assert starts[1:] == [r["position"] for r in marked if r["cut"]]


@pytest.mark.slow  # a headless browser
def test_the_slider_cuts_where_the_chunks_are_cut_after_headings(browser, tmp_path):
    """The page cut wherever a distance exceeded the slider's level; the chunks (and the table) move a
    cut right after a heading before it, or drop it at the text's start: on a document with headings the
    page showed chunks no rule gives. The slider's cuts are moved the same way now."""
    from kireme import Document, make_chunker

    text = "# 覚え書き\n\n## 猫の世話\n\n猫には朝と夜に餌をやる。水は毎日替える。\n\n## 庭の手入れ\n\n芝は春と秋に刈る。雑草は雨の翌日に抜く。\n"
    doc = Document(text, metadata={"format": "markdown"})
    chunker = make_chunker("semantic", similarity="bigram", threshold="percentile:50", max_size=400)
    analysis = chunker.analyze(doc)
    open_page(browser, tmp_path, render_inspection_html(analysis, title="notes.md"))
    for level in sorted({float(d) for d in analysis.distances} | {0.0}):
        browser.execute_script(
            "var s = document.getElementById('threshold'); s.value = arguments[0];"
            "s.dispatchEvent(new Event('input', {bubbles: true}));",
            repr(level),
        )
        shown = browser.find_element("id", "chunk-count").text
        rule = make_chunker(
            "semantic", similarity="bigram", threshold=f"absolute:{level!r}", max_size=400
        ).chunk(doc)
        expected = f"{len(rule)} chunk" + ("" if len(rule) == 1 else "s")
        assert shown == expected, (level, shown, [c.text for c in rule])


def test_a_plot_named_with_no_image_suffix_is_refused_before_the_work(tmp_path):
    """``compare --plot p.txt`` failed after all the work with matplotlib's traceback, ``inspect --plot
    i.txt`` wrote PNG data under that name, ``compare --plot out`` said it wrote ``out`` and wrote
    ``out.png``."""
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    from click.testing import CliRunner

    from kireme.cli import cli
    from kireme.report.compare_plot import save_pareto_plot

    doc = tmp_path / "t.txt"
    doc.write_text("猫が好きです。毎日なでます。\n\n車が好きです。週末に走ります。\n", encoding="utf-8")
    refused = CliRunner().invoke(
        cli, ["inspect", str(doc), "--similarity", "bigram", "--plot", str(tmp_path / "i.txt")]
    )
    assert refused.exit_code == 2 and ".txt is no image format" in refused.output
    assert "Traceback" not in refused.output and not (tmp_path / "i.txt").exists()
    from kireme.evaluate.runner import RetrievalRow  # a row as compare makes it

    row = RetrievalRow("recursive", 200, "chars", 3, 20.0, 1, 2, 0.5, 40.0, 30.0, k=1, retriever="bm25")
    save_pareto_plot([row], [row], tmp_path / "out")
    assert (tmp_path / "out").read_bytes().startswith(b"\x89PNG") and not (tmp_path / "out.png").exists()


@pytest.mark.slow  # a headless browser
def test_the_page_says_which_of_its_groups_the_size_limit_cuts_further(browser, tmp_path):
    """The page grouped sentences by the threshold alone and called the groups chunks: "7 chunks, max 521"
    where `kireme chunk` at max_size 512 made 8. It says now how many are over max_size."""
    from selenium.webdriver.common.by import By

    analysis = analyze()
    whole = len(analysis.text.strip())
    open_page(browser, tmp_path, render_inspection_html(analysis, title="t.txt", max_size=whole - 5))
    set_slider(browser, "max")  # one group: the whole text, over the limit
    sizes = browser.find_element(By.ID, "chunk-sizes").text
    assert f"1 over max_size {whole - 5}: kireme chunk cuts it further" in sizes
    open_page(browser, tmp_path, render_inspection_html(analysis, title="t.txt", max_size=100_000))
    assert "over max_size" not in browser.find_element(By.ID, "chunk-sizes").text
    open_page(browser, tmp_path, render_inspection_html(analysis, title="t.txt", max_size=64, unit="tokens"))
    assert "within max_size 64 tokens besides" in browser.find_element(By.ID, "chunk-sizes").text
