"""Where Co runs shell commands: a locked-down Docker container per session, or the host if asked.

`create_sandbox` picks the backend; both follow `SandboxProtocol`.
"""

from ..exceptions import SandboxUnavailable
from ._docker import DockerSandbox
from ._factory import create_sandbox
from ._mounts import WORKDIR as WORKSPACE_MOUNT
from ._protocol import CommandResult, OutputCallback, SandboxProtocol, StatusCallback
from ._subprocess import SubprocessSandbox

__all__ = [
    "WORKSPACE_MOUNT",
    "CommandResult",
    "DockerSandbox",
    "OutputCallback",
    "SandboxProtocol",
    "SandboxUnavailable",
    "StatusCallback",
    "SubprocessSandbox",
    "create_sandbox",
]
