"""Ray for kireme: a clear error when the extra is missing, and one connection per process.

`connect` joins the cluster named by ``--ray-address`` or ``RAY_ADDRESS`` (``auto``: the cluster this
machine belongs to, ``ray://HOST:PORT``: a remote one through Ray Client), or starts a local Ray on this
machine's usable cores when neither is given. A process that already called ``ray.init`` keeps its own
connection (kireme inside a user's Ray program, or a test that started Ray once).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from kireme.errors import ConfigError, MissingExtraError

log = logging.getLogger(__name__)

ADDRESS_VARIABLE = "RAY_ADDRESS"


def _reachable(address: str) -> None:
    """A ``HOST:PORT`` nobody listens on fails in seconds (Ray itself retries it for minutes)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if address == "auto" or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {host}:{port} ({exc.strerror or exc})") from None


class _QuietProgressNotice(logging.Filter):
    """Drops Ray Data's notice that its progress bars are off (they are off because kireme draws its own)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Progress bars disabled")


def require_ray() -> ModuleType:
    """The ``ray`` module with Ray Data, or a `MissingExtraError` naming the extra to install."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise MissingExtraError("--engine ray (Ray Data)", "ray", "ray[data]") from None
    module: ModuleType = ray  # a ModuleType also where Ray's own types are not installed (Any)
    return module


def connect(address: str | None = None, *, progress_bars: bool = False) -> str:
    """Join (or start) a Ray cluster unless this process is connected already; returns where it runs.

    ``address``: ``auto``, ``ray://HOST:PORT`` or ``HOST:PORT``; ``None`` reads ``RAY_ADDRESS`` and else
    starts a local Ray (no dashboard). ``progress_bars``: Ray Data's own bars (kireme draws its own).
    """
    ray = require_ray()
    from ray.data import DataContext

    context = DataContext.get_current()
    context.enable_progress_bars = progress_bars
    context.print_on_execution_start = False
    if not progress_bars:  # kireme draws its own; Ray Data would say so, and time each run, on stderr
        data_log = logging.getLogger("ray.data")
        data_log.setLevel(max(data_log.getEffectiveLevel(), logging.WARNING))
        notices = logging.getLogger("ray.data._internal.progress")
        if not any(isinstance(f, _QuietProgressNotice) for f in notices.filters):
            notices.addFilter(_QuietProgressNotice())
    if ray.is_initialized():
        return "the Ray cluster this process is connected to"
    address = address or os.environ.get(ADDRESS_VARIABLE) or None
    options = {"logging_level": logging.WARNING, "log_to_driver": True, "configure_logging": False}
    try:
        if address is None:
            from kireme.parallel import usable_cores

            ray.init(num_cpus=usable_cores(), include_dashboard=False, **options)
            return "a local Ray on this machine"
        _reachable(address)
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(
            f"cannot connect to the Ray cluster at {address}: {exc} (start one with `ray start --head`, "
            f"then pass --ray-address auto or set {ADDRESS_VARIABLE})"
        ) from None
    return f"the Ray cluster at {address}"


def cluster_resources() -> dict[str, float]:
    """What the connected cluster has (``CPU``, ``GPU``, memory...)."""
    return dict(require_ray().cluster_resources())


def cluster_cpus() -> int:
    """The connected cluster's CPUs (one at least)."""
    return max(1, int(cluster_resources().get("CPU", 1)))


@contextmanager
def in_input_order() -> Iterator[None]:
    """Ray Data returns rows in the order of its input meanwhile (the driver writes and reports in order)."""
    from ray.data import DataContext

    context = DataContext.get_current()
    keep = context.execution_options.preserve_order
    context.execution_options.preserve_order = True
    try:
        yield
    finally:
        context.execution_options.preserve_order = keep


def actor_pool(actors: int) -> Any:
    """An actor pool of up to ``actors`` (one at least; more start while there is work for them)."""
    from ray.data import ActorPoolStrategy

    return ActorPoolStrategy(min_size=1, max_size=max(1, actors))


def task_pool(tasks: int | None) -> Any:
    """Ray tasks, at most ``tasks`` at a time (``None``: as many as the cluster has room for)."""
    from ray.data import TaskPoolStrategy

    return TaskPoolStrategy(size=tasks) if tasks else None
