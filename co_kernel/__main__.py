"""Launch the kernel: ``python -P -m co_kernel -f {connection_file}``.

The kernel starts in the notebook's folder, whose files are the folder's, not the person's
choice of code: nothing Co or its libraries import may come from there. ``-P`` keeps the
folder off ``sys.path`` at start; this module keeps it off for the rest of the kernel's
life (``%%python`` reaches the person's own modules through ``notebook.FolderImports``).
"""

import gc
import logging
import os
import sys

# Start-up makes a few hundred thousand objects that live as long as the kernel (the
# kernel's imports now, pydantic-ai, the OpenAI client and the session in the warm-up) and
# next to no garbage; every full collection meanwhile scanned all of them again, three or
# four of 0.1-0.5 s before the first answer. The collector comes back, with all of that
# frozen out of its scans, once the warm-up has built the session (kernel/_kernel.py).
gc.disable()

from ipykernel.kernelapp import IPKernelApp  # noqa: E402 - after the collector is off

from .kernel import CoKernel  # noqa: E402

log = logging.getLogger("co_kernel")


def _entries_of_the_folder(pythonpath: str, cwd: str) -> set[str]:
    """The ``sys.path`` entries that ``PYTHONPATH``'s empty and relative parts became.

    Python resolves them against the working directory at start, so they name the folder
    the kernel happens to start in, a different one for each notebook: never a place the
    person chose. Absolute parts are the person's own and stay.
    """
    return {
        os.path.normpath(os.path.join(cwd, part))
        for part in pythonpath.split(os.pathsep)
        if not os.path.isabs(part)
    }


def _safe_sys_path() -> None:
    cwd = os.getcwd()
    if (
        not sys.flags.safe_path
        and sys.path
        and os.path.realpath(sys.path[0]) == os.path.realpath(cwd)
    ):
        # A kernelspec written before Co started with -P: `-m` put the folder first. This
        # import of Co already came from wherever that found it, but nothing later does.
        sys.path.pop(0)
        log.warning(
            "The Co kernelspec starts Python without -P; run `co-kernel install` again so "
            "that nothing in a notebook's folder can run when the kernel starts."
        )
    loose = _entries_of_the_folder(os.environ.get("PYTHONPATH", ""), cwd)
    sys.path[:] = [p for p in sys.path if p and os.path.normpath(p) not in loose]


if __name__ == "__main__":
    _safe_sys_path()
    # ignore_cwd: IPython's shell would put '' (the folder) back on sys.path, ahead of
    # site-packages, for every import after start (IPython 9.7+ skips it under -P anyway).
    IPKernelApp.launch_instance(kernel_class=CoKernel, ignore_cwd=True)
