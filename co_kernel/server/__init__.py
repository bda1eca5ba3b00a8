"""The jupyter_server extension behind the JupyterLab activity panel.

Enabled by ``jupyter-config/jupyter_server_config.d/co_kernel.json`` (installed into
``etc/jupyter`` with the package). It serves the audit log of agent actions read-only,
on the local server, to authenticated clients only: ``GET {base_url}co-kernel/activity``.
"""

from __future__ import annotations

from typing import Any

from ._activity import ActivityQuery, parse_query, read_activity

__all__ = ["ActivityQuery", "parse_query", "read_activity"]

API_NAMESPACE = "co-kernel"


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "co_kernel.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from ._handlers import setup_handlers

    setup_handlers(serverapp.web_app, API_NAMESPACE)
    serverapp.log.info("Co: agent activity API at %s/activity", API_NAMESPACE)
