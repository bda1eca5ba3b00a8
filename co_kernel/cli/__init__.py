"""The command line: ``co-kernel`` (``_app``) and the papermill engine (``papermill``).

``papermill`` is imported by papermill itself (its ``papermill.engine`` entry point), never
here: the ``co-kernel`` command should not pay for importing papermill.
"""

from ._app import KERNEL_NAME, install_kernelspec, kernelspec_dict, main

__all__ = ["KERNEL_NAME", "install_kernelspec", "kernelspec_dict", "main"]
