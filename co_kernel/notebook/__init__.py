"""The notebook's own Python: `%%python` cells, references in prompts, recent cells.

Co's kernel is an IPython kernel underneath, so the conversation and real Python share
one namespace; this package is the bridge the dispatcher and the Python tools use.
"""

from __future__ import annotations

from ._bridge import CellRecord, NotebookContext, PythonRun
from ._describe import Expanded, describe_object, expand_references
from ._document import (
    NotebookCell,
    NotebookDocument,
    PageLike,
    cell_kind,
    read_document,
    source_hash,
)
from ._images import (
    IMAGE_TYPES,
    MAX_BYTES,
    ModelImage,
    image_of_object,
    images_of_outputs,
    model_accepts_images,
    prepare_image,
)
from ._imports import FolderImports
from ._page import NOTEBOOK_TARGET, NotebookPage, PageError

__all__ = [
    "IMAGE_TYPES",
    "MAX_BYTES",
    "NOTEBOOK_TARGET",
    "CellRecord",
    "Expanded",
    "FolderImports",
    "ModelImage",
    "NotebookCell",
    "NotebookContext",
    "NotebookDocument",
    "NotebookPage",
    "PageError",
    "PageLike",
    "PythonRun",
    "cell_kind",
    "describe_object",
    "expand_references",
    "image_of_object",
    "images_of_outputs",
    "model_accepts_images",
    "prepare_image",
    "read_document",
    "source_hash",
]
