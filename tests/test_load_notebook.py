"""Jupyter notebooks rendered as Markdown with one region per cell (`kireme.load.notebook`)."""

from __future__ import annotations

import json

import pytest

from kireme.errors import ConfigError, LoadError
from kireme.load.notebook import load_notebook


def _notebook() -> dict:
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"name": "ir", "display_name": "R", "language": "R"},
            "language_info": {"name": "python"},
        },
        "cells": [
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": ["# データ前処理\n", "\n", "欠損値を平均で埋めてから、外れ値を確認する。  \n"],
            },
            {
                "cell_type": "code",
                "execution_count": 1,
                "metadata": {},
                "source": ["# コメント：読み込み\n", "df = read('売上.csv')\n", "df.head()"],
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["行数: 120\n"]},
                    {
                        "output_type": "execute_result",
                        "execution_count": 1,
                        "data": {
                            "text/plain": ["   店舗  売上\n", "0  東京  300"],
                            "text/html": ["<table/>"],
                        },
                        "metadata": {},
                    },
                    {
                        "output_type": "error",
                        "ename": "KeyError",
                        "evalue": "\x1b[31m'価格'\x1b[0m",
                        "traceback": ["\x1b[0;31m---------\x1b[0m", "\x1b[0;31mKeyError\x1b[0m: '価格'"],
                    },
                ],
            },
            {"cell_type": "markdown", "metadata": {}, "source": []},
            {"cell_type": "code", "execution_count": None, "metadata": {}, "source": "  \n", "outputs": []},
            {"cell_type": "raw", "metadata": {}, "source": "生のセル\nそのまま残す"},
            {"cell_type": "markdown", "metadata": {}, "source": "## まとめ\n\nDone."},
        ],
    }


def _load(nb: object, **kwargs: object):
    return load_notebook(json.dumps(nb, ensure_ascii=False).encode("utf-8"), "nb/prep.ipynb", **kwargs)


MARKDOWN = "# データ前処理\n\n欠損値を平均で埋めてから、外れ値を確認する。"
CODE = "```R\n# コメント：読み込み\ndf = read('売上.csv')\ndf.head()\n```"
OUTPUT = "```output\n行数: 120\n   店舗  売上\n0  東京  300\nKeyError: '価格'\n```"
RAW = "生のセル\nそのまま残す"
SUMMARY = "## まとめ\n\nDone."


def test_renders_cells_without_outputs_by_default() -> None:
    doc = _load(_notebook())
    assert doc.text == "\n\n".join([MARKDOWN, CODE, RAW, SUMMARY]) + "\n"
    assert [dict(r.metadata) for r in doc.regions] == [
        {"cell": 0, "cell_type": "markdown"},
        {"cell": 1, "cell_type": "code"},
        {"cell": 4, "cell_type": "raw"},
        {"cell": 5, "cell_type": "markdown"},
    ]
    assert {r.kind for r in doc.regions} == {"cell"}
    assert [doc.text[r.start : r.end] for r in doc.regions] == [MARKDOWN, CODE, RAW, SUMMARY]
    assert doc.format == "ipynb"
    assert doc.title == "データ前処理"
    meta = dict(doc.metadata)
    assert meta["language"] == "R"  # kernelspec wins over language_info
    assert meta["cells"] == 6
    assert meta["source"] == "nb/prep.ipynb"
    assert meta["encoding"] == "utf-8"
    assert meta["bom"] is False
    assert meta["bytes"] == len(json.dumps(_notebook(), ensure_ascii=False).encode("utf-8"))


def test_text_outputs_follow_their_cell_inside_its_region() -> None:
    doc = _load(_notebook(), outputs="text")
    cell = CODE + "\n\n" + OUTPUT
    assert doc.text == "\n\n".join([MARKDOWN, cell, RAW, SUMMARY]) + "\n"
    assert doc.text[doc.regions[1].start : doc.regions[1].end] == cell
    assert "\x1b" not in doc.text
    assert "---------" not in doc.text  # tracebacks never appear
    assert "<table/>" not in doc.text


