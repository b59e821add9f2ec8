"""The page of ``kireme serve`` in a real headless Chromium, against a real ``kireme serve`` process.

What it proves, each step checked against what the API itself answers for the same request:

* chunk view: a pasted Japanese text with emoji, a rare kanji outside the BMP (𠮷) and ``<script>``/``<b>``
  strings is drawn as exactly one ``span.chunk`` per chunk over the document text the API returns, with
  no character lost or garbled (code-point offsets mapped to UTF-16 correctly, no surrogate pair cut),
  overlaps marked, nothing from the document run or parsed as markup; hovering a chunk shows its start,
  end, size, id and embed_text; changing max size re-chunks by itself (debounced);
* upload: a Markdown file sent through the file input is chunked from the upload, and a chunk's details
  show its heading path;
* semantic (bigram similarity, no model): the distance chart has one point per gap; moving the threshold
  (slider, or a click on the chart) re-requests ``absolute:<value>`` and changes the cuts as the API does;
* search: before any index exists the server's 409 message shows in the error line; after ``kireme
  index`` (hash embedder, no model) hits are listed with the hit text in a ``<mark>`` between its
  context, and a budget lists the assembled passages;
* auth: the server runs with a token; a call answered 401 brings up the token prompt, and the token
  entered there is sent as ``Authorization: Bearer`` on the calls that follow;
* the server stops on SIGTERM within seconds;
* drawing keeps every character for chunks no chunker makes today (a gap, nested, empty);
* without a browser: the page's files load nothing from the network and never parse text as markup.

Needs Debian's ``chromium`` and ``chromium-driver``, ``selenium``, ``fastapi`` and ``uvicorn``; skips
without them; all but the file check are marked slow. ``KIREME_SCREENSHOT=/path.png`` saves a
screenshot of the semantic view.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from itertools import pairwise
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "src" / "kireme" / "serve" / "page"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
TOKEN = "page-test-token"
KIREME = [sys.executable, "-m", "kireme.cli"]
# the ids tests and users' scripts may rely on
STABLE_IDS = (
    "doc-input", "file-input", "strategy", "max-size", "unit", "overlap", "min-size", "context", "similarity",
    "threshold-rule", "chunk-button", "doc-view", "details", "chunk-count", "histogram", "distance-chart",
    "threshold", "search-query", "search-k", "search-mode", "search-budget", "search-button", "hits",
    "search-context", "error", "token",
)  # fmt: skip

# Our own sentences: emoji and 𠮷 (outside the BMP: two UTF-16 units each), markup that must stay text.
CHUNK_TEXT = (
    "出張の前に申請書を出してください。😀 承認は上長が行います。\n"
    "宿泊費の上限は一泊一万円です。𠮷野家での昼食は日当に含みます。\n"
    "注意: <script>alert('x')</script> と <b>太字</b> はただの文字です。\n\n"
    "The travel desk books trains and hotels. Receipts are scanned within a week. 🚄 Late claims need a reason."
)
MANUAL_MD = (
    "# 出張旅費規程\n\n"
    "## 宿泊費\n\n"
    "宿泊費は一泊につき一万円を上限として実費を支給する。領収書を必ず添付すること。\n\n"
    "## 日当\n\n"
    "日当は一日につき二千円とする。半日の出張は千円とする。\n\n"
    "# Kettle manual\n\n"
    "## Descaling\n\n"
    "Descale the kettle once a month with citric acid. Rinse it twice before boiling water again.\n"
)
TOPICS_TEXT = (
    "猫は一日の大半を眠って過ごす。猫の睡眠時間は十二時間を超えることもある。子猫の猫はさらによく眠る。"
    "東京駅から新幹線に乗って京都駅へ向かった。新幹線の車内はとても静かだった。京都駅で新幹線を降りた。"
    "明日の天気は雨の予報です。雨は夕方から強くなる予報です。週末の天気は晴れの予報です。"
)
SEARCH_DOCS = {
    "travel-rules.md": (
        "# 出張旅費規程\n\n## 宿泊費\n\n宿泊費の上限は一泊一万円とする。東京と大阪では上限を一万二千円とする。\n\n"
        "## 日当\n\n日当は一日二千円とする。日帰りの出張の日当は千円とする。\n"
    ),
    "kettle-manual.txt": (
        "Kettle manual.\n\nFill the kettle with water up to the MAX line and press the switch. "
        "The lamp turns off when the water boils.\n\n"
        "Descale the kettle once a month with citric acid. Never put the kettle in a dishwasher.\n"
    ),
    "meeting-notes.txt": (
        "経費精算の締め日は毎月二十五日です。領収書は写真で提出できます。\n\n"
        "The new expense system starts in July. Hotel receipts must show the tax amount.\n"
    ),
}


# --- the server ----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(base: str, path: str, body: dict | None = None, token: str | None = TOKEN) -> tuple[int, dict]:
    """One JSON request to the server (status, answer), errors included."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(base + path, data=data, method="GET" if body is None else "POST")
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def chunk_api(base: str, text: str, **options) -> dict:
    status, answer = call(base, "/chunk", {"text": text, **options})
    assert status == 200, answer
    return answer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real ``kireme serve`` with a token, on an index directory nothing has written yet."""
    pytest.importorskip("fastapi", reason="kireme serve needs fastapi")
    pytest.importorskip("uvicorn", reason="kireme serve needs uvicorn")
    root = tmp_path_factory.mktemp("serve")
    db, log = root / "db", root / "server.log"
    port = free_port()
    env = {**os.environ, "KIREME_CACHE_DIR": str(root / "cache")}
    command = [*KIREME, "serve", "--db", str(db), "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen([*command, "--token", TOKEN], stdout=out, stderr=out, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, log.read_text(encoding="utf-8", errors="replace")
        try:
            if call(base, "/health")[0] == 200:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, "kireme serve did not answer /health within 60 s"
        time.sleep(0.1)
    yield {"base": base, "db": db, "root": root, "env": env}
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=5)  # open keep-alive connections from the browser must not hold it
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail("kireme serve did not stop within 5 s of SIGTERM")
    assert process.returncode in (0, -signal.SIGTERM), log.read_text(encoding="utf-8", errors="replace")


# --- the browser ---------------------------------------------------------------------------------------


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
        "--window-size=1280,1500",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=str(CHROMEDRIVER))
    driver = webdriver.Chrome(service=service, options=options)
    yield driver
    driver.quit()


def by(kind: str):
    from selenium.webdriver.common.by import By

    return {"id": By.ID, "css": By.CSS_SELECTOR}[kind]


def find(driver, css: str):
    return driver.find_element(by("css"), css)


def finds(driver, css: str) -> list:
    return driver.find_elements(by("css"), css)


def wait_for(driver, predicate, message: str = "", timeout: float = 30):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(predicate, message)


def error_line(driver) -> str:
    """The page's error line, "" while it is hidden."""
    return driver.execute_script(
        "var e = document.getElementById('error'); return e.hidden ? '' : e.textContent;"
    )


