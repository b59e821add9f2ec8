"""Imports point one way: every module of ``src/kireme`` imports only its own layer or the layers below it.

The import graph is read from the source with `ast` (imports inside functions and ``TYPE_CHECKING``
blocks count too: a lazy import is still a dependency), so no module is executed. The layers follow
DESIGN.md's data flow, lowest first; a package is one layer (its modules may import each other). Besides
the order, a few pairs are named on their own because they are the ones that were broken before, and
errors must come from the one errors module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = "kireme"

# Lowest first. A module may import modules of its own layer and of the layers before it, never after.
LAYERS: list[str] = [
    "kireme.errors",  # the error tree: imports nothing from kireme
    "kireme.lazy",  # deferred imports and values (start-up): imports nothing from kireme
    "kireme._speedups",  # the optional C extension (the sentence scanner's inner loop): imports nothing
    "kireme._native",  # looks the extension's functions up (or None: their Python twins are used)
    "kireme.document",  # Document, Chunk, ids
    "kireme.httpjson",  # the JSON-over-HTTP transport of the embeddings and chat clients
    "kireme.text",  # graphemes, sentences, paragraphs, Markdown outline, CSV, terms, the marks vocabulary
    "kireme.fusion",  # fusing rankings (hybrid search): one rule for search and evaluation
    "kireme.length",  # measures
    "kireme.boundaries",  # levels and presets
    "kireme.pack",  # the one packer
    "kireme.context",  # title / heading-path context for embed_text
    "kireme.chunkers",  # the Chunker base and the simple strategies
    "kireme.structure",  # outlines, tables, StructureChunker
    "kireme.load",  # files to Documents (chunking never reads files)
    "kireme.embed",  # embedders, specs, cache (model-free strategies never embed)
    "kireme.semantic",  # SemanticChunker: embeds through kireme.embed
    "kireme.strategies",  # the registry and chunker_from_options
    "kireme.parallel",  # ordered process pools (--jobs)
    "kireme.stream",  # iter_chunks: many files, one document at a time, serial or in a pool
    "kireme.shards",  # chunks into numbered JSONL/Parquet shard files (kireme chunk --output)
    "kireme.assemble",  # the context within a budget, from exact offsets (evaluate and index use it)
    "kireme.framing",  # what a passage cut out of a table or a code block needs around it (assemble's input)
    "kireme.evaluate",  # metrics, datasets, retrievers
    "kireme.index",  # stores, ingest, search, context, chat
    "kireme.ray",  # Ray Data pipeline (DESIGN.md; placed ahead of its arrival)
    "kireme.engine",
    "kireme.integrations",  # LangChain / LlamaIndex / Haystack adapters
    "kireme.report",  # plots and HTML pages
    "kireme",  # the public package (kireme/__init__.py) re-exports the library
    "kireme.serve",  # kireme serve: the HTTP API over chunking, search and ask
    "kireme.cli",  # the command: nothing imports it
]

# Pairs (importer prefix, imported prefix) that are forbidden whatever the order says: DESIGN.md's rules.
FORBIDDEN: list[tuple[str, str, str]] = [
    ("kireme.chunkers", "kireme.structure", "chunkers does not import structure"),
    ("kireme.structure", "kireme.load", "structure does not import load"),
    ("kireme.index", "kireme.evaluate", "index does not import evaluate"),
    ("kireme.report", "kireme.embed", "report takes its errors from kireme.errors, not embed"),
]

ERRORS_MODULE = "kireme.errors"


@dataclass(frozen=True)
class Edge:
    """``importer`` imports ``imported`` (full module names) at ``line``; ``names`` are the imported names."""

    importer: str
    imported: str
    line: int = 0
    names: tuple[str, ...] = ()


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules(src: Path = SRC) -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    return {module_name(p, src): p for p in sorted((src / PACKAGE).rglob("*.py"))}


def imports_of(module: str, tree: ast.AST, known: set[str], is_package: bool = False) -> Iterator[Edge]:
    """The kireme modules ``module`` imports anywhere in its tree (functions included).

    ``from kireme import strategies`` imports the module ``kireme.strategies`` when that is a module,
    else a name of the package ``kireme``; relative imports are resolved against ``module``.
    """
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    yield Edge(module, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target != PACKAGE and not target.startswith(PACKAGE + "."):
                continue
            plain = []
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:
                    yield Edge(module, sub, node.lineno)
                else:
                    plain.append(alias.name)
            if plain:
                yield Edge(module, target, node.lineno, tuple(plain))


def import_graph(src: Path = SRC) -> list[Edge]:
    modules = source_modules(src)
    known = set(modules)
    edges: list[Edge] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges.extend(imports_of(name, tree, known, is_package=path.name == "__init__.py"))
    return edges


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str, layers: list[str] = LAYERS) -> int | None:
    """The index of ``module``'s layer: the longest layer name it equals or sits under (the bare package
    name ``kireme`` only matches itself)."""
    best: tuple[int, int] | None = None
    for index, name in enumerate(layers):
        matches = module == name if name == PACKAGE else _within(module, name)
        if matches and (best is None or len(name) > best[0]):
            best = (len(name), index)
    return None if best is None else best[1]


def violations(
    edges: Iterable[Edge],
    layers: list[str] = LAYERS,
    forbidden: list[tuple[str, str, str]] = FORBIDDEN,
    error_names: frozenset[str] = frozenset(),
) -> list[str]:
    """Every broken rule, one line each (empty: the graph is fine).

    * an import of a module with no layer, or from a module with none;
    * an import of a higher layer (a back-reference against the data flow);
    * a forbidden pair;
    * an import of ``kireme.cli`` from outside it;
    * an error class (``error_names``) imported from anywhere but `kireme.errors` or the public package.
    """
    found: list[str] = []
    for edge in edges:
        where = f"{edge.importer}:{edge.line}"
        low, high = layer_of(edge.importer, layers), layer_of(edge.imported, layers)
        if low is None:
            found.append(f"{where}: module {edge.importer} has no layer in LAYERS")
            continue
        if high is None:
            found.append(f"{where}: imports {edge.imported}, which has no layer in LAYERS")
            continue
        if high > low:
            found.append(
                f"{where}: imports {edge.imported} ({layers[high]}), a layer above {layers[low]}: "
                "imports must point down the data flow"
            )
        if _within(edge.imported, "kireme.cli") and not _within(edge.importer, "kireme.cli"):
            found.append(f"{where}: imports {edge.imported}: nothing imports cli")
        for importer, imported, rule in forbidden:
            if _within(edge.importer, importer) and _within(edge.imported, imported):
                found.append(f"{where}: imports {edge.imported}: {rule}")
        if edge.imported not in (ERRORS_MODULE, PACKAGE):
            stray = sorted(set(edge.names) & error_names)
            if stray:
                found.append(
                    f"{where}: imports {', '.join(stray)} from {edge.imported}: errors come from {ERRORS_MODULE}"
                )
    return found


def error_class_names(src: Path = SRC) -> frozenset[str]:
    """The classes kireme.errors defines."""
    tree = ast.parse((src / "kireme" / "errors.py").read_text(encoding="utf-8"))
    return frozenset(node.name for node in tree.body if isinstance(node, ast.ClassDef))


# ------------------------------------------------------------------------------------------------ the tests


def test_every_module_has_a_layer() -> None:
    missing = [m for m in source_modules() if layer_of(m) is None]
    assert not missing, f"place these modules in LAYERS: {missing}"


def test_imports_point_down_the_layers() -> None:
    edges = import_graph()
    assert len(edges) > 100  # the graph was really read
    problems = violations(edges, error_names=error_class_names())
    assert not problems, "\n".join(problems)


def test_errors_are_defined_only_in_the_errors_module() -> None:
    names = error_class_names()
    assert {"KiremeError", "ConfigError", "LoadError", "MissingExtraError", "EmbeddingError"} <= names
    strays = []
    for module, path in source_modules().items():
        if module == ERRORS_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
                bases |= {b.attr for b in node.bases if isinstance(b, ast.Attribute)}
                if node.name in names or bases & names:
                    strays.append(f"{module}:{node.lineno}: class {node.name}")
    assert not strays, "define errors in kireme/errors.py:\n" + "\n".join(strays)


def test_the_error_tree() -> None:
    from kireme import errors

    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.KiremeError), name
        assert cls.__doc__, name
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.DecodeError, ValueError)
    assert issubclass(errors.MissingExtraError, ImportError)
    assert set(errors.__all__) == error_class_names()


def test_benchmarks_do_not_import_the_cli() -> None:
    """Benchmarks measure the library: what the CLI builds, they build through the library too."""
    problems = []
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for edge in imports_of(f"benchmarks.{path.stem}", tree, set(source_modules())):
            if _within(edge.imported, "kireme.cli"):
                problems.append(f"{path.name}:{edge.line}: imports {edge.imported}")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------- the checker itself


@pytest.mark.parametrize(
    ("importer", "imported", "why"),
    [
        ("kireme.text.sentences", "kireme.chunkers", "a layer above"),  # a back-reference
        ("kireme.chunkers", "kireme.structure.layout", "chunkers does not import structure"),
        ("kireme.structure.chunker", "kireme.load.pdf", "structure does not import load"),
        ("kireme.index.search", "kireme.evaluate.retrievers", "index does not import evaluate"),
        ("kireme.report.plot", "kireme.embed.base", "report takes its errors"),
        ("kireme.index.ingest", "kireme.cli.chunk", "nothing imports cli"),
        ("kireme.strategies", "kireme.cli.common", "nothing imports cli"),
        ("kireme.pack", "kireme", "a layer above"),  # the public package is near the top
        ("kireme.errors", "kireme.document", "a layer above"),
        ("kireme.embed.specs", "kireme.semantic.backends", "a layer above"),
        ("kireme.newthing", "kireme.document", "has no layer"),
    ],
)
def test_a_back_reference_is_rejected(importer: str, imported: str, why: str) -> None:
    problems = violations([Edge(importer, imported, 1)])
    assert problems and any(why in p for p in problems), problems


def test_an_error_from_the_wrong_module_is_rejected() -> None:
    names = frozenset({"ConfigError", "MissingExtraError"})
    bad = Edge("kireme.report.plot", "kireme.document", 3, ("Chunk", "ConfigError"))
    assert any("errors come from kireme.errors" in p for p in violations([bad], error_names=names))
    good = [
        Edge("kireme.report.plot", "kireme.errors", 3, ("MissingExtraError",)),
        Edge("kireme.cli.chunk", "kireme", 4, ("ConfigError",)),  # the public package re-exports them
    ]
    assert violations(good, error_names=names) == []


def test_the_graph_reader_sees_lazy_relative_and_submodule_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "kireme"
    (pkg / "text").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "chunkers.py").write_text("")
    (pkg / "pack.py").write_text("")
    (pkg / "text" / "__init__.py").write_text("from . import marks\n")
    (pkg / "text" / "marks.py").write_text("")
    (pkg / "text" / "sentences.py").write_text(
        "def f():\n    from kireme.chunkers import Chunker\n    return Chunker\n"
        "from ..document import Document\n"
        "from kireme import pack\n"
        "import kireme.text.marks\n"
    )
    edges = {(e.importer, e.imported) for e in import_graph(tmp_path)}
    assert edges == {
        ("kireme.text", "kireme.text.marks"),
        ("kireme.text.sentences", "kireme.chunkers"),  # inside a function
        ("kireme.text.sentences", "kireme.document"),  # relative
        ("kireme.text.sentences", "kireme.pack"),  # a submodule named in from-import
        ("kireme.text.sentences", "kireme.text.marks"),
    }
    problems = violations(import_graph(tmp_path))
    assert len(problems) == 2 and all("a layer above" in p for p in problems), problems
