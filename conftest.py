"""Collection settings for the whole repository (the test settings themselves are in tests/conftest.py).

``pytest`` collects ``src/kireme`` for doctests, which imports every module. The framework adapters in
``kireme.integrations`` raise ImportError (naming the extra to install) when their framework is missing,
so each is left out of collection where its framework is not installed; their tests skip themselves.
"""

from __future__ import annotations

import importlib.util

_ADAPTERS = {
    "src/kireme/integrations/langchain.py": "langchain_text_splitters",
    "src/kireme/integrations/llama_index.py": "llama_index.core",
    "src/kireme/integrations/haystack.py": "haystack",
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package; a module blocked in sys.modules
        return False


collect_ignore = [path for path, module in _ADAPTERS.items() if not _installed(module)]
