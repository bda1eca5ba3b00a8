"""What every test run shares, `tests/` and the regression notebooks alike."""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId
from xdist.scheduler import LoadGroupScheduling


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the marks into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep together on one xdist worker what must not be split (``--dist loadgroup``).

    A notebook's cells share one kernel and run in order (``_Groups``); the tests of a module that share
    a module- or class-scoped fixture (a JupyterLab server, a set of kernels) would start
    it again on every worker they landed on. Everything else is spread test by test.
    """
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if item.path.suffix == ".ipynb":
            continue  # grouped by the scheduler below: nbval's cells take no group suffix
        fixtures = getattr(item, "_fixtureinfo", None)
        if fixtures is None:
            continue
        scopes = {d.scope for defs in fixtures.name2fixturedefs.values() for d in defs}
        if scopes & {"module", "class", "package"}:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if getattr(config.option, "loadgroup", False):  # an xdist worker of a `--dist loadgroup` run
        for item in items:
            _name_group(item)
    # The longest work first: a browser module or a notebook that starts last is the whole
    # run's tail while the other workers idle. Whole files move, in their own order (a
    # module-scoped fixture is set up once); stable, so every worker sees one order.
    long_files = {item.path for item in items if _is_long(item)}
    items.sort(key=lambda item: item.path not in long_files)


def _name_group(item: pytest.Item) -> None:
    """Suffix the node id with its group, ``path::test@group``, as the scheduler reads it.

    xdist 3.8 writes the suffix to ``item._nodeid``, which pytest 9.2 does not read
    (node ids became structured: pytest-dev/pytest-xdist#1386), so no test was grouped and a
    module's JupyterLab or hub was set up on every worker its tests reached. Written here
    to the structured id; a fixed xdist appending again leaves the last ``@group`` the same.
    """
    marks = list(item.iter_markers("xdist_group"))
    if not marks or "@" in item.nodeid.rpartition("]")[2]:
        return
    group = "_".join(
        sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks})
    )
    if hasattr(item, "_id"):
        item._id = NodeId.parse(f"{item.nodeid}@{group}")
    else:  # pytest before 9.2
        item._nodeid = f"{item.nodeid}@{group}"


def _is_long(item: pytest.Item) -> bool:
    return item.path.suffix == ".ipynb" or any(
        item.get_closest_marker(name) is not None for name in ("slow", "browser")
    )


class _Groups(LoadGroupScheduling):
    """xdist's ``loadgroup``, with every notebook's cells as one group."""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path.endswith(".ipynb"):
            return path
        return super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadGroupScheduling | None:
    if config.getvalue("dist") == "loadgroup":
        return _Groups(config, log)  # type: ignore[arg-type]
    return None
