"""Re-render the Markdown an older Co saved in a notebook as safe HTML.

An older Co published answers, notices and magic outputs as ``text/markdown``; a notebook
it saved carries them, and a viewer that trusts it (nbconvert's HTML export, a notebook
host, JupyterLab without Co's extension) renders any HTML in them unsanitised.
``co-kernel scrub`` rewrites each such output as Co publishes it today: sanitised HTML with
the Markdown as text. Only outputs that carry Co's metadata tag are touched.

The HTML a Co before click-to-load images saved has live remote images: a viewer fetches
them, and whatever their URLs carry, each time the notebook opens. Each becomes the
placeholder Co writes today (``_remote_images.py``), the ``image_hosts`` ones too: a scrub
decides for every viewer, whose reader chose no hosts.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, cast

from ..exceptions import ScrubError
from ._publisher import OUTPUT_TAG
from ._remote_images import rewrite_images
from ._safe_html import safe_bundle

__all__ = ["scrub_notebook"]


def _source(value: Any) -> Any:
    # nbformat stores multi-line strings as lists of lines.
    return "".join(cast(list[str], value)) if isinstance(value, list) else value


def _scrub_output(output: dict[str, Any]) -> bool:
    found: object = output.get("data")
    meta: dict[str, Any] = output.get("metadata") or {}
    tag: object = meta.get(OUTPUT_TAG)
    if not isinstance(found, dict) or not isinstance(tag, dict):
        return False
    data = cast(dict[str, Any], found)
    if "text/markdown" not in data:
        saved = _source(data.get("text/html"))
        if not isinstance(saved, str):
            return False
        rewritten = rewrite_images(saved)
        if rewritten == saved:
            return False
        data["text/html"] = rewritten
        return True
    source = _source(data["text/markdown"])
    plain = data.get("text/plain")
    # Older answers had no text/plain: the source becomes it, as in the answers Co saves.
    bundle = {
        **data,
        "text/markdown": source,
        "text/plain": source if plain is None else _source(plain),
    }
    output["data"] = safe_bundle(bundle)
    return True


def scrub_notebook(path: Path) -> int:
    """Rewrite ``path`` in place; returns how many outputs changed (0: file untouched)."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScrubError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ScrubError(f"{path}: not a notebook Co can read ({exc})") from None
    if not isinstance(notebook, dict) or not isinstance(
        cast(dict[str, Any], notebook).get("cells"), list
    ):
        raise ScrubError(f"{path}: not a notebook (no list of cells)")
    cells = cast(list[Any], notebook["cells"])
    changed = sum(
        _scrub_output(cast(dict[str, Any], output))
        for cell in cells
        if isinstance(cell, dict)
        for output in cast(list[Any], cast(dict[str, Any], cell).get("outputs") or [])
        if isinstance(output, dict)
    )
    if changed:
        # nbformat's own layout; written beside and renamed, so a failure loses nothing.
        text = json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise ScrubError(f"{path}: could not be written ({exc})") from None
    return changed
