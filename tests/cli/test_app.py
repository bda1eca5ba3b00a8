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
        [sys.executable, "-m", "co_kernel.cli", *args],
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
    assert spec["argv"][1:] == ["-P", "-m", "co_kernel", "-f", "{connection_file}"]
    assert spec["interrupt_mode"] == "signal"
    for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        assert (spec_dir / logo).stat().st_size > 100
    assert (spec_dir / "logo-64x64.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_status_reports_settings_model_and_sandbox(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".co").mkdir(parents=True)
    (project / ".co" / "settings.json").write_text(json.dumps({"model": "ollama:llama3.2"}))
    # `sandbox: subprocess` is the person's to choose, never a project file's.
    user = tmp_path / "home" / "config"
    user.mkdir(parents=True)
    # The person trusts the project (its model applies only then).
    mine = {"sandbox": "subprocess", "trusted_folders": [str(project)]}
    (user / "settings.json").write_text(json.dumps(mine))
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
    assert "folder trust" in out and "trusted (setting trusted_folders)" in out


def test_status_names_bad_settings(tmp_path: Path) -> None:
    done = _run("status", env={"CO_HOME": str(tmp_path), "CO_SANDBOX": "vm"})
    assert done.returncode == 0
    assert "CO_SANDBOX" in done.stdout and "using the default" in done.stdout


def test_unknown_command_is_a_usage_error() -> None:
    done = _run("frobnicate")
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_status_shows_the_managed_file_and_which_layer_set_each_value(tmp_path: Path) -> None:
    managed = tmp_path / "etc-co" / "settings.json"
    managed.parent.mkdir()
    managed.write_text(json.dumps({"model": "ollama:class-model", "allow_yolo": False}))
    user = tmp_path / "home" / "config" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"model": "ollama:mine", "personality": "terse"}))
    done = _run(
        "status",
        "--project",
        str(tmp_path),
        env={
            "CO_HOME": str(tmp_path / "home"),
            "CO_MANAGED_SETTINGS": str(managed),
            "CO_SANDBOX": "subprocess",
            "OLLAMA_HOST": "http://127.0.0.1:9",
        },
    )
    assert done.returncode == 0, done.stderr
    lines = [line.split("  ", 1) for line in done.stdout.splitlines() if "  " in line]
    rows = {item.strip(): value.strip() for item, value in lines}
    assert rows["settings.managed file"] == f"{managed} (its settings are locked)"
    assert rows["settings.model"] == f"set by managed ({managed})"
    assert rows["settings.allow_yolo"] == f"set by managed ({managed})"
    assert rows["settings.personality"] == f"set by user ({user})"
    assert rows["settings.sandbox"] == "set by environment (CO_SANDBOX)"
    assert "ollama:class-model" in rows["model.model"]
    assert f"{user}: model: set by your administrator in {managed}; your value ignored" in (
        done.stdout
    )


def test_trust_from_the_command_line(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / ".co").mkdir(parents=True)
    (project / ".co" / "instructions.md").write_text("Obey the repository.")
    env = {"CO_HOME": str(tmp_path / "home")}
    shown = _run("trust", "--show", str(project), env=env)
    assert shown.returncode == 0 and "`.co/instructions.md`" in shown.stdout
    asked = _run("trust", str(project), env=env)  # no terminal: nothing trusted
    assert asked.returncode == 1 and "--yes" in asked.stderr
    assert "not trusted" in _run("status", "--project", str(project), env=env).stdout
    done = _run("trust", "--yes", str(project), env=env)
    assert done.returncode == 0 and "trusted as its files are now" in done.stdout
    assert "trusted (your decision of" in _run("status", "--project", str(project), env=env).stdout
    revoked = _run("trust", "--revoke", str(project), env=env)
    assert revoked.returncode == 0 and "no longer trusted" in revoked.stdout
    missing = _run("trust", str(tmp_path / "nowhere"), env=env)
    assert missing.returncode == 2 and "is not a folder" in missing.stderr
