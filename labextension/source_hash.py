"""The hash of what the prebuilt extension is built from, recorded beside the build.

``build.sh`` writes it to ``labextension/sources.sha256`` after a build;
``tests/labextension/test_build.py`` recomputes it and fails when the TypeScript, styles,
schema or dependency ranges changed without a rebuild. Standard library only.

The stamp sits beside the sources, not in ``co_kernel/labextension/``: jupyter-builder
empties its output folder on every build, also the one hatch runs for ``pip install -e .``,
which would delete a committed stamp there.

Usage: python source_hash.py [--write]
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STAMP = HERE / "sources.sha256"
# Not package-lock.json: npm rewrites it per registry (platform-only optional packages)
# without changing what is bundled; the JupyterLab packages are shared, not bundled.
INPUTS = ("package.json", "tsconfig.json", "webpack.config.js", "src", "style", "schema")


def source_files(root: Path = HERE) -> list[Path]:
    """The files the build reads, in a stable order."""
    files: list[Path] = []
    for name in INPUTS:
        path = root / name
        files.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
    return files


def source_hash(root: Path = HERE) -> str:
    digest = hashlib.sha256()
    for path in source_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        # Line endings normalised so a checkout with autocrlf hashes the same.
        digest.update(path.read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return digest.hexdigest()


if __name__ == "__main__":
    value = source_hash()
    if "--write" in sys.argv[1:]:
        STAMP.write_text(value + "\n")
    print(value)
