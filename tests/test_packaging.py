"""The package as users install it: a lean base, optional extras named in errors, one version, lazy imports."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.util import find_spec
from pathlib import Path

import pytest
from click.testing import CliRunner

import kireme
from kireme.cli import cli

# the code strategy wants the code extra (tree-sitter), which a test run on a small disk leaves out
_CODE = ("code",) if find_spec("tree_sitter_language_pack") is not None else ()

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
HEAVY = (
    "lancedb",
    "pyarrow",
    "torch",
    "sentence_transformers",
    "chromadb",
    "langchain",
    "llama_index",
    "haystack",
)


def test_base_dependencies_leave_the_index_and_frameworks_to_extras() -> None:
    names = {re.split(r"[<>=\[ ;]", dep)[0].lower() for dep in PYPROJECT["project"]["dependencies"]}
    assert not names & {"lancedb", "pyarrow", "torch", "chromadb", "sentence-transformers"}
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert any(dep.startswith("lancedb") for dep in extras["index"])
    for extra in ("langchain", "llama-index", "haystack", "tokenizers", "docs"):
        assert extras[extra], extra


def test_version_is_written_once() -> None:
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "src/kireme/__init__.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+", kireme.__version__)
    assert f"## {kireme.__version__}" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    result = CliRunner().invoke(cli, ["--version"])
    assert kireme.__version__ in result.output


def test_license_file_matches_the_metadata() -> None:
    assert PYPROJECT["project"]["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "kireme developers" in text


@pytest.mark.parametrize("command", [["index", "examples"], ["search", "宿泊費"], ["ask", "宿泊費は？"]])
def test_index_commands_without_lancedb_name_the_extra(
    command: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An index built where the extra was installed, then used where it is not: one line naming the extra."""
    monkeypatch.chdir(ROOT)
    db = str(tmp_path / "db")
    built = CliRunner().invoke(cli, ["index", "examples/travel-rules.txt", "--db", db, "--embedder", "hash"])
    assert built.exit_code == 0, built.output
    monkeypatch.setitem(sys.modules, "lancedb", None)  # `import lancedb` raises ImportError
    result = CliRunner().invoke(cli, [*command, "--db", db])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == ["kireme: error: LanceDB store needs lancedb: pip install 'kireme[index]'"], result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.slow
