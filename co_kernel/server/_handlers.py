"""Tornado handlers of the Co server extension (authenticated like every Jupyter API)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ._activity import parse_query, read_activity

__all__ = ["ActivityHandler", "setup_handlers"]


class ActivityHandler(APIHandler):
    """``GET co-kernel/activity?session=&tool=&decision=&since=&limit=``: audit rows."""

    @tornado.web.authenticated
    def get(self) -> None:
        from ..telemetry import telemetry_db_path

        # Not filters: the token, and the bare timestamp JupyterLab's ServerConnection
        # appends to every GET to defeat caches.
        args = {
            name: self.get_query_argument(name)
            for name in self.request.query_arguments
            if name != "token" and not name.isdigit()
        }
        self.set_header("Content-Type", "application/json")
        try:
            query = parse_query(args)
        except ValueError as exc:
            # Written directly: the message quotes the bad value, which may hold a `%`.
            self.set_status(400)
            self.finish(json.dumps({"message": f"Bad activity filter: {exc}"}))
            return
        root = self.settings.get("server_root_dir")
        self.finish(
            json.dumps(read_activity(telemetry_db_path(), query, Path(root) if root else None))
        )


def setup_handlers(web_app: Any, namespace: str) -> None:
    base_url = web_app.settings["base_url"]
    route = url_path_join(base_url, namespace, "activity")
    web_app.add_handlers(".*$", [(route, ActivityHandler)])
