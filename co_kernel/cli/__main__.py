"""``python -m co_kernel.cli`` is the ``co-kernel`` command."""

from ._app import main

if __name__ == "__main__":
    raise SystemExit(main())