def renders(driver, kind: str = "chunk") -> int:
    return int(find(driver, "body").get_attribute(f"data-{kind}-renders") or 0)


def view(driver) -> tuple[int, str]:
    """(how many span.chunk, the document view's text), failing at once on an error line."""
    shown = error_line(driver)
    assert not shown, shown
    return driver.execute_script(
        "return [document.querySelectorAll('#doc-view span.chunk').length,"
        " document.getElementById('doc-view').textContent];"
    )


def wait_view(driver, answer: dict, message: str) -> None:
    """Until the page draws the chunks of ``answer`` (an API answer to the same request)."""
    expected = [len(answer["chunks"]), answer["text"]]
    wait_for(driver, lambda d: view(d) == expected, message)


def open_page(driver, server) -> None:
    """The page, signed in the way a browser is: ``/?token=`` once sets the cookie."""
    driver.get(f"{server['base']}/?token={TOKEN}")
    wait_for(driver, lambda d: find(d, "#health").text not in ("", "connecting…"), "no /health")
    assert not error_line(driver), error_line(driver)


def paste(driver, text: str) -> None:
    """Text into the textarea (ChromeDriver cannot type characters outside the BMP), as typing does."""
    driver.execute_script(
        "var t = document.getElementById('doc-input'); t.value = arguments[0];"
        "t.dispatchEvent(new Event('input', {bubbles: true}));",
        text,
    )


