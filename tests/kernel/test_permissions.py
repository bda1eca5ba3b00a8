"""Permission rules through a real kernel: the decision on each card, the
effect (ran or not), what the model is told, project rules before and after acceptance,
and the magics. Headless runs deny whatever would ask, so "asks" shows as a policy
denial there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cells import tool_cards
from tests.support.kernel_harness import WidgetClicker
from tests.support.scripted import shell, tool_call


def user_settings(co_home: Path, data: dict[str, Any]) -> None:
    folder = co_home / "config"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(data))


RULES = {
    "allow": ["run_shell_command(touch allowed*)", "write_file(notes/**)"],
    "ask": ["list_files"],
    "deny": ["read_file(private/*)", "run_shell_command(touch denied*)"],
}
# (the call, its card's decision, whether it ran: the file it would make exists)
CASES: list[tuple[dict[str, Any], str, str | None]] = [
    (shell("touch allowed-1"), "allowed by rule `run_shell_command(touch allowed*)`", "allowed-1"),
    (shell("touch other-1"), "denied", None),
    (shell("touch allowed-2; touch chained-1"), "denied", None),
    (shell("touch denied-1"), "denied by rule `run_shell_command(touch denied*)`", None),
    (shell("ls"), "safe-prefix", ""),
    (tool_call("write_file", path="notes/a.md", content="x"), "allowed by rule", "notes/a.md"),
    (tool_call("write_file", path="elsewhere.md", content="x"), "denied", None),
    (tool_call("read_file", path="private/key.txt"), "denied by rule `read_file(private/*)`", ""),
    (tool_call("read_file", path="public.txt"), "", ""),
    (tool_call("list_files", glob="*"), "denied", ""),
]


def test_rules_decide_every_call_and_the_effect_follows(
    start_kernel, model_server, co_home: Path, workspace: Path
):
    user_settings(co_home, {"permissions": RULES})
    (workspace / "private").mkdir()
    (workspace / "private" / "key.txt").write_text("PRIVATE-CONTENT\n")
    (workspace / "public.txt").write_text("PUBLIC-CONTENT\n")
    kernel = start_kernel()
    model_server.extend([{"tool_calls": [c]} for c, _, _ in CASES] + [{"text": "done"}])

    result = kernel.execute("go", mode="headless", timeout=180)

    assert result.status == "ok", result.text()
    shown = tool_cards(result)
    assert len(shown) == len(CASES), shown
    for (c, decision, made), card in zip(CASES, shown, strict=True):
        assert str(card.get("decision") or "").startswith(decision), (c, card)
        if made:
            assert (workspace / made).exists(), c
    for name in ("other-1", "chained-1", "denied-1", "elsewhere.md"):
        assert not (workspace / name).exists(), name
    sent = "\n".join(str(m) for r in model_server.requests for m in r["messages"])
    assert "PRIVATE-CONTENT" not in sent and "PUBLIC-CONTENT" in sent
    assert "denied by rule `read_file(private/*)` (user settings)" in sent
    # A headless denial is the policy's, not the user's: nobody was asked.
    assert "denied by approval_mode=deny (no one was asked)" in sent
    assert "The user denied" not in sent


def test_project_allow_rules_wait_for_acceptance(
    start_kernel, model_server, workspace: Path, co_home: Path
):
    project = {
        "permissions": {"allow": ["run_shell_command(touch proj*)"]},
        "permissions_accept_project": True,  # a project cannot accept its own rules
    }
    (workspace / ".co").mkdir()
    (workspace / ".co" / "settings.json").write_text(json.dumps(project))
    kernel = start_kernel()

    model_server.extend([{"tool_calls": [shell("touch proj-1")]}, {"text": "ok"}])
    before = kernel.execute("go", mode="headless", timeout=120)
    assert not (workspace / "proj-1").exists()
    assert "allow rules that are not applied yet" in before.text()
    assert "run_shell_command(touch proj*)" in before.text()

    listed = kernel.execute("%permissions")
    assert "waiting: `%permissions accept`" in listed.text()
    accepted = kernel.execute("%permissions accept")
    assert "Accepted this project's allow rules" in accepted.text()

    model_server.extend([{"tool_calls": [shell("touch proj-2")]}, {"text": "ok"}])
    after = kernel.execute("go again", timeout=120)
    assert (workspace / "proj-2").exists(), after.text()
    assert "allowed by rule" in json.dumps(tool_cards(after))

    # Remembered for the project: a new kernel applies them, until the rules change.
    model_server.extend([{"tool_calls": [shell("touch proj-3")]}, {"text": "ok"}])
    start_kernel().execute("go", mode="headless", timeout=120)
    assert (workspace / "proj-3").exists()
    project["permissions"] = {"allow": ["run_shell_command(touch proj*)", "web_fetch"]}
    (workspace / ".co" / "settings.json").write_text(json.dumps(project))
    model_server.extend([{"tool_calls": [shell("touch proj-4")]}, {"text": "ok"}])
    start_kernel().execute("go", mode="headless", timeout=120)
    assert not (workspace / "proj-4").exists()


def test_headless_runs_take_project_rules_with_the_user_setting(
    start_kernel, model_server, workspace: Path
):
    (workspace / ".co").mkdir()
    (workspace / ".co" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["run_shell_command(touch proj*)"]}})
    )
    kernel = start_kernel({"CO_PERMISSIONS_ACCEPT_PROJECT": "true"})
    model_server.extend([{"tool_calls": [shell("touch proj-1")]}, {"text": "ok"}])
    result = kernel.execute("go", mode="headless", timeout=120)
    assert (workspace / "proj-1").exists(), result.text()


def test_magics_add_session_rules_and_save_them(
    start_kernel, model_server, workspace: Path, co_home: Path
):
    kernel = start_kernel()
    assert "holds for this session" in kernel.execute("%allow run_shell_command(touch ok*)").text()
    saved = kernel.execute("%deny web_fetch(*.example.com) --save")
    assert "saved in" in saved.text()
    bad = kernel.execute("%ask run shell")
    assert bad.status == "error" and "is not `tool` or `tool(pattern)`" in bad.text()

    listed = kernel.execute("%permissions").text()
    assert "run_shell_command(touch ok*)" in listed and "web_fetch(*.example.com)" in listed
    data = json.loads((co_home / "config" / "settings.json").read_text())
    assert data["permissions"] == {"deny": ["web_fetch(*.example.com)"]}

    model_server.extend([{"tool_calls": [shell("touch ok-1")]}, {"text": "ok"}])
    kernel.execute("go", mode="headless", timeout=120)
    assert (workspace / "ok-1").exists()


# -- "Always allow": the narrowest rule for the call, added for the session -----------------


def test_always_allow_in_the_notebook_adds_the_narrowest_rule(kernel, model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch made-1")]},
            {"tool_calls": [shell("touch made-2")]},  # matches the rule: no card
            {"tool_calls": [shell("rm made-1")]},  # does not: asks (and is denied)
            {"text": "done"},
        ]
    )
    clicker = WidgetClicker(["Always allow run_shell_command(touch*)", "Deny"])

    result = kernel.execute("make them", on_message=clicker, timeout=120)

    assert result.status == "ok", result.text()
    assert [label for label, _ in clicker.clicked] == [
        "Always allow run_shell_command(touch*)",
        "Deny",
    ]
    assert (workspace / "made-1").exists() and (workspace / "made-2").exists()
    decisions = [c.get("decision") for c in tool_cards(result)]
    assert decisions == ["always allowed", "allowed by rule `run_shell_command(touch*)` (session)",
                         "denied"]  # fmt: skip
    listed = kernel.execute("%permissions").text()
    assert "run_shell_command(touch*)" in listed and "session" in listed


def test_always_allow_in_the_console(kernel, model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch made-1")]},
            {"tool_calls": [shell("touch made-2")]},
            {"text": "done"},
        ]
    )
    answers = ["w"]
    result = kernel.execute(
        "make them", mode="console", on_input=lambda k, m: answers.pop(0) if answers else None
    )
    assert result.status == "ok", result.text()
    [request] = result.of_type("input_request")
    assert "[w] Always allow run_shell_command(touch*)" in request["content"]["prompt"]
    assert (workspace / "made-1").exists() and (workspace / "made-2").exists()
    assert "Always allowed" in result.stdout


# Rules read the parsed command: the 20 spellings a review tried against
# `deny run_shell_command(rm*)` (17 deleted the file when rules matched text). approval_mode=approve makes everything
# that would ask run, so only the rule stands between each spelling and the file.
RM_SPELLINGS = [
    "rm victim.txt",
    "/bin/rm victim.txt",
    "command rm victim.txt",
    "\\rm victim.txt",
    "'rm' victim.txt",
    "r''m victim.txt",
    "env rm victim.txt",
    "FOO=1 rm victim.txt",
    "sh -c 'rm victim.txt'",
    "echo victim.txt | xargs rm",
    "find . -name victim.txt -delete",
    "$(echo rm) victim.txt",
    "RM=rm; $RM victim.txt",
    "true && rm victim.txt",
    "nice -n 5 timeout 10 rm victim.txt",
    'bash -c "rm victim.txt"',
    "eval 'rm victim.txt'",
    "python3 -c 'import os; os.remove(\"victim.txt\")'",
    "echo $(rm victim.txt)",
    "find . -name victim.txt -exec rm {} +",
]


def test_a_deny_rule_stops_every_spelling_of_the_command(
    start_kernel, model_server, co_home: Path, workspace: Path
):
    user_settings(
        co_home,
        {"approval_mode": "approve", "permissions": {"deny": ["run_shell_command(rm*)"]}},
    )
    (workspace / "victim.txt").write_text("keep me\n")
    kernel = start_kernel()
    control = shell("touch control.txt")  # shows that a call no rule stops does run
    model_server.extend(
        [{"tool_calls": [shell(c)]} for c in RM_SPELLINGS]
        + [{"tool_calls": [control]}, {"text": "done"}]
    )

    result = kernel.execute("delete victim.txt", mode="headless", timeout=240)

    assert result.status == "ok", result.text()
    shown = tool_cards(result)
    assert len(shown) == len(RM_SPELLINGS) + 1, shown
    for command, card in zip(RM_SPELLINGS, shown, strict=False):
        decision = str(card.get("decision") or "")
        assert decision.startswith("denied by rule `run_shell_command(rm*)`"), (command, card)
    assert (workspace / "victim.txt").read_text() == "keep me\n"
    assert (workspace / "control.txt").exists(), shown[-1]


SYNONYM_SPELLINGS = [
    "unlink victim.txt",
    "/usr/bin/unlink victim.txt",
    "env LC_ALL=C unlink victim.txt",
    "true && unlink victim.txt",
    "shred -u victim.txt",
]


def test_a_deny_rule_on_rm_stops_unlink_and_the_other_deleting_programs(
    start_kernel, model_server, co_home: Path, workspace: Path
):
    """`unlink FILE` deletes as `rm FILE` does: the rule on rm stops it (docs/approvals.md
    lists the programs)."""
    user_settings(
        co_home,
        {"approval_mode": "approve", "permissions": {"deny": ["run_shell_command(rm*)"]}},
    )
    (workspace / "victim.txt").write_text("keep me\n")
    kernel = start_kernel()
    control = shell("touch control.txt")
    model_server.extend(
        [{"tool_calls": [shell(c)]} for c in SYNONYM_SPELLINGS]
        + [{"tool_calls": [control]}, {"text": "done"}]
    )

    result = kernel.execute("delete victim.txt", mode="headless", timeout=240)

    assert result.status == "ok", result.text()
    shown = tool_cards(result)
    assert len(shown) == len(SYNONYM_SPELLINGS) + 1, shown
    for command, card in zip(SYNONYM_SPELLINGS, shown, strict=False):
        decision = str(card.get("decision") or "")
        assert decision.startswith("denied by rule `run_shell_command(rm*)`"), (command, card)
    assert (workspace / "victim.txt").read_text() == "keep me\n"
    assert (workspace / "control.txt").exists(), shown[-1]
