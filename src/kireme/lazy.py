"""Deferred imports and values: what keeps `import kireme` and `kireme chunk` start-up small.

`LazyMapping` maps names to values made by factories on first use (preset level lists compile their
patterns, strategy classes import their modules); `lazy_exports` is a package's ``__getattr__`` that
imports a public name's module when the name is first used (PEP 562). Imports nothing from kireme.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

V = TypeVar("V")


class LazyMapping(Mapping[str, V]):
    """Names to values, each made by its factory on first use and kept.

    Names that share a factory share the value (the same object): aliases of one preset, two names of
    one strategy. Thread-safe: a value is made once.
    """

    def __init__(self, factories: Mapping[str, Callable[[], V]]) -> None:
        self._factories = dict(factories)
        self._made: dict[Callable[[], V], V] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> V:
        factory = self._factories[name]
        with self._lock:
            if factory not in self._made:
                self._made[factory] = factory()
            return self._made[factory]

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps a public name to the module that defines
    it; the name is imported on first use and kept in ``namespace`` (the package's globals)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
