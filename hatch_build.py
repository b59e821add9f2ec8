"""Build kireme's optional C extension, `kireme._speedups` (the sentence scanner's inner loop), with the wheel.

The extension only makes kireme faster: every function it speeds up has a pure-Python twin that gives the
same answers (tests/test_speedups.py), so a machine without a C compiler or Python's headers still
installs kireme — the build warns and goes on without it. ``KIREME_NO_EXTENSIONS=1`` skips it on purpose.

An editable install (``pip install -e .``, what ``make`` runs) puts the compiled file next to its source in
``src/kireme`` (git ignores it); a wheel carries it as ``kireme/_speedups.<abi>.so`` and is tagged for the
interpreter and platform it was built on.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("src/kireme/_speedups.c")
MODULE = "kireme._speedups"


def compile_extension(root: Path, build_dir: Path) -> Path:
    """Compile the extension with the compiler and flags this Python was built with (setuptools'
    ``build_ext``); returns the path of the built file."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    extension = Extension(MODULE, [str(root / SOURCE)], extra_compile_args=["-O2"] if os.name != "nt" else [])
    command = build_ext(Distribution({"name": "kireme", "ext_modules": [extension]}))
    command.build_lib = str(build_dir / "lib")
    command.build_temp = str(build_dir / "temp")
    command.ensure_finalized()
    command.run()
    return Path(command.get_ext_fullpath(MODULE))


def forget_editable_builds(root: Path) -> None:
    """Remove an earlier editable install's compiled extension from ``src/kireme``."""
    for built in (root / "src" / "kireme").glob("_speedups*.so"):
        built.unlink(missing_ok=True)
    for built in (root / "src" / "kireme").glob("_speedups*.pyd"):
        built.unlink(missing_ok=True)


class SpeedupsBuildHook(BuildHookInterface):
    """Compiles `kireme._speedups` into the wheel (or next to its source, for an editable install)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        if os.environ.get("KIREME_NO_EXTENSIONS", "") not in ("", "0"):
            self.app.display_info("kireme: KIREME_NO_EXTENSIONS is set: the C speed-up is not built")
            if version == "editable":
                forget_editable_builds(root)
            return
        build_dir = Path(tempfile.mkdtemp(prefix="kireme-speedups-"))
        try:
            built = compile_extension(root, build_dir)
            if version == "editable":  # a new file, renamed into place: a running kireme keeps the old one
                target = root / "src" / "kireme" / built.name
                partial = target.with_name(target.name + ".partial")
                shutil.copyfile(built, partial)
                os.replace(partial, target)
            else:
                kept = root / "build" / "speedups" / built.name
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(built, kept)
                build_data["force_include"][str(kept)] = f"kireme/{built.name}"
                build_data["pure_python"] = False
                build_data["infer_tag"] = True
        except Exception as error:  # no compiler, no Python headers: kireme works without the extension
            if version == "editable":
                forget_editable_builds(root)  # an older build of an older source must not stay in use
            self.app.display_warning(
                f"kireme: the optional C speed-up was not built ({type(error).__name__}: {error}); "
                "kireme works the same, in pure Python"
            )
        finally:
            shutil.rmtree(build_dir, ignore_errors=True)
