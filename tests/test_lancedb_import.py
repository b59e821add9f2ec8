"""LanceDB is imported with the validators of its REST client deferred to their first call.

`kireme.index.lancedb_import` patches `pydantic.validate_call` for the length of one import: these tests
pin that the patch defers and nothing else (validation still happens, on the first call), that it is
undone, and that an import that fails only under it is tried again plainly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

pydantic = pytest.importorskip("pydantic")

from kireme.index.lancedb_import import import_deferring_validators  # noqa: E402


def _validator_state(function: object) -> bool:
    """Whether the validator behind a `validate_call`-wrapped function has been built."""
    closure = getattr(function, "__closure__", None) or ()
    for cell in closure:
        owner = getattr(cell.cell_contents, "__self__", None)
        if owner is not None and hasattr(owner, "__pydantic_complete__"):
            return bool(owner.__pydantic_complete__)
    raise AssertionError(f"{function!r} is not wrapped by pydantic.validate_call")


@pytest.fixture
def package_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("kireme_fake_"):
            del sys.modules[name]


def _write(folder: Path, name: str, body: str) -> None:
    package = folder / name
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(body), encoding="utf-8")


def test_a_validated_function_gets_its_validator_on_its_first_call_and_still_validates(
    package_dir: Path,
) -> None:
    _write(
        package_dir,
        "kireme_fake_client",
        """
        from pydantic import validate_call

        class Api:
            @validate_call
            def rate(self, yen: int, city: str = "東京") -> str:
                return f"{city}: {yen}円"

        @validate_call(validate_return=True)
        def nights(count: int) -> int:
            return count
        """,
    )
    original = pydantic.validate_call
    module = import_deferring_validators("kireme_fake_client")
    assert pydantic.validate_call is original  # the patch lasted only as long as the import
    assert not _validator_state(module.Api.rate)
    assert not _validator_state(module.nights)
    assert module.Api().rate("8000") == "東京: 8000円"  # built now, and it coerces as pydantic does
    assert _validator_state(module.Api.rate)
    with pytest.raises(pydantic.ValidationError):
        module.Api().rate("八千")
    with pytest.raises(pydantic.ValidationError):
        module.nights("two")
    assert module.nights(2) == 2
    assert import_deferring_validators("kireme_fake_client") is module  # imported once


def test_an_import_that_fails_only_with_the_patch_is_imported_again_plainly(package_dir: Path) -> None:
    _write(
        package_dir,
        "kireme_fake_fussy",
        """
        import pydantic
        from pydantic.validate_call_decorator import validate_call as real

        if pydantic.validate_call is not real:
            raise RuntimeError("this package does not like a patched validate_call")

        @pydantic.validate_call
        def room(number: int) -> int:
            return number
        """,
    )
    module = import_deferring_validators("kireme_fake_fussy")
    assert module.room("12") == 12
    assert _validator_state(module.room)  # the plain import built it at once
    assert pydantic.validate_call.__module__ == "pydantic.validate_call_decorator"


def test_a_missing_module_is_reported_as_the_plain_import_reports_it(package_dir: Path) -> None:
    _write(package_dir, "kireme_fake_needs", "import kireme_fake_not_installed  # noqa: F401\n")
    with pytest.raises(ModuleNotFoundError, match="kireme_fake_not_installed"):
        import_deferring_validators("kireme_fake_needs")
    assert pydantic.validate_call.__module__ == "pydantic.validate_call_decorator"


def test_without_a_pydantic_validate_call_the_module_is_imported_plainly(
    package_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import types

    monkeypatch.setitem(sys.modules, "pydantic", types.ModuleType("pydantic"))  # as pydantic 1 has none
    _write(package_dir, "kireme_fake_plain", "ROOMS = 12\n")
    assert import_deferring_validators("kireme_fake_plain").ROOMS == 12


def test_lancedb_imported_this_way_defers_its_rest_client_and_still_stores_and_searches(
    tmp_path: Path,
) -> None:
    """In a fresh interpreter (this one may have imported LanceDB already): the REST client's validators
    are not built, and a local table is written and searched as usual."""
    pytest.importorskip("lancedb")
    script = textwrap.dedent(
        f"""
        import json, sys
        from kireme.index.lancedb_import import import_lancedb
        lancedb = import_lancedb()
        from lance_namespace_urllib3_client.api.table_api import TableApi
        closure = TableApi.describe_table.__closure__
        built = [c.cell_contents.__self__.__pydantic_complete__ for c in closure
                 if hasattr(getattr(c.cell_contents, "__self__", None), "__pydantic_complete__")]
        db = lancedb.connect({str(tmp_path)!r})
        table = db.create_table("rows", data=[{{"id": "a", "vector": [1.0, 0.0]}},
                                              {{"id": "b", "vector": [0.0, 1.0]}}])
        nearest = table.search([0.9, 0.1]).limit(1).to_list()[0]["id"]
        print(json.dumps({{"built": built, "nearest": nearest}}))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"built": [False], "nearest": "a"}
