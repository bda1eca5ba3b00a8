"""Auto-approval reads options: only options known to be read-only pass.

A table of commands beaten by options (GNU long-option abbreviations included), and a
property test that runs what the classifier approves in a throwaway container and
checks that nothing in the scratch directory or the clock changed.
"""

from __future__ import annotations

import base64
import shlex
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from co_kernel.config import Settings
from co_kernel.permissions import is_safe_command
from co_kernel.permissions._shell_options import COMMANDS

SAFE = Settings().shell_safe_commands


@pytest.mark.parametrize(
    "command",
    [
        "date --s='2001-01-01'",
        "date --s=2001-01-01",
        "date --se 2001-01-01",
        "date --set 2001-01-01",
        "date --set=2001-01-01",
        "date -s2001-01-01",
        "date -us 2001-01-01",
        "date -Rs 2001-01-01",
        "date --date=now --se 2001-01-01",
        "date --u --se=2001-01-01",
        "date --u",  # ambiguous in GNU (--uct, --universal, --utc)
        "date 010100002001",  # an operand that is not +FORMAT sets the clock
        "ls --al",
        "ls --unknown-option",
        "ls -l --zzz",
        "cat -q notes.txt",
        "head --foo 3 x",
        "find . -fprint0 out",
        "find . -fprintf out %p",
        "find . -fls out",
        "find . -newerXY x",
        "git log --ext-diff",
        "git diff --outp=patch",
        "git diff --output-indicator-new=x --outp=x",
        "git status --porcelain --no-optional-locks -z --ignore-submodules=all x --foo",
        "python3 --version -c 'import os'",
        "git branch --list --delete x",
        "uname -s --set",
    ],
)
def test_options_that_write_or_are_unknown_ask(command: str) -> None:
    assert not is_safe_command(command, SAFE)


@pytest.mark.parametrize(
    "command",
    [
        "date",
        "date +%Y",
        "date --utc",
        "date --ut",
        "date --iso-8601=seconds",
        "date --da=tomorrow",
        "date -d tomorrow -u",
        "ls -la --color=never --sort=size",
        "ls --alm",  # --almost-all; --al alone is ambiguous (--all, --almost-all)
        "grep -rn --include='*.py' TODO .",
        "grep -e -x -- -y file",
        "head -n 5 data.csv",
        "head -5 data.csv",
        "tail -n +3 log.txt",
        "cat -- -weird-name",
        "find . -name '*.py' -type f -print",
        "find . \\( -name a -o -name b \\) -printf %p",  # unquoted ( is a shell syntax error
        "git log --oneline -5",
        "git diff HEAD~1 -- file",
        "git branch -a",
        "python3 --version",
        "du -sh .",
        "echo -n hello",
    ],
)
def test_read_only_options_pass(command: str) -> None:
    assert is_safe_command(command, SAFE), command


def test_custom_prefixes_take_arguments_but_no_options() -> None:
    assert is_safe_command("make test", ["make test"])
    assert is_safe_command("make test unit", ["make test"])
    assert not is_safe_command("make test -f evil.mk", ["make test"])
    assert not is_safe_command("make test --eval=x", ["make test"])


# -- property: what is approved changes nothing when it runs -----------------------

FILES = ("a.txt", "b.log", "sub/c.txt", "-weird", "new.txt", "out", "sub", ".", "x.mgc")

# Runs every command (base64, one per line) on a fresh copy of the scratch tree and prints
# the number of each one after which the tree, /tmp or the clock's settability changed.
RUNNER = r"""
set -u
mkdir -p /tmp/t/sub && cd /tmp/t && printf 'one\ntwo\n' >a.txt && printf 'log\n' >b.log
printf 'x\n' >sub/c.txt && printf 'w\n' >./-weird && : >/tmp/out && cd /
listing() { find /tmp -path /tmp/out -prune -o -printf '%p %s %m %l\n' | sort; \
  find /tmp -path /tmp/out -prune -o -type f -exec md5sum {} + | sort; }
i=0
while read -r line; do
  i=$((i+1)); cmd=$(printf %s "$line" | base64 -d)
  rm -rf /tmp/s && cp -a /tmp/t /tmp/s && cd /tmp/s
  before=$(listing)
  timeout -s KILL 1 sh -c "$cmd" </dev/null >/tmp/out 2>&1
  after=$(listing); cd /
  if [ "$before" != "$after" ]; then echo "CHANGED $i"; fi
  if grep -qi 'cannot set date' /tmp/out; then
    echo "SETTING $i"; fi
done
echo DONE $i
"""


def _word(draw: Any, spec_longs: list[str], spec_shorts: str) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0 and spec_longs:
        name = draw(st.sampled_from(spec_longs))
        cut = draw(st.integers(1, len(name)))
        value = draw(st.sampled_from(["", "=2001-01-01", "=out", "=x.mgc", "=a.txt"]))
        return f"--{name[:cut]}{value}"
    if kind == 1 and spec_shorts:
        letters = draw(st.lists(st.sampled_from(spec_shorts), min_size=1, max_size=3))
        return "-" + "".join(letters)
    if kind == 2:
        return draw(st.sampled_from(["-C", "-s", "-delete", "-fprint", "-exec", "-o", "--"]))
    if kind == 3:
        return draw(st.sampled_from(["2001-01-01", "+%s", "@0", "touch", "rm"]))
    return draw(st.sampled_from(FILES))


@st.composite
def commands(draw: Any) -> str:
    prefix = draw(st.sampled_from(SAFE))
    spec = COMMANDS.get(prefix)
    longs = sorted(spec.longs) if spec else []
    shorts = "".join(sorted(spec.shorts)) if spec else ""
    words = [_word(draw, longs, shorts) for _ in range(draw(st.integers(0, 4)))]
    return " ".join([prefix, *(shlex.quote(w) for w in words)])


@pytest.mark.docker
def test_nothing_auto_approved_changes_state(scratch_container: Any) -> None:
    approved: list[str] = []
    generated = 0

    @settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
    @given(commands())
    def collect(command: str) -> None:
        nonlocal generated
        generated += 1
        if is_safe_command(command, SAFE):
            approved.append(command)

    collect()
    # Writers the old prefix rule let through, so the run always holds some dangerous ones.
    approved_before = len(approved)
    for known in ("date --s=2001-01-01", "date --se 2001-01-01", "find . -fprint0 out"):
        if is_safe_command(known, SAFE):
            approved.append(known)
    assert generated >= 300 and approved_before >= 100, (generated, approved_before)
    lines = "\n".join(base64.b64encode(c.encode()).decode() for c in approved) + "\n"
    script = f"printf %s {shlex.quote(lines)} | sh -c {shlex.quote(RUNNER)}"
    _, output = scratch_container.exec_run(["sh", "-c", script])
    text = output.decode()
    assert f"DONE {len(approved)}" in text, text[-2000:]
    bad = [
        (approved[int(line.split()[1]) - 1], line.split()[0])
        for line in text.splitlines()
        if line.startswith(("CHANGED", "SETTING"))
    ]
    assert bad == [], bad
