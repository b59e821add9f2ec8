"""The optional C extension `kireme._speedups`, looked up once: the hot loops of the text layer and the chunk ids.

Each function it holds has a pure-Python twin in the module that uses it (the reference the tests compare
it with, and the path taken where the extension was not built, or where ``KIREME_PURE_PYTHON=1``). Both
give the same answer on every input; only the speed differs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def native(name: str) -> Callable[..., Any] | None:
    """The extension's function ``name``, or ``None`` where the extension is not built or is turned off."""
    if os.environ.get("KIREME_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        import kireme._speedups as speedups
    except ImportError:
        return None
    function: Callable[..., Any] | None = getattr(speedups, name, None)
    return function
