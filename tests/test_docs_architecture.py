"""docs/architecture.md names files that exist and every top-level package of co_kernel.

The document draws the packages and walks a cell through the files that handle it; a file
renamed or a package added must fail here rather than leave the drawing out of date.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "co_kernel"
DOC = REPO / "docs" / "architecture.md"
# A path as the document writes one: `kernel/_dispatch.py`, `tools/`, `tests/test_layers.py`.
PATH = re.compile(
    r"(?<![\w./-])((?:[A-Za-z_][\w-]*/)+(?:[\w-]+\.[a-z]+)?|[A-Za-z_]\w*\.py)(?![\w/])"
)
# A dotted module: co_kernel.kernel, co_kernel.frontend.TERMINAL_METADATA is not one.
MODULE = re.compile(r"\bco_kernel(?:\.[a-z_]\w*)+")


def named_paths(text: str) -> set[str]:
    return set(PATH.findall(text))


def resolves(path: str) -> bool:
    """Inside co_kernel/ unless it starts with a top-level folder of the repository."""
    base = REPO if (REPO / path.split("/", 1)[0]).is_dir() else PACKAGE
    return (base / path).exists()


def test_every_path_the_document_names_exists() -> None:
    text = DOC.read_text()
    paths = named_paths(text)
    # The pattern reads prose and the drawing alike: a few the document must name.
    assert {"kernel/_kernel.py", "frontend/_publisher.py", "tools/", "session_state.py"} <= paths
    assert "tests/test_layers.py" in paths and not resolves("kernel/_no_such.py")
    missing = sorted(p for p in paths if not resolves(p))
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_dotted_module_the_document_names_exists() -> None:
    modules = MODULE.findall(DOC.read_text())
    assert "co_kernel.kernel" in modules
    for module in modules:
        parts = module.split(".")[1:]
        target = PACKAGE.joinpath(*parts)
        assert target.with_suffix(".py").is_file() or (target / "__init__.py").is_file(), module


def test_every_top_level_package_and_module_is_named() -> None:
    paths = named_paths(DOC.read_text())
    packages = {f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    assert {"kernel/", "replay/", "session_state.py"} <= packages | modules
    unnamed = sorted((packages | modules) - paths)
    assert not unnamed, f"docs/architecture.md does not name: {unnamed}"