def choose(driver, css: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(find(driver, css)).select_by_value(value)


def retype(driver, css: str, value: str) -> None:
    from selenium.webdriver.common.keys import Keys

    field = find(driver, css)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(value)


def hover(driver, element) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
    ActionChains(driver).move_to_element(element).perform()


def text_of(driver, css: str) -> str:
    return driver.execute_script("return document.querySelector(arguments[0]).textContent;", css)


def severe_logs(driver) -> list:
    """Console errors, less the ones Chromium logs for every 4xx answer (the tests ask for some)."""
    return [
        e
        for e in driver.get_log("browser")
        if e["level"] == "SEVERE" and "Failed to load resource" not in e["message"]
    ]


# --- the files, no browser -----------------------------------------------------------------------------


def test_page_files_are_offline_and_never_parse_text_as_markup():
    page = (PAGE / "index.html").read_text(encoding="utf-8")
    script = (PAGE / "kireme.js").read_text(encoding="utf-8")
    style = (PAGE / "kireme.css").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert '<html lang="ja">' in page and '<meta charset="utf-8">' in page
    assert re.findall(r'(?:src|href)="([^"]*)"', page) == ["/static/kireme.css", "/static/kireme.js"]
    for name, source in (("index.html", page), ("kireme.js", script), ("kireme.css", style)):
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.\w+[^\s\"')]*", source))
        assert urls <= {"http://www.w3.org/2000/svg"}, (name, urls)  # the SVG namespace is a name
        assert not re.search(r"@import|url\(|@font-face", source), name
    assert not re.search(
        r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function", script
    )
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    assert not set(STABLE_IDS) - set(ids), set(STABLE_IDS) - set(ids)


# --- the tests -----------------------------------------------------------------------------------------


@pytest.mark.slow  # a server process and a headless browser
def test_chunks_are_drawn_over_the_exact_text(browser, server):
    from selenium.common.exceptions import NoAlertPresentException

    open_page(browser, server)
    assert browser.execute_script("return document.documentElement.lang") == "ja"
    ids = browser.execute_script("return Array.from(document.querySelectorAll('[id]'), e => e.id);")
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    choose(browser, "#strategy", "recursive")
    retype(browser, "#max-size", "40")
    retype(browser, "#overlap", "8")
    paste(browser, CHUNK_TEXT)
    find(browser, "#chunk-button").click()
    answer = chunk_api(server["base"], CHUNK_TEXT, strategy="recursive", max_size=40, overlap=8)
    text, chunks = answer["text"], answer["chunks"]
    assert text == CHUNK_TEXT and len(chunks) > 4
    wait_view(browser, answer, "the page did not draw the API's chunks")

    # each span holds its chunk from its start up to where the next chunk starts: offsets in code points
    spans = browser.execute_script(
        "return Array.from(document.querySelectorAll('#doc-view span.chunk'), s => [+s.dataset.index, s.textContent]);"
    )
    ends = [min(c["end"], n["start"]) for c, n in pairwise(chunks)] + [chunks[-1]["end"]]
    assert spans == [[c["index"], text[c["start"] : e]] for c, e in zip(chunks, ends, strict=True)]
    shared = [text[n["start"] : c["end"]] for c, n in pairwise(chunks) if n["start"] < c["end"]]
    assert shared, "overlap 8 should make chunks share characters"
    assert (
        browser.execute_script(
            "return Array.from(document.querySelectorAll('#doc-view .overlap'), s => s.textContent);"
        )
        == shared
    )
    assert find(browser, "#chunk-count").get_attribute("data-count") == str(len(chunks))
    assert len(finds(browser, "#histogram rect.bin")) >= 1

    # the document's markup stays text: nothing parsed, nothing run
    assert not finds(browser, "#doc-view b, #doc-view script, #details b")
    assert len(finds(browser, "script")) == 1
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert  # noqa: B018 - reading it is the check

    # hovering the chunk that holds the emoji shows its details
    target = next(c for c in chunks if "😀" in c["text"])
    hover(browser, find(browser, f'#doc-view span.chunk[data-index="{target["index"]}"]'))
    wait_for(browser, lambda d: find(d, "#details").get_attribute("data-index") == str(target["index"]))
    assert find(browser, "#detail-start").text == str(target["start"])
    assert find(browser, "#detail-end").text == str(target["end"])
    assert find(browser, "#detail-size").text == f"{target['size']} chars"
    assert find(browser, "#detail-id").text == target["id"]
    assert text_of(browser, "#detail-embed") == target["embed_text"]

    # another max size re-chunks without a click
    retype(browser, "#max-size", "70")
    wider = chunk_api(server["base"], CHUNK_TEXT, strategy="recursive", max_size=70, overlap=8)
    assert len(wider["chunks"]) != len(chunks)
    wait_view(browser, wider, "changing max size did not re-chunk")
    assert not severe_logs(browser)


