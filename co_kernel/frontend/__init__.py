"""Frontends: agent events to Jupyter messages and widgets.

Which one a cell gets depends on who sent it (measured with ipykernel 7.4, JupyterLab 4.6,
nbclient 0.11, nbval 0.11, jupyter_console 6.6):

- metadata with ``cellId`` (JupyterLab) -> ``NotebookFrontend``: display updates;
- ``TERMINAL_METADATA`` and ``allow_stdin`` without ``cellId`` (jupyter console, with the
  config Co installs) -> ``ConsoleFrontend``: stdout;
- anything else (nbclient, nbval, papermill, a jupyter_client with its defaults) ->
  ``HeadlessFrontend``: final outputs only.

Approvals follow the same split: a widget card (``WidgetApprover``), a ``[y/n/a]`` stdin
input request (``StdinApprover``), or the ``approval_mode`` policy.
"""

from __future__ import annotations

from ._base import Approver, BaseFrontend, parse_answer, policy_approver
from ._console import ConsoleFrontend
from ._controls import hidden_characters, hidden_warning, mark_hidden, terminal_safe
from ._footer import footer_enabled, format_footer
from ._headless import HeadlessFrontend
from ._jupyter import JupyterKernel, JupyterShell
from ._markdown import Cut, MarkdownStream, find_block_boundary, find_split
from ._notebook import NotebookFrontend
from ._pending import PendingApprovals
from ._publisher import KernelPublisher, Publisher, RedactingPublisher, TerminalPublisher
from ._safe_html import markdown_to_html, safe_bundle, warm_markdown
from ._scrub import scrub_notebook
from ._stdin import KernelStdin, StdinApprover
from ._terminal import TERMINAL_METADATA, render_markdown, terminal_width
from ._toolcard import MIME_TOOL_CALL, tool_call_bundle
from ._trust import TRUST_TOOL, ask_trust_stdin, ask_trust_widget
from ._widgets import ApprovalCard, WidgetApprover

__all__ = [
    "MIME_TOOL_CALL",
    "TERMINAL_METADATA",
    "TRUST_TOOL",
    "ApprovalCard",
    "Approver",
    "BaseFrontend",
    "ConsoleFrontend",
    "Cut",
    "HeadlessFrontend",
    "JupyterKernel",
    "JupyterShell",
    "KernelPublisher",
    "KernelStdin",
    "MarkdownStream",
    "NotebookFrontend",
    "PendingApprovals",
    "Publisher",
    "RedactingPublisher",
    "StdinApprover",
    "TerminalPublisher",
    "WidgetApprover",
    "ask_trust_stdin",
    "ask_trust_widget",
    "find_block_boundary",
    "find_split",
    "footer_enabled",
    "format_footer",
    "hidden_characters",
    "hidden_warning",
    "mark_hidden",
    "markdown_to_html",
    "parse_answer",
    "policy_approver",
    "render_markdown",
    "safe_bundle",
    "scrub_notebook",
    "terminal_safe",
    "terminal_width",
    "tool_call_bundle",
    "warm_markdown",
]
