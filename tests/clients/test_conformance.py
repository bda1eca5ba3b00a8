"""Jupyter's kernel conformance suite (`jupyter_kernel_test`) against the `co` kernel."""

from __future__ import annotations

import os
import tempfile
import unittest
from pathlib import Path

import jupyter_kernel_test

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import ensure_kernelspec

REPO = Path(__file__).resolve().parents[2]


class CoKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "co"
    language_name = "co"
    file_extension = ".md"

    # `%%python` cells, `!` cells and magics answer by themselves; a prompt's answer comes
    # from the scripted model.
    code_hello_world = '%%python\nprint("hello, world")'
    code_stderr = "%%python\nimport sys; print('oops', file=sys.stderr)"
    code_generate_error = "%nosuchmagic"
    code_execute_result = [{"code": "%%python\n6*7", "result": "42"}]
    code_display_data = [
        {"code": "%%python\nfrom IPython.display import HTML, display\ndisplay(HTML('<b>x</b>'))", "mime": "text/html"},
        # The suite's client keeps jupyter_client's allow_stdin=True and sends no cellId:
        # the answer is Markdown display_data all the same, not a console's stdout.
        {"code": "What is the capital of France?", "mime": "text/html"},
    ]  # fmt: skip
    completion_samples = [{"text": "%hel", "matches": {"%help"}}]
    complete_code_samples = ["What is 6*7?", "%help", "!ls"]
    incomplete_code_samples: list[str] = []
    invalid_code_samples: list[str] = []
    code_inspect_sample = "%model"
    # code_page_something stays empty, so test_pager is skipped: Co sends no pager payloads,
    # `%help` and inspection answer in the cell or the inspect reply.
    supported_history_operations = ("tail", "range", "search")
    # A glob over the whole cell as typed, as IPython's history search takes it.
    code_history_pattern = "%%python*6*7"
    code_clear_output = "%%python\nfrom IPython.display import clear_output; clear_output()"

    @classmethod
    def setUpClass(cls) -> None:
        ensure_kernelspec()
        cls._home = tempfile.mkdtemp(prefix="co-home-conformance-")
        cls._model = ScriptedModelServer([{"text": "Paris is the capital of **France**."}])
        cls._model.start()
        saved = dict(os.environ)
        os.environ.update(
            CO_HOME=cls._home,
            CO_SANDBOX="subprocess",
            CO_MODEL="compat:scripted",
            CO_BASE_URL=cls._model.base_url,
            PYTHONPATH=os.pathsep.join(p for p in (str(REPO), saved.get("PYTHONPATH")) if p),
        )
        try:
            super().setUpClass()
        except BaseException:
            cls._model.stop()
            raise
        finally:
            os.environ.clear()
            os.environ.update(saved)

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls._model.stop()


if __name__ == "__main__":
    unittest.main()
