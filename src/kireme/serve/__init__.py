"""``kireme serve``: the model and the index kept open behind an HTTP API, and a page to see the cuts.

`create_app` builds the ASGI app (the ``serve`` extra: FastAPI, uvicorn, fastapi-offline for the docs
pages, python-multipart for uploads); `kireme.serve.service` is what it answers with, free of any
framework.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kireme.serve.app import ChatSettings

__all__ = ["ChatSettings", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:  # the app module imports FastAPI: only when asked for
        from kireme.serve import app

        return getattr(app, name)
    raise AttributeError(name)
