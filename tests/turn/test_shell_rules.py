"""Shell rules read commands as the shell does.

Hypothesis builds spellings of one command (paths, quotes, backslashes, wrappers,
assignments, substitutions, pipelines, lists, here-documents, functions) and of code the
line does not show (``sh -c``, ``eval``, ``xargs``, ``find -exec``, ``$CMD``): a deny
rule ``rm*`` refuses every spelling that runs ``rm``; allow rules ``git log*`` /
``git diff*`` allow no spelling with a writing option or an opaque part; the safe-command
list accepts neither. A table pins what the parser makes of each construct.
"""

from __future__ import annotations

import base64
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from co_kernel.config import Permissions, Settings
from co_kernel.permissions import is_safe_command
from co_kernel.permissions._rules import decide
from co_kernel.permissions._shell_parse import parse_line

WS = Path("/ws")
SAFE = Settings().shell_safe_commands
DENY_RM = Permissions(deny=["run_shell_command(rm*)"]).rules("user settings")
ALLOW_GIT = Permissions(
    allow=["run_shell_command(git log*)", "run_shell_command(git diff*)"]
).rules("user settings")


def kind(rules: Any, command: str) -> str | None:
    found = decide(rules, "run_shell_command", {"cmd": command}, WS)
    return found.kind if found else None


# -- spellings ------------------------------------------------------------------------

NAMES = {
    "rm": [
        *["rm", "/bin/rm", "/usr/bin/rm", "./../../bin/rm", "'rm'", '"rm"', "\\rm", "r''m"],
        *['r""m', "r\\m", "$'rm'", "$'\\x72m'", "$'\\162m'", '"r"m', "\\r\\m"],
    ],
    "ls": ["ls", "/bin/ls", "'ls'", "\\ls", "l''s", "$'\\x6cs'"],
}
WRAPPERS = [
    "command",
    "command -p",
    "builtin",
    "exec",
    "env",
    "env -i",
    "env FOO=1",
    "env -u HOME",
    "env -- ",
    "nice",
    "nice -n 5",
    "nice -5",
    "nohup",
    "time",
    "time -p",
    "timeout 5",
    "timeout -s KILL 5",
    "timeout --signal=TERM 5s",
    "stdbuf -oL",
    "stdbuf -o L",
    "setsid",
    "ionice -c 3",
    "sudo",
    "sudo -u root",
    "sudo -E --",
    "doas",
    "busybox",
]
ASSIGNMENTS = ["", "FOO=1 ", "A=1 B='x y' ", "PATH=/bin "]
PLACES = [
    "{}",
    "ls && {}",
    "ls; {}",
    "false || {}",
    "ls | {}",
    "({})",
    "{{ {}; }}",
    "echo $({})",
    "echo `{}`",
    'echo "$({})"',
    "cat <({})",
    "if true; then {}; fi",
    "for f in a; do {}; done",
    "while false; do :; done; {}",
    "case a in a) {};; esac",
    "f() {{ {}; }}; f",
    "cat <<EOF\n$({})\nEOF",
    "{} > /dev/null 2>&1",
    "{} &",
    "! {}",
    "ls\n{}",
    "X=$({})",
    "export X=$({})",
    "[[ -n $({}) ]]",
    "echo ${{X:-$({})}}",
]
OPAQUE_RM = [
    "sh -c 'rm x'",
    'bash -c "rm x"',
    "bash -ec 'rm x'",
    "zsh -c 'rm x'",
    "eval 'rm x'",
    "eval rm x",
    "source ./script.sh",
    ". ./script.sh",
    "echo rm x | sh",
    "echo rm x | bash -s",
    "sh <<< 'rm x'",
    "bash < cmds.txt",
    "xargs rm < list",
    "find . -delete",
    "find . -name x -exec rm {} +",
    "find . -execdir rm {} ;",
    "find . -ok rm {} ;",
    "$(echo rm) x",
    "`echo rm` x",
    "RM=rm; $RM x",
    "${RM} x",
    "$RM x",
    "r{m,} x",
    "/bin/r? x",
    "/bin/r[m] x",
    "python3 -c 'import os; os.remove(\"x\")'",
    "python -c 'import os'",
    "echo 'import os' | python3",
    "perl -e 'unlink q(x)'",
    "perl -ne 'unlink'",
    "ruby -e 'File.delete(\"x\")'",
    'node -e \'require("fs").rmSync("x")\'',
    "php -r 'unlink(\"x\");'",
    "awk 'BEGIN { system(\"rm x\") }'",
    "sed -n '1e rm x' f",
    "sed 's/.*/rm x/e' f",
    "env -S 'rm x'",
    "sudo -s rm x",
    "git -c alias.x='!rm y' x",
    "git rebase --exec 'rm x' HEAD~1",
    "git submodule foreach rm x",
    "watch rm x",
    "trap 'rm x' EXIT",
    "x='a[$(rm y)]'; (( x ))",
    "x='a[$(rm y)]'; echo $((x))",
    "declare -i n; n='a[$(rm x)]'",
    "r\\\nm x",
    "ls\nls\n\\rm x",  # the grammar glues the newline into the word `\nrm`
    "printf -v 'a[$(rm x)]' y",
    "sort --compress-program=rm a",
    "tar -xf a.tar --to-command='rm x'",
    "make --eval='x: ; rm y' x",
    "ls $(",
    "echo 'unbalanced",
    "ls\rrm x",
]


