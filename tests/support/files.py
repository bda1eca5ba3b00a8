"""Files a test writes before the kernel or the settings loader reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["write_json"]


def write_json(path: Path, data: dict[str, Any]) -> Path:
    """``data`` as JSON at ``path`` (a settings file, say), its folders made; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path
