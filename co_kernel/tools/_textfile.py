"""Reading and writing text files for tools: size cap, binary refusal, atomic writes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["TextFileError", "read_text", "write_text"]

_SNIFF = 8192


class TextFileError(Exception):
    """A file a tool will not read or write as text; the message says why."""


def read_text(path: Path, max_bytes: int, *, shown: str | None = None) -> str:
    """The file's text; refuses folders, binary files and files over ``max_bytes``."""
    name = shown or str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise FileNotFoundError(name) from None
    if path.is_dir():
        raise IsADirectoryError(name)
    if size > max_bytes:
        raise TextFileError(
            f"'{name}' is {size:,} bytes; files over {max_bytes:,} bytes are not read "
            "(setting `file_max_bytes`)"
        )
    data = path.read_bytes()
    if b"\x00" in data[:_SNIFF]:
        raise TextFileError(f"'{name}' is a binary file; only text files are read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TextFileError(f"'{name}' is not UTF-8 text; only text files are read") from None


def write_text(path: Path, text: str) -> None:
    """Replace the file's content atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".co-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