@st.composite
def rm_commands(draw: st.DrawFn, name: str = "rm") -> str:
    """A simple command running ``name`` (spelled any way), maybe under wrappers."""
    wrappers = draw(st.lists(st.sampled_from(WRAPPERS), max_size=3))
    word = draw(st.sampled_from(NAMES[name]))
    args = draw(st.sampled_from(["-rf x", "x", "-- x", "-f 'a b'", ""]))
    assignment = draw(st.sampled_from(ASSIGNMENTS))
    return f"{assignment}{' '.join([*wrappers, word])} {args}".strip()


@st.composite
def rm_lines(draw: st.DrawFn) -> str:
    """A command line that runs ``rm`` somewhere, or runs code that may."""
    inner = draw(st.one_of(rm_commands(), st.sampled_from(OPAQUE_RM)))
    for _ in range(draw(st.integers(0, 2))):
        inner = draw(st.sampled_from(PLACES)).format(inner)
    return inner


@settings(max_examples=600, deadline=None)
@given(rm_lines())
def test_a_deny_rule_refuses_every_spelling_that_runs_it(command: str) -> None:
    """CVE-2026-25724's class: a deny rule bypassed by another spelling of the command."""
    assert kind(DENY_RM, command) == "deny", command


@settings(max_examples=300, deadline=None)
@given(command=rm_commands("ls"), place=st.sampled_from(PLACES))
def test_a_deny_rule_leaves_other_readable_commands_alone(command: str, place: str) -> None:
    assert kind(DENY_RM, place.format(command)) is None, place.format(command)


@pytest.mark.parametrize("command", OPAQUE_RM)
def test_opaque_lines_meet_every_deny_rule_and_no_allow_rule(command: str) -> None:
    assert parse_line(command).opaque, command
    assert kind(DENY_RM, command) == "deny"
    assert kind(Permissions(deny=["run_shell_command(git push*)"]).rules("u"), command) == "deny"
    assert kind(Permissions(ask=["run_shell_command(git push*)"]).rules("u"), command) == "ask"
    assert kind(Permissions(allow=["run_shell_command(*)"]).rules("u"), command) is None
    assert kind(Permissions(allow=[f"run_shell_command({command})"]).rules("u"), command) is None
    assert not is_safe_command(command, [*SAFE, "sh", "eval", "xargs", "python3", "awk"])


# -- writing options --------------------------------------------------------------------

WRITING = [
    "--output=F",
    "--output F",
    "--outp=F",
    "--ou F",
    "'--output=F'",
    '"--out"put=F',
    "--output\\=F",
    "--output-directory=D",
    "*",
    "--*",
    "{--output=F,}",
]
READING = ["--oneline", "-5", "-p", "--stat", "HEAD~1", "--", "a.txt", "'--format=%H'"]
OPAQUE_PARTS = ["| sh", "| xargs rm", "&& sh -c x", "; eval x", "$(rm x)", "`id`", "| $PAGER"]


@st.composite
def git_lines(draw: st.DrawFn) -> tuple[str, bool | None]:
    """``git log|diff`` with options, and whether it must not be allowed (a writing
    option before ``--``, or an opaque part); None where either answer is right (a
    writing-looking word after ``--`` is a pathspec, which Co may still refuse)."""
    sub = draw(st.sampled_from(["git log", "git diff", "/usr/bin/git log", "'git' diff"]))
    reading = draw(st.lists(st.sampled_from(READING), max_size=3))
    writing = draw(st.lists(st.sampled_from(WRITING), max_size=2))
    opaque = draw(st.lists(st.sampled_from(OPAQUE_PARTS), max_size=1))
    words = draw(st.permutations([*reading, *writing]))
    end = words.index("--") if "--" in words else len(words)
    before = any(w in writing for w in words[:end])
    after = any(w in writing for w in words[end:])
    bad = True if before or opaque else (None if after else False)
    return " ".join([sub, *words, *opaque]), bad


