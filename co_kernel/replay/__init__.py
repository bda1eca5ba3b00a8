"""A scripted OpenAI-compatible model server, for tests and for replaying conversations.

`ScriptedModelServer` answers `POST /v1/chat/completions` on 127.0.0.1 from a `Script` of
`Step`s, streamed or not, with tool calls, pacing and injected faults. Tests point the kernel
at its `base_url`; the model string `replay:path/to/script.jsonl` makes the kernel start one
itself. The script format is documented in `co_kernel.replay._script`. A `Recorder` writes a
session's model exchanges as such a script (`%record`, setting `record_path`).
`record_notebook` turns a notebook into a regression test that replays such a script.
"""

from ._script import Script, ScriptSource, Step
from ._script_recorder import Recorder, replayed_script, step_from_exchange
from ._server import ScriptedModelServer

__all__ = (
    "Recorder",
    "Script",
    "ScriptSource",
    "ScriptedModelServer",
    "Step",
    "replayed_script",
    "step_from_exchange",
)
