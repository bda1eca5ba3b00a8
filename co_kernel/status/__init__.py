"""Co's status: the report behind ``%status`` and ``co-kernel status`` (``_report``) and the
JSON the JupyterLab status item reads from every reply (``_lab``)."""

from ._lab import LAB_STATUS_KEY, lab_status
from ._report import (
    ProviderProbe,
    StatusReport,
    brief_status,
    collect_status,
    format_status,
    probe_provider,
)

__all__ = [
    "LAB_STATUS_KEY",
    "ProviderProbe",
    "StatusReport",
    "brief_status",
    "collect_status",
    "format_status",
    "lab_status",
    "probe_provider",
]