@settings(max_examples=500, deadline=None)
@given(git_lines())
def test_an_allow_rule_never_covers_a_writing_option_or_an_opaque_part(
    case: tuple[str, bool | None],
) -> None:
    command, bad = case
    if bad is None:
        return
    if bad:
        assert kind(ALLOW_GIT, command) is None, command
        assert not is_safe_command(command, SAFE), command
    elif command.startswith("git"):
        assert kind(ALLOW_GIT, command) == "allow", command


SAFE_WRITERS = [
    ("find . -delete", ["find"]),
    ("find . -exec rm {} +", ["find"]),
    ("find . -fprint out", ["find"]),
    ("find . -fprintf out %p", ["find"]),
    ("find . -fls out", ["find"]),
    ("find *", ["find"]),
    ("git log --output=F", ["git log"]),
    ("git diff --outp F", ["git diff"]),
    ("git log *", ["git log"]),
    ("sort -o F a", ["sort"]),
    ("sort -no F a", ["sort"]),
    ("sort --output=F a", ["sort"]),
    ("sed -i s/a/b/ f", ["sed"]),
    ("sed -ni p f", ["sed"]),
    ("sed 'w out' f", ["sed"]),
    ("tee out", ["tee"]),
    ("curl -o out https://x", ["curl"]),
    ("curl -sSLO https://x/f", ["curl"]),
    ("uniq in out", ["uniq"]),
    ("shuf -o out in", ["shuf"]),
    ("tree -o out", ["tree"]),
    ("tar -cf a.tar .", ["tar"]),
    ("wget https://x", ["wget"]),
    ("date -s 2001-01-01", ["date"]),
    ("awk '{ print > \"out\" }' f", ["awk"]),
    ("ls > out", ["ls"]),
    ("ls >> out", ["ls"]),
    ("ls &> out", ["ls"]),
    ("ls 2> out", ["ls"]),
    ("ls | tee out", ["ls", "tee"]),
]


@pytest.mark.parametrize(("command", "prefixes"), SAFE_WRITERS)
def test_writing_options_are_neither_safe_nor_allowed(command: str, prefixes: list[str]) -> None:
    line = parse_line(command)
    assert line.writes or line.opaque, command
    assert not is_safe_command(command, prefixes)
    glob = Permissions(allow=[f"run_shell_command({p}*)" for p in prefixes]).rules("u")
    assert kind(glob, command) is None


@settings(max_examples=400, deadline=None)
@given(
    prefix=st.sampled_from(SAFE),
    extra=st.sampled_from([w for w, _ in SAFE_WRITERS] + OPAQUE_RM + OPAQUE_PARTS),
    joiner=st.sampled_from([" ", " | ", "; ", " && ", " $(", " `"]),
)
def test_the_safe_list_accepts_no_writing_or_opaque_line(
    prefix: str, extra: str, joiner: str
) -> None:
    command = f"{prefix}{joiner}{extra}"
    line = parse_line(command)
    if line.writes or line.opaque:
        assert not is_safe_command(command, SAFE), command


# -- what the parser makes of each construct --------------------------------------------


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        ("FOO=1 /bin/rm -rf 'a b'", [["rm", "-rf", "a b"]]),
        ("env -i A=1 nice -n 5 timeout 3 \\rm x", [["rm", "x"]]),
        ("git log | head -n 3 && wc -l < f", [["git", "log"], ["head", "-n", "3"], ["wc", "-l"]]),
        (
            "echo $(date) `id` <(ls)",
            [["date"], ["id"], ["ls"], ["echo", "$(date)", "`id`", "<(ls)"]],
        ),
        ("cat <<EOF\n$(whoami)\nEOF\n", [["cat"], ["whoami"]]),
        ("cat <<'EOF'\n$(whoami)\nEOF\n", [["cat"]]),
        ("(cd sub && make)", [["cd", "sub"], ["make"]]),
        ('echo "a\\"b" $\'c\\td\'', [["echo", 'a"b', "c\td"]]),
        ("command -v git", [["git"]]),
        ("python3 --version", [["python3", "--version"]]),
    ],
)
def test_the_simple_commands_of_a_line(command: str, runs: list[list[str]]) -> None:
    line = parse_line(command)
    assert sorted(list(c.argv) for c in line.commands) == sorted(runs)
    assert not line.opaque