@pytest.mark.slow  # a server process and a headless browser
def test_gaps_nesting_and_empty_chunks_keep_every_character(browser, server):
    """Chunks the chunkers do not make today (a gap, one inside another, an empty one) still draw one
    span.chunk each over the exact text, surrogate pairs whole."""
    open_page(browser, server)
    text = "a😀b𠮷cd\nef"  # code points: a0 😀1 b2 𠮷3 c4 d5 \n6 e7 f8
    spans = [(0, 3), (2, 5), (5, 5), (7, 9), (8, 9)]
    chunks = [
        {"index": i, "start": s, "end": e, "size": e - s, "unit": "chars", "headings": [], "id": f"c{i}"}
        for i, (s, e) in enumerate(spans)
    ]
    drawn = browser.execute_script(
        "window.kireme.render({text: arguments[0], chunks: arguments[1], unit: 'chars', analysis: null},"
        " {max_size: 3, unit: 'chars'});"
        "var v = document.getElementById('doc-view');"
        "return [v.textContent, Array.from(v.querySelectorAll('span.chunk'), s => +s.dataset.index),"
        " Array.from(v.querySelectorAll('.overlap'), s => [s.textContent, s.dataset.chunks])];",
        text,
        chunks,
    )
    assert drawn[0] == text
    assert sorted(drawn[1]) == [0, 1, 2, 3, 4]
    assert drawn[2] == [["b", "0 1"], ["f", "3 4"]]


@pytest.mark.slow  # a server process and a headless browser
def test_uploaded_markdown_shows_heading_paths(browser, server, tmp_path):
    open_page(browser, server)
    choose(browser, "#strategy", "markdown")
    retype(browser, "#max-size", "80")
    retype(browser, "#overlap", "0")
    path = tmp_path / "出張と家電.md"
    path.write_text(MANUAL_MD, encoding="utf-8")
    find(browser, "#file-input").send_keys(str(path))
    answer = chunk_api(server["base"], MANUAL_MD, filename=path.name, strategy="markdown", max_size=80)
    wait_view(browser, answer, "the upload was not chunked")
    assert "出張と家電.md" in find(browser, "#source").text

    for chunk in answer["chunks"]:
        if "一泊" in chunk["text"] or "citric" in chunk["text"]:
            hover(browser, find(browser, f'#doc-view span.chunk[data-index="{chunk["index"]}"]'))
            wait_for(
                browser, lambda d, i=chunk["index"]: find(d, "#details").get_attribute("data-index") == str(i)
            )
            assert find(browser, "#detail-headings").text == " > ".join(chunk["headings"])
    assert find(browser, "#detail-headings").text == "Kettle manual > Descaling"
    assert not severe_logs(browser)


