"""Where Co keeps its files for one user: ``CO_HOME``, else the platform's folders."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CoPaths", "paths"]

APP_NAME = "co"


@dataclass(frozen=True)
class CoPaths:
    """Where Co keeps its files for one user."""

    config_dir: Path
    """Settings, knowledge files, skills, OAuth tokens."""
    data_dir: Path
    """Session store, telemetry, memory databases."""
    cache_dir: Path
    """Anything that can be rebuilt."""

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.json"

    @property
    def folders(self) -> tuple[Path, Path, Path]:
        """Every folder Co keeps files in for the user (all private: ``_private``)."""
        return (self.config_dir, self.data_dir, self.cache_dir)


def paths() -> CoPaths:
    """Resolve the user directories, honouring ``CO_HOME``."""
    home = os.environ.get("CO_HOME")
    if home:
        root = Path(home).expanduser()
        return CoPaths(root / "config", root / "data", root / "cache")
    import platformdirs

    return CoPaths(
        Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
        Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)),
    )