@pytest.mark.parametrize(
    ("command", "plain"),
    [
        ("git log --oneline", True),
        ("grep -n 'a|b;c>d' f", True),
        ("echo $HOME", True),
        ("ls # a comment", True),
        ("echo ${HOME}", False),
        ("echo $((1 + 2))", False),
        ("ls;", False),
        ("ls 2>/dev/null", False),
        ("ls &", False),
        ("A=1", False),
    ],
)
def test_plain_lines_are_one_bare_simple_command(command: str, plain: bool) -> None:
    assert parse_line(command).plain is plain


# -- bash itself is the judge, in a throwaway container ---------------------------------

PIECES = [
    *["r", "m", "rm", "rm ", " ", "victim.txt", " victim.txt", "\\", "'", '"', ";", "&&"],
    *["|", "$(", ")", "`", "\n", "\\\n", "echo ", "eval ", "sh -c ", "command ", "env "],
    *["FOO=1 ", "$'\\x72'", "{", "}", ",", "! ", "#", "$", "(", "exec ", "<<E\n", "E\n"],
    *["true ", "x=", "$x ", "${x}", "if ", "then ", "fi", "do ", "done", "for i in 1; "],
]
# Runs each line (base64, one per line) as an unprivileged user in a fresh scratch folder
# of a read-only, network-less container, and prints the number of each that removed
# the file. Generated commands never run on the host: glued pieces can name any path.
RUNNER = r"""
i=0
while read -r line; do
  i=$((i+1)); cmd=$(printf %s "$line" | base64 -d)
  /bin/rm -rf /tmp/s; mkdir -p /tmp/s && cd /tmp/s && printf x >victim.txt
  timeout -s KILL 2 bash -c "$cmd" </dev/null >/dev/null 2>&1
  cd /; [ -e /tmp/s/victim.txt ] || echo "DELETED $i"
done
echo DONE $i
"""


@st.composite
def glued_lines(draw: st.DrawFn) -> str:
    """Pieces glued around a spelling of `rm victim.txt`: many lines are broken, some
    delete the file in ways no list above foresaw."""
    pieces = st.one_of(st.just([]), st.lists(st.sampled_from(PIECES), max_size=3))
    before, after = draw(pieces), draw(pieces)
    wrappers = draw(st.lists(st.sampled_from(WRAPPERS), max_size=2))
    line = " ".join([*wrappers, draw(st.sampled_from(NAMES["rm"])), "victim.txt"])
    for _ in range(draw(st.integers(0, 2))):
        line = draw(st.sampled_from(PLACES)).format(line)
    return "".join([*before, line, *after])


@pytest.mark.docker
def test_what_bash_deletes_a_deny_rule_refuses(scratch_container: Any) -> None:
    """Lines bash runs (in the container): whenever one removed the file, the rule `rm*`
    refused it, whatever the grammar made of the line."""
    lines: list[str] = []

    @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
    @given(glued_lines())
    def collect(command: str) -> None:
        lines.append(command)

    collect()
    encoded = "\n".join(base64.b64encode(c.encode()).decode() for c in lines) + "\n"
    script = f"printf %s {shlex.quote(encoded)} | sh -c {shlex.quote(RUNNER)}"
    _, output = scratch_container.exec_run(["sh", "-c", script])
    text = output.decode()
    assert f"DONE {len(lines)}" in text, text[-2000:]
    deleted = [lines[int(n.split()[1]) - 1] for n in text.splitlines() if n.startswith("DELETED")]
    assert len(deleted) >= 10, len(deleted)  # the run holds lines that do delete
    assert [c for c in deleted if kind(DENY_RM, c) != "deny"] == []


@pytest.mark.parametrize(
    "command",
    [
        "unlink victim.txt",
        "/usr/bin/unlink victim.txt",
        "env LC_ALL=C unlink victim.txt",
        "ls && \\unlink victim.txt",
        "echo $(unlink victim.txt)",
        "shred -u victim.txt",
        "trash-put victim.txt",
    ],
)
def test_a_deny_rule_on_rm_stops_the_programs_that_delete_under_another_name(
    command: str,
) -> None:
    """``unlink`` deletes a file as ``rm`` does: ``deny rm*`` must not be a matter of
    spelling the deletion otherwise. A synonym is a program, not a word: printed or named
    as a file, it is nothing to deny."""
    assert kind(DENY_RM, command) == "deny", command
    assert kind(DENY_RM, f"echo {shlex.quote(command)}") is None
    assert kind(DENY_RM, "ls unlink.txt shred") is None