def test_language_fallbacks_and_metadata_title() -> None:
    nb = _notebook()
    nb["metadata"] = {"language_info": {"name": "julia"}, "title": "前処理ノート"}
    doc = _load(nb)
    assert doc.metadata["language"] == "julia"
    assert doc.title == "前処理ノート"
    assert "```julia\n" in doc.text
    nb["metadata"] = {}
    doc = _load(nb)
    assert doc.metadata["language"] == "python"
    assert "```python\n" in doc.text


def test_title_is_empty_without_a_level_one_heading() -> None:
    nb = _notebook()
    nb["cells"] = nb["cells"][1:]
    assert _load(nb).title == ""


def test_code_containing_a_fence_gets_a_longer_fence() -> None:
    nb = {"metadata": {}, "cells": [{"cell_type": "code", "source": 's = """\n```\n"""', "outputs": []}]}
    doc = _load(nb)
    assert doc.text == '````python\ns = """\n```\n"""\n````\n'


def test_nbformat_3_worksheets() -> None:
    nb = {
        "nbformat": 3,
        "metadata": {"name": "old"},
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "heading", "level": 1, "source": ["旧形式"]},
                    {
                        "cell_type": "code",
                        "language": "python",
                        "input": ["print('hi')"],
                        "outputs": [{"output_type": "stream", "text": ["hi\n"]}],
                    },
                ]
            }
        ],
    }
    doc = _load(nb, outputs="text")
    assert doc.text == "# 旧形式\n\n```python\nprint('hi')\n```\n\n```output\nhi\n```\n"
    assert doc.title == "旧形式"
    assert [r.metadata["cell_type"] for r in doc.regions] == ["markdown", "code"]


def test_empty_notebook() -> None:
    doc = _load({"metadata": {}, "cells": []})
    assert doc.text == ""
    assert doc.regions == ()
    assert doc.metadata["cells"] == 0


def test_invalid_json_is_a_one_line_load_error() -> None:
    with pytest.raises(LoadError) as info:
        load_notebook(b'{"cells": [\n  {"cell_type": "code",\n}', "bad.ipynb")
    assert info.value.path == "bad.ipynb"
    assert "not valid notebook JSON" in info.value.reason
    assert "line 3" in info.value.reason
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("nb", [[1, 2, 3], {"metadata": {}}, {"cells": "nope"}, "text"])
def test_json_that_is_not_a_notebook(nb: object) -> None:
    with pytest.raises(LoadError, match='no "cells" list'):
        _load(nb)


def test_outputs_option_is_checked() -> None:
    with pytest.raises(ConfigError, match="outputs"):
        _load(_notebook(), outputs="all")


def test_explicit_encoding_and_bom() -> None:
    data = json.dumps(_notebook(), ensure_ascii=False).encode("utf-8-sig")
    doc = load_notebook(data, "bom.ipynb")
    assert doc.metadata["bom"] is True
    assert doc.title == "データ前処理"
    with pytest.raises(LoadError):
        load_notebook(b"\xff\xfe\x00garbage\x00\x00", "bin.ipynb", encoding="utf-8")


def test_an_image_pasted_into_a_markdown_cell_keeps_its_type_not_its_bytes() -> None:
    """``![plot](data:image/png;base64,…)`` in a Markdown cell became a dozen chunks of base64."""
    payload = "iVBORw0KGgoAAAANSUhEUgAA" * 200
    cell = f"## 売上の推移\n\n![月別の売上](data:image/png;base64,{payload})\n\n三月に売上が伸びた。"
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": cell}],
    }
    text = _load(nb).text
    assert "![月別の売上](data:image/png;base64,…)" in text and payload[:64] not in text
    assert "三月に売上が伸びた。" in text
    short = {
        **nb,
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "![dot](data:image/gif;base64,R0lGOD==)"}
        ],
    }
    assert "R0lGOD==" in _load(short).text  # a tiny one is left as it is