@pytest.mark.slow  # a server process and a headless browser
def test_pasted_markdown_and_html_are_read_as_what_they_are(browser, server):
    """The box says "Paste text, Markdown or HTML here", but with Format "auto" a pasted text went to the
    server with no name and was read as plain text: no heading path for pasted Markdown, HTML chunked with
    its tags. The page tells them apart now."""
    open_page(browser, server)
    choose(browser, "#strategy", "markdown")
    retype(browser, "#max-size", "80")
    retype(browser, "#overlap", "0")
    paste(browser, MANUAL_MD)
    find(browser, "#chunk-button").click()
    answer = chunk_api(server["base"], MANUAL_MD, format="markdown", strategy="markdown", max_size=80)
    assert any(c["headings"] for c in answer["chunks"])
    wait_view(browser, answer, "pasted Markdown was not chunked as Markdown")
    page = "<!DOCTYPE html><html><body><h1>出張</h1><p>日当は二千円とする。</p></body></html>"
    paste(browser, page)
    find(browser, "#chunk-button").click()
    html = chunk_api(server["base"], page, format="html", strategy="markdown", max_size=80)
    assert html["text"].startswith("# 出張")
    wait_view(browser, html, "pasted HTML was not read as HTML")
    assert not severe_logs(browser)


def set_slider(driver, end: str) -> None:
    driver.execute_script(
        "var s = document.getElementById('threshold'); s.value = s[arguments[0]];"
        "s.dispatchEvent(new Event('input', {bubbles: true}));",
        end,
    )


def wait_cuts(driver, server, before: int) -> tuple[int, str]:
    """After a threshold move: the page's cut count, checked against the API for the same rule."""
    wait_for(driver, lambda d: renders(d) > before and find(d, "#busy").get_attribute("hidden"), "no redraw")
    rule = find(driver, "#threshold-rule").get_attribute("value")
    assert rule.startswith("absolute:")
    answer = chunk_api(
        server["base"], TOPICS_TEXT, strategy="semantic", max_size=400, similarity="bigram", threshold=rule
    )
    wait_view(driver, answer, f"the chunks of {rule} were not drawn")
    cuts = int(find(driver, "#cut-count").get_attribute("data-cuts"))
    assert cuts == len(answer["analysis"]["cut_gaps"])
    assert len(finds(driver, "#distance-chart circle.point.cut")) == cuts
    return cuts, rule


@pytest.mark.slow  # a server process and a headless browser
def test_semantic_threshold_moves_the_cuts(browser, server):
    from selenium.webdriver.common.action_chains import ActionChains

    open_page(browser, server)
    choose(browser, "#strategy", "semantic")
    choose(browser, "#similarity", "bigram")
    retype(browser, "#max-size", "400")
    retype(browser, "#overlap", "0")
    find(browser, "#threshold-rule").clear()
    paste(browser, TOPICS_TEXT)
    find(browser, "#chunk-button").click()
    answer = chunk_api(server["base"], TOPICS_TEXT, strategy="semantic", max_size=400, similarity="bigram")
    wait_view(browser, answer, "the semantic chunks were not drawn")
    analysis = answer["analysis"]
    gaps = len(analysis["units"]) - 1
    assert gaps == len(analysis["distances"]) == 8
    assert len(finds(browser, "#distance-chart circle.point")) == gaps
    assert len(finds(browser, "#distance-chart circle.point.cut")) == len(analysis["cut_gaps"])
    assert find(browser, "#threshold-line").get_attribute("visibility") == "visible"

    before = renders(browser)
    set_slider(browser, "max")
    few, rule_max = wait_cuts(browser, server, before)
    before = renders(browser)
    set_slider(browser, "min")
    many, _ = wait_cuts(browser, server, before)
    assert many > few and many == gaps
    # a click near the top of the chart drags the line up: the fewest cuts again
    chart = find(browser, "#distance-chart")
    before = renders(browser)
    ActionChains(browser).move_to_element_with_offset(
        chart, 0, -chart.size["height"] // 2 + 3
    ).click().perform()
    assert wait_cuts(browser, server, before)[0] == few

    hover(browser, find(browser, '#doc-view span.chunk[data-index="0"]'))
    wait_for(browser, lambda d: find(d, "#details").get_attribute("data-index") == "0")
    assert rule_max.startswith("absolute:")
    if shot := os.environ.get("KIREME_SCREENSHOT"):
        browser.save_screenshot(shot)
    assert not severe_logs(browser)


