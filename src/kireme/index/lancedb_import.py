"""Import LanceDB without paying for the REST client it imports and kireme never calls.

``import lancedb`` imports lance-namespace's generated REST client, whose ~370 API methods are wrapped
by `pydantic.validate_call` when their modules load: building those validators cost about 1 s of the
2.4-2.8 s ``import lancedb`` takes on a 2-core machine (a venv with only ``kireme[index]``), and 0.5-1 s of
every ``kireme search``, ``ask`` and ``check`` (docs/benchmarks.md, Start-up). A local index never calls
that client. `import_deferring_validators` imports a
module while `pydantic.validate_call` defers each validator to the decorated function's first call
(pydantic's own ``defer_build`` setting): the same validation, built when it is first needed — for a
local index, never. Anything unexpected (a pydantic without that signature, an import that fails only
this way) falls back to the plain import.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

# the packages, besides lancedb itself, whose half-done import is forgotten before the plain import is tried
_PACKAGES = ("lance_namespace", "lance_namespace_urllib3_client")
_LOCK = threading.Lock()  # one patched import at a time (a server's threads may open stores together)


def import_lancedb() -> ModuleType:
    """``import lancedb``, its REST client's validators deferred (`import_deferring_validators`).

    An ``ImportError`` (the ``index`` extra not installed) is raised as the plain import raises it.
    """
    return import_deferring_validators("lancedb", _PACKAGES)


def import_deferring_validators(name: str, packages: tuple[str, ...] = ()) -> ModuleType:
    """Import module ``name`` while `pydantic.validate_call` builds no validator before its function's
    first call. ``packages``: top-level packages to forget if that import fails with anything but an
    ``ImportError``, before the plain import is tried."""
    loaded = sys.modules.get(name)
    if loaded is not None:  # (``None`` there: an import that must fail, and does below)
        return loaded
    try:
        import pydantic
    except ImportError:  # nothing to defer
        return importlib.import_module(name)
    if not callable(getattr(pydantic, "validate_call", None)):  # pydantic 1: no validate_call to defer
        return importlib.import_module(name)
    with _LOCK:
        loaded = sys.modules.get(name)
        if loaded is not None:
            return loaded
        original = pydantic.validate_call
        pydantic.validate_call = _deferring(original)
        try:
            return importlib.import_module(name)
        except ImportError:
            raise
        except Exception as exc:
            log.debug("import of %s with deferred validators failed (%s); importing it plainly", name, exc)
            for half in [m for m in sys.modules if m.split(".")[0] in (name, *packages)]:
                del sys.modules[half]
        finally:
            pydantic.validate_call = original
    return importlib.import_module(name)


def _deferring(original: Callable[..., Any]) -> Callable[..., Any]:
    """`pydantic.validate_call` with ``defer_build`` added to its config."""

    def validate_call(
        func: Callable[..., Any] | None = None,
        /,
        *,
        config: dict[str, Any] | None = None,
        validate_return: bool = False,
    ) -> Any:
        settings = {**(config or {}), "defer_build": True}
        if func is None:
            return original(config=settings, validate_return=validate_return)
        return original(func, config=settings, validate_return=validate_return)

    return validate_call
