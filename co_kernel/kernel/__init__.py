"""The Jupyter kernel: the wire protocol, the cell dispatcher, the workspace trust gate and
``!`` cells.

``CoKernel`` (``_kernel``) is ipykernel's glue and hands each cell to ``CellDispatcher``
(``_dispatch``), which routes it to a magic, the sandbox (``_sandbox_cell``) or a turn of the
agent, after the trust gate (``_trust_gate``) has asked about the folder's own code.
"""

from ._kernel import CoKernel

__all__ = ["CoKernel"]
