"""Helpers the tests share, one module per concern.

- ``scripted``: steps for the scripted model server (a tool call, a shell command, a step
  that calls one tool) and what the model was sent (tool results, tools offered);
- ``cells``: what a cell showed (its tool-call cards);
- ``deps``: the tools' context (``CoDeps``) for a workspace, without a kernel;
- ``net``: a free TCP port on 127.0.0.1;
- ``containers``: a throw-away container on the sandbox test image;
- ``git``: real repositories; ``notebooks``: notebook files; ``files``: JSON files (settings)
  written before a kernel reads them; ``lab_cells``: a cell's prompt in the browser;
- ``histories``: synthetic conversations; ``vault``: generated Obsidian vaults (also used
  by the benchmarks);
- ``kernel_harness``: a real Co kernel over ZMQ (``CoKernel``, what a cell showed, widget
  clicks); ``kernel_forkserver``: the process test kernels fork from, and ``fork_run`` the
  launcher of the tests' MCP servers through it; ``lab_server``: a real Jupyter server;
- ``turn_support``: a ``ChatSession`` on the scripted model, without a kernel;
  ``sqlite_support``: the shape of a SQLite store, for migration tests.

A helper that one test file alone needs stays in that file.
"""