@pytest.mark.slow  # a server process and a headless browser
def test_search_lists_hits_in_their_context(browser, server):
    open_page(browser, server)
    query = "宿泊費の上限"
    find(browser, "#search-query").send_keys(query)
    find(browser, "#search-button").click()
    # no index yet: the server's 409 line is shown, nothing breaks
    wait_for(browser, lambda d: "(409)" in error_line(d), "the 409 was not shown")
    status, refusal = call(server["base"], "/search", {"query": query})
    assert status == 409 and refusal["error"] in error_line(browser)
    assert not finds(browser, "#hits li")

    docs = server["root"] / "docs"
    docs.mkdir()
    for name, body in SEARCH_DOCS.items():
        (docs / name).write_text(body, encoding="utf-8")
    indexed = subprocess.run(
        [
            *KIREME,
            "index",
            str(docs),
            "--db",
            str(server["db"]),
            "--embedder",
            "hash:64",
            "--max-size",
            "60",
            "-q",
        ],
        capture_output=True,
        text=True,
        env=server["env"],
        timeout=300,
    )
    assert indexed.returncode == 0, indexed.stderr

    before = renders(browser, "search")
    find(browser, "#search-button").click()
    wait_for(browser, lambda d: renders(d, "search") > before, "no hits drawn")
    assert not error_line(browser)
    body = {
        "query": query,
        "k": 5,
        "mode": "hybrid",
        "filters": {},
        "budget": None,
        "unit": "chars",
        "around": 160,
    }
    status, answer = call(server["base"], "/search", body)
    assert status == 200 and answer["hits"]
    shown = browser.execute_script(
        "return Array.from(document.querySelectorAll('#hits li.hit'), li => ["
        " li.querySelector('mark').textContent,"
        " (li.querySelector('.before') || {textContent: ''}).textContent,"
        " (li.querySelector('.after') || {textContent: ''}).textContent]);"
    )
    assert shown == [[h["text"], h["before"], h["after"]] for h in answer["hits"]]
    assert any(h["before"] or h["after"] for h in answer["hits"]), "around 160 should give some context"
    assert "宿泊費" in find(browser, "#hits li.hit mark").text
    first = find(browser, "#hits li.hit .hit-head").text
    assert "#1" in first and answer["hits"][0]["source"] in first

    # with a budget the assembled passages are listed too
    find(browser, "#search-budget").send_keys("200")
    before = renders(browser, "search")
    find(browser, "#search-button").click()
    wait_for(browser, lambda d: renders(d, "search") > before, "no context drawn")
    status, budgeted = call(server["base"], "/search", {**body, "budget": 200})
    assert status == 200 and budgeted["context"]["passages"]
    assert find(browser, "#search-context").is_displayed()
    passages = browser.execute_script(
        "return Array.from(document.querySelectorAll('#passages li.passage pre'), p => p.textContent);"
    )
    assert passages == [p["text"] for p in budgeted["context"]["passages"]]
    assert find(browser, "#context").is_displayed()  # the chunk options are untouched
    wait_for(
        browser, lambda d: "index: 3 documents" in find(d, "#health").text, "the status line missed the index"
    )
    assert not severe_logs(browser)


@pytest.mark.slow  # a server process and a headless browser
def test_a_401_asks_for_the_token_and_sends_it(browser, server):
    open_page(browser, server)
    browser.execute_script("sessionStorage.clear();")
    browser.delete_all_cookies()  # the cookie /?token= set: now only the Authorization header can pass
    choose(browser, "#strategy", "sentence")
    retype(browser, "#max-size", "50")
    retype(browser, "#overlap", "0")
    paste(browser, CHUNK_TEXT)
    find(browser, "#chunk-button").click()
    wait_for(browser, lambda d: find(d, "#auth").is_displayed(), "no token prompt after a 401")
    assert "(401)" in error_line(browser)
    find(browser, "#token").send_keys(TOKEN)
    find(browser, "#token-save").click()
    answer = chunk_api(server["base"], CHUNK_TEXT, strategy="sentence", max_size=50)
    wait_view(browser, answer, "the chunk request was not retried with the token")
    assert not find(browser, "#auth").is_displayed()
    assert browser.execute_script("return sessionStorage.getItem('kireme-token');") == TOKEN
    assert call(server["base"], "/health", token=None)[0] == 401  # the token is what let it through