def test_chunking_imports_no_index_model_or_framework_code(tmp_path: Path) -> None:
    """`kireme chunk` and `import kireme` stay light: the heavy extras are imported only by what uses them."""
    small = tmp_path / "small.txt"
    small.write_text(
        "第1条　この規程は出張旅費について定める。\n\n第2条　宿泊費は実費とする。\n", encoding="utf-8"
    )
    probe = (
        "import sys\n"
        "from kireme.cli import main\n"
        f"sys.argv = ['kireme', 'chunk', {str(small)!r}, '--format', 'text']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules})\n"
        "kireme_loaded = sorted(m for m in sys.modules if m.startswith('kireme.'))\n"
        "sys.stderr.write(repr((loaded, kireme_loaded)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded, kireme_loaded = eval(done.stderr.strip().splitlines()[-1])
    assert "第2条" in done.stdout
    assert not set(HEAVY) & set(loaded)
    assert not {"markdown_it", "lxml", "tiktoken", "numpy", "rich"} & set(loaded)
    for lazy in ("kireme.semantic.chunker", "kireme.structure.chunker", "kireme.index", "kireme.evaluate"):
        assert lazy not in kireme_loaded, lazy


def test_make_chunker_result_is_callable_for_every_strategy() -> None:
    text = "# 出張\n\n宿泊費は実費とする。\n\n## 日当\n\n日当は二千円とする。\n"
    for strategy in ("recursive", "sentence", "paragraph", "fixed", "markdown", "structure", "json", *_CODE):
        language = {"language": "python"} if strategy == "code" else {}  # Markdown read as Python
        chunker = kireme.make_chunker(strategy, max_size=40, **language)
        assert [c.text for c in chunker(text)] == [c.text for c in chunker.chunk(text)], strategy
        assert all(text[c.start : c.end] == c.text for c in chunker(text))


@pytest.mark.parametrize("overlap", ["120", "200"])
def test_overlap_not_below_max_size_is_a_usage_error(overlap: str) -> None:
    result = CliRunner().invoke(
        cli, ["chunk", str(ROOT / "examples" / "travel-rules.txt"), "--max-size", "120", "--overlap", overlap]
    )
    assert result.exit_code == 2
    assert "overlap" in result.output and "smaller than max_size" in result.output
    assert "Traceback" not in result.output


def test_kireme_load_stays_the_function_after_a_loader_module_is_imported() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import kireme.load.html, kireme; print(callable(kireme.load), kireme.Chunk.__name__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["True", "Chunk"]


@pytest.mark.slow
def test_eval_runs_without_the_index_extra(tmp_path: Path) -> None:
    """`pip install kireme` (no extras) evaluates: `kireme eval` never imports LanceDB, pyarrow or torch."""
    probe = (
        "import sys\n"
        "for blocked in ('lancedb', 'pyarrow', 'torch', 'chromadb'):\n"
        "    sys.modules[blocked] = None\n"
        "from kireme.cli import main\n"
        "sys.argv = ['kireme', 'eval', 'examples', '--questions', 'examples/questions.jsonl', '--format', 'jsonl']\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert '"hit_rate"' in done.stdout


def test_serve_without_its_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``kireme serve`` where the ``serve`` extra is not installed: one line naming it, exit 2."""
    assert not any(dep.startswith(("fastapi", "uvicorn")) for dep in PYPROJECT["project"]["dependencies"])
    assert {"fastapi", "uvicorn", "python-multipart", "fastapi-offline"} <= {
        re.split(r"[<>=\[ ;]", dep)[0] for dep in PYPROJECT["project"]["optional-dependencies"]["serve"]
    }
    monkeypatch.setitem(sys.modules, "fastapi", None)  # `import fastapi` raises ImportError
    monkeypatch.delitem(sys.modules, "kireme.serve.app", raising=False)
    result = CliRunner().invoke(cli, ["serve", "--no-index", "--port", "0"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == ["kireme: error: kireme serve needs fastapi: pip install 'kireme[serve]'"], result.output


@pytest.mark.parametrize(
    "command",
    [
        ["compare", "examples", "--questions", "examples/questions.jsonl", "-s", "fixed", "--sizes", "200"],
        ["inspect", "examples/travel-rules.txt", "--similarity", "bigram", "--no-cache"],
    ],
    ids=["compare", "inspect"],
)
def test_plot_without_matplotlib_names_the_extra(
    command: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--plot`` where the ``plot`` extra is not installed: one line naming it, exit 2, before any work."""
    monkeypatch.chdir(ROOT)
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    plot = tmp_path / "plot.png"
    result = CliRunner().invoke(cli, [*command, "--plot", str(plot), "--quiet"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == ["kireme: error: --plot needs matplotlib: pip install 'kireme[plot]'"], result.output
    assert not plot.exists()


def test_make_test_installs_only_the_cpu_build_of_torch() -> None:
    """On Linux a plain ``pip install torch==X`` takes PyPI's CUDA build (GBs): every pip command of the
    Makefile that installs torch pins the ``+cpu`` build or reads PyTorch's CPU index."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^TORCH_INDEX \?= https://download\.pytorch\.org/whl/cpu$", makefile, re.M)
    recipe = makefile.replace("\\\n", " ")  # continued lines as one
    commands = [c for line in recipe.splitlines() for c in line.split("||") if "pip install" in c]
    torch = [c for c in commands if re.search(r"\btorch==", c)]
    assert torch, "the Makefile installs no torch"
    for command in torch:
        assert "+cpu" in command or "--index-url $(TORCH_INDEX)" in command, command
