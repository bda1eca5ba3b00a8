"""Helpers the tests share, one module per concern.

- ``scripted``: steps for the scripted model server (a tool call, a shell command, a step
  that calls one tool) and what the model was sent (tool results, tools offered);
- ``cells``: what a cell showed (its tool-call cards);
- ``deps``: the tools' context (``CoDeps``) for a workspace, without a kernel;
- ``net``: a free TCP port on 127.0.0.1;
- ``containers``: a throw-away container on the sandbox test image;
- ``git``: real repositories; ``notebooks``: notebook files;
- ``histories``: synthetic conversations; ``vault``: generated Obsidian vaults (also used
  by the benchmarks).

A helper that one test file alone needs stays in that file. The older top-level modules
(``kernel_harness``, ``turn_support``, ``sqlite_support``, ``lab_server``) belong here too;
they stay where they are until no open branch edits them, so that merges stay simple.
"""
