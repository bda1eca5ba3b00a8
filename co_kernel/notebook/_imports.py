"""The person's own modules beside the notebook, for `%%python` only, once the folder is
trusted.

The kernel keeps the folder off ``sys.path`` (``python -P``, ``co_kernel.__main__``): a
``nh3.py`` or ``rich/`` planted there (by a clone, a download, a sandboxed ``!`` cell) must
never run in place of what Co imports. Yet people expect ``import mymod`` to find the
``mymod.py`` they keep beside their notebook. Putting the folder on ``sys.path`` while a
`%%python` cell runs would not do: ``sys.path`` is global, and Co imports lazily from other
threads (warm-up, MCP connections) at any moment, which would then see the folder too.

So the folder is reached by a finder instead, which answers only
- for a top-level name nothing else provides (it is last on ``sys.meta_path``: the standard
  library and installed packages always win, the folder never shadows them),
- when the import comes from the person's code: a frame whose globals are the notebook's
  namespace (a `%%python` cell, a function it defined, the approved ``run_python``), or a
  module loaded from the folder itself (``mymod`` importing its sibling),
- and only while the person trusts the folder (checked at each such import, so
  ``%trust revoke`` applies at once). Untrusted, the import fails with a message that
  says so instead of a bare "No module named".
Co's own code never runs with the notebook's globals, whatever the thread, so none of its
imports can reach the folder.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

__all__ = ["FolderImports"]

_MACHINERY = os.path.dirname(importlib.__file__) + os.sep
"""``importlib`` itself (``import_module``): frames that only carry the import along."""


def _carries_imports(frame: FrameType) -> bool:
    name = frame.f_code.co_filename
    return name.startswith("<frozen importlib") or name.startswith(_MACHINERY)


class FolderImports(MetaPathFinder):
    """A ``sys.meta_path`` finder for the person's modules in the notebook's folder."""

    def __init__(
        self,
        namespace: Callable[[], dict[str, Any]],
        folder: Callable[[], Path | None],
        trusted: Callable[[Path], bool],
    ) -> None:
        self._namespace = namespace
        """The notebook's namespace (the shell's ``user_ns``) as it is now."""
        self._folder = folder
        """The notebook's folder, None before the session knows it."""
        self._trusted = trusted
        """Whether the person trusts that folder now (``config.trusted_for_code``)."""
        self._served: set[str] = set()
        """Top-level names this finder loaded from the folder: their modules' imports are
        the person's too. Not "any file under the folder": Co itself (an editable install,
        a venv inside the project) may live there."""

    def install(self) -> None:
        """Put this finder last on ``sys.meta_path``, in place of an earlier kernel's."""
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, FolderImports)]
        sys.meta_path.append(self)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if path is not None:  # a submodule: its package's own __path__ finds it
            return None
        folder = self._folder()
        if folder is None or not self._asked_by_the_person():
            return None
        spec = PathFinder.find_spec(fullname, [str(folder)])
        if spec is None:
            return None
        if not self._trusted(folder):
            raise ModuleNotFoundError(
                f"`{fullname}` is in this notebook's folder ({folder}), which you have not "
                "trusted: Python here imports the folder's own modules only once you trust "
                "it. Run `%trust` (`%trust show` says what it covers), then import again.",
                name=fullname,
            )
        self._served.add(fullname)
        return spec

    def _asked_by_the_person(self) -> bool:
        """Whether the code that imports is the person's: the notebook's namespace, or a
        module that came from the folder."""
        frame = sys._getframe(2)  # past find_spec and the import machinery's caller
        while frame is not None and _carries_imports(frame):
            frame = frame.f_back
        if frame is None:
            return False
        scope = frame.f_globals
        if scope is self._namespace():
            return True
        name = scope.get("__name__")
        return isinstance(name, str) and name.partition(".")[0] in self._served
