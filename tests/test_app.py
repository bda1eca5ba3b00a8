"""The co-kernel command line: kernelspec install and status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "co_kernel.app", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
    )


def test_install_writes_kernelspec_with_logo(tmp_path: Path) -> None:
    done = _run("install", "--prefix", str(tmp_path))
    assert done.returncode == 0, done.stderr
    spec_dir = tmp_path / "share" / "jupyter" / "kernels" / "co"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["display_name"] == "Co"
    assert spec["argv"][1:] == ["-m", "co_kernel", "-f", "{connection_file}"]
    assert spec["interrupt_mode"] == "signal"
    for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        assert (spec_dir / logo).stat().st_size > 100
    assert (spec_dir / "logo-64x64.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_status_reports_settings_model_and_sandbox(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".co").mkdir(parents=True)
    (project / ".co" / "settings.json").write_text(json.dumps({"model": "ollama:llama3.2"}))
    # `sandbox: subprocess` is the person's to choose, never a project file's (issue 35).
    user = tmp_path / "home" / "config"
    user.mkdir(parents=True)
    (user / "settings.json").write_text(json.dumps({"sandbox": "subprocess"}))
    done = _run(
        "status",
        "--project",
        str(project),
        env={"CO_HOME": str(tmp_path / "home"), "OLLAMA_HOST": "http://127.0.0.1:9"},
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert str(project / ".co" / "settings.json") in out
    assert "ollama:llama3.2" in out and "unreachable" in out
    assert "sandbox.backend" in out and "subprocess" in out and "commands run on the host" in out


def test_status_names_bad_settings(tmp_path: Path) -> None:
    done = _run("status", env={"CO_HOME": str(tmp_path), "CO_SANDBOX": "vm"})
    assert done.returncode == 0
    assert "CO_SANDBOX" in done.stdout and "using the default" in done.stdout


def test_unknown_command_is_a_usage_error() -> None:
    done = _run("frobnicate")
    assert done.returncode == 2 and "invalid choice" in done.stderr
