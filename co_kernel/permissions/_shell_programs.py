"""What the program of a simple command is, and whether it runs hidden code or writes.

The one place that lists, for the permission rules and the safe-command list:

- wrappers, which run the command in their arguments (``command``, ``builtin``,
  ``exec``, ``env`` with its options and ``NAME=value`` words, ``nice``, ``nohup``,
  ``time``, ``timeout DURATION``, ``stdbuf``, ``setsid``, ``ionice``, ``sudo``,
  ``doas``, ``busybox``): taken off, with their options, to find the program;
- opaque programs, which run code the line does not show: ``eval``, ``source``/``.``,
  ``xargs``, ``trap``, ``awk``, editors and debuggers, programs that run a command from
  their arguments in a way Co does not unwrap (``watch``, ``chroot``, ``strace``, ...),
  shells with ``-c`` or reading standard input, interpreters with inline code
  (``python -c``, ``perl -e``, ``node -e``, ...), ``find -exec/-delete``, ``git -c``,
  ``git rebase --exec``, ``sort --compress-program``, ``tar --to-command``, ``sed`` scripts
  with ``e``, ``make --eval``, and a wrapper option Co does not know;
- writing options of programs one may take for read-only: ``git … --output``,
  ``sort -o``, ``find -fprint/-fprintf/-fls``, ``sed -i`` and ``w``, ``tee FILE``,
  ``curl -o/-O``, ``uniq IN OUT``, ``shuf -o``, ``tree -o``, ``yq -i``, ``date -s``,
  ``tar`` and ``wget`` (they write by nature), and an unquoted glob or brace given to
  one of these programs (a file named ``--output=x`` would become that option).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SYNONYMS", "Word", "classify"]


@dataclass(frozen=True)
class Word:
    """One word of a simple command after quote removal."""

    value: str
    literal: bool = True
    """False when an expansion (``$x``, ``$(…)``) is left in it: ``value`` is its text."""
    expands: bool = False
    """It holds an unquoted glob or brace character: the shell may make other words of it."""


@dataclass(frozen=True)
class _Wrapper:
    flags: frozenset[str] = frozenset()
    """Options without an argument (``-p``, ``--foreground``)."""
    takes: frozenset[str] = frozenset()
    """Options with an argument (``-u``, ``--user``): glued, after ``=``, or the next word."""
    code: frozenset[str] = frozenset()
    """Options that make it run its command through a shell: opaque."""
    operands: int = 0
    """Words before the command (``timeout DURATION``)."""
    assignments: bool = False
    """``NAME=value`` words before the command (``env``)."""
    numbers: bool = False
    """``-N`` is an option (``nice -10``)."""


SYNONYMS: dict[str, str] = {
    "unlink": "rm",
    "rmdir": "rm",
    "shred": "rm",
    "srm": "rm",
    "wipe": "rm",
    "trash": "rm",
    "trash-put": "rm",
}
"""Programs that do what another does under another name, for ``ask`` and ``deny`` rules:
``deny run_shell_command(rm*)`` also stops ``unlink x``, ``rmdir d`` and ``shred -u x``
(read as ``rm x``, ``rm d``, ``rm -u x``). ``find -delete`` and code in an interpreter
are opaque, which every ``ask`` and ``deny`` rule stops already; ``git rm`` and
``git clean`` are git's own subcommands, which a rule names as such (``git clean*``)."""


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRAPPERS: dict[str, _Wrapper] = {
    "command": _Wrapper(_set("-p -v -V")),
    "builtin": _Wrapper(),
    "exec": _Wrapper(_set("-c -l"), _set("-a")),
    "env": _Wrapper(
        _set("- -i -0 -v --ignore-environment --null --debug"),
        _set("-u -C --unset --chdir"),
        _set("-S --split-string"),
        assignments=True,
    ),
    "nice": _Wrapper(takes=_set("-n --adjustment"), numbers=True),
    "nohup": _Wrapper(),
    "time": _Wrapper(
        _set("-p -a -v -q --portability --append --verbose --quiet"),
        _set("-f -o --format --output"),
        assignments=True,  # the keyword: `time A=1 cmd`
    ),
    "timeout": _Wrapper(
        _set("-v --verbose --preserve-status --foreground"),
        _set("-s -k --signal --kill-after"),
        operands=1,
    ),
    "stdbuf": _Wrapper(takes=_set("-i -o -e --input --output --error")),
    "setsid": _Wrapper(_set("-c -f -w --ctty --fork --wait")),
    "ionice": _Wrapper(_set("-t --ignore"), _set("-c -n --class --classdata")),
    "sudo": _Wrapper(
        _set("-A -b -E -H -k -K -n -P -S -B --preserve-env --askpass --background")
        | _set("--set-home --non-interactive --stdin --preserve-groups --bell"),
        _set("-u -g -C -D -h -p -r -t -T -U --user --group --close-from --chdir --host")
        | _set("--prompt --role --type --command-timeout --other-user"),
        _set("-i -s -e --login --shell --edit"),
    ),
    "doas": _Wrapper(_set("-n"), _set("-u -C"), _set("-s")),
    "busybox": _Wrapper(),
    "!": _Wrapper(assignments=True),  # `! ! A=1 cmd`: the grammar takes `!` for a command
}
"""Programs that run the command in their arguments, and how their options read."""

OPAQUE = _set(
    "eval source . xargs parallel trap alias enable hash bind complete compgen fc coproc "
    "awk gawk mawk nawk dc m4 ed ex vi vim nvim view emacs less more most gdb lldb expect "
    "watch su runuser script flock chroot nsenter unshare strace ltrace valgrind firejail "
    "bwrap proot systemd-run run0 pkexec at batch tmux screen xterm sshpass taskset chrt "
    "numactl prlimit cgexec xvfb-run dbus-run-session sg unbuffer rlwrap faketime "
    "let"
)
"""Programs that run code the line does not show (or, for ``let``, evaluate variables as
code): a rule can never tell what they do."""

SHELLS = _set("sh bash dash zsh ksh mksh ash yash rbash fish csh tcsh posh pdksh")
_SHELL_TAKES = _set("-o +o -O +O --rcfile --init-file")
_INTERPRETER = re.compile(
    r"(python|pypy|perl|ruby|node|nodejs|php|lua|luajit|julia|tclsh|wish|ipython|bun|"
    r"rscript|r|osascript|pwsh|powershell|groovy|scala|deno)[0-9.]*"
)
_INLINE_CODE: dict[str, tuple[str, frozenset[str]]] = {
    "python": ("c", frozenset()),
    "pypy": ("c", frozenset()),
    "ipython": ("c", frozenset()),
    "perl": ("eE", frozenset()),
    "ruby": ("e", frozenset()),
    "node": ("ep", _set("--eval --print")),
    "nodejs": ("ep", _set("--eval --print")),
    "bun": ("e", _set("--eval --print")),
    "deno": ("", _set("eval")),
    "php": ("rBRE", frozenset()),
    "lua": ("e", frozenset()),
    "luajit": ("e", frozenset()),
    "julia": ("eE", _set("--eval --print")),
    "rscript": ("e", frozenset()),
    "r": ("e", frozenset()),
    "osascript": ("e", frozenset()),
    "pwsh": ("c", _set("-command -Command -encodedcommand -EncodedCommand")),
    "powershell": ("c", _set("-command -Command -encodedcommand -EncodedCommand")),
    "groovy": ("e", frozenset()),
    "scala": ("e", frozenset()),
}
"""Per interpreter: short option letters and long options that give it code inline."""
_INTERPRETER_TAKES = _set("-W -X -I -M -r -C -l --require --import --loader")
_INFO = _set("-V --version -h --help -v")

_RESERVED = _set(
    "if then else elif fi case esac for select while until do done function { } [[ ]] in"
)
_GIT_TAKES = _set("-C --git-dir --work-tree --namespace --super-prefix --list-cmds")
_GIT_CODE = _set("-c --config-env --exec-path")
_GLOB_SENSITIVE = _set("git find sort sed tar curl date shuf tree yq make file uniq")
"""Programs with a writing or code-running option: an unquoted glob given to them may
expand to that option (a file named ``--output=x``), so it counts as one."""
_SED_CODE = re.compile(r"(^|[;{}\n/|,:#@!%0-9$])\s*[0-9gpiImM]*e(\s|;|}|$)")
_SED_WRITE = re.compile(r"(^|[;{}\n/|,:#@!%0-9$])\s*[0-9gpiImMe]*[wW]\s")


def _long_prefix(word: str, *names: str) -> bool:
    """Whether ``word`` is ``--name``, ``--name=…`` or an abbreviation of one of ``names``."""
    if not word.startswith("--") or len(word) < 4:
        return False
    given = word[2:].partition("=")[0]
    return any(name.startswith(given) for name in names)


def _short_cluster(word: str) -> str:
    """The letters of ``-abc`` (empty for ``--long``, ``-`` and operands)."""
    return word[1:] if word.startswith("-") and not word.startswith("--") else ""


def _short_options(spec: _Wrapper, text: str) -> int | None:
    """How many more words a wrapper's ``-abc`` takes (its argument), None if unknown."""
    for j, letter in enumerate(text[1:], start=1):
        option = "-" + letter
        if option in spec.code:
            return None
        if option in spec.takes:
            return 0 if text[j + 1 :] else 1
        if option not in spec.flags:
            return None
    return 0


def _long_option(spec: _Wrapper, text: str) -> int | None:
    """How many words a wrapper's ``--name[=value]`` takes, None if unknown."""
    name, eq, _ = text.partition("=")
    if name in spec.takes:
        return 1 if eq else 2
    return 1 if name in spec.flags else None


def _skip_wrapper(spec: _Wrapper, words: list[Word], i: int) -> int | None:
    """Where the wrapped command starts, or None when an option is unknown or runs a shell."""
    while i < len(words):
        word = words[i]
        if not word.literal or word.expands:
            return None
        text = word.value
        if text == "--":
            return i + 1 + spec.operands
        if spec.assignments and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", text, re.DOTALL):
            i += 1
            continue
        if text in spec.flags or (spec.numbers and text[:1] == "-" and text[1:].isdigit()):
            i += 1
            continue
        if not text.startswith("-") or text == "-":
            break
        if text.startswith("--"):
            taken = _long_option(spec, text)
        else:
            more = _short_options(spec, text)
            taken = None if more is None else 1 + more
        if taken is None:
            return None
        i += taken
    return i + spec.operands


def _shell_runs_code(args: list[str]) -> bool:
    """``sh -c …``, ``sh -s``, ``sh`` reading standard input: the code is not on the line."""
    i = 0
    while i < len(args):
        word = args[i]
        if word in _SHELL_TAKES:
            i += 2
            continue
        if word == "--":
            return i + 1 >= len(args)
        if word in ("--command", "-c") or (word[:1] in "-+" and word[1:2] != "-" and "c" in word):
            return True
        if word[:1] in "-+" and len(word) > 1:
            if word[1:2] != "-" and "s" in word:
                return True
            i += 1
            continue
        return word == "-"  # a script file: its code is its own, like any program's
    return True


def _interpreter_runs_code(family: str, args: list[str]) -> bool:
    """Inline code (``python -c``), or code read from standard input."""
    letters, longs = _INLINE_CODE.get(family, ("", frozenset[str]()))
    i = 0
    while i < len(args):
        word = args[i]
        if word in longs or word.partition("=")[0] in longs:
            return True
        cluster = _short_cluster(word)
        if cluster and any(c in letters for c in cluster):
            return True
        if word in _INFO or word == "-m":
            return False
        if word in _INTERPRETER_TAKES:
            i += 2
            continue
        if word.startswith("-") and word != "-":
            i += 1
            continue
        return word == "-"
    return True


def _git(args: list[str]) -> tuple[bool, bool]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        word = args[i]
        if word in _GIT_CODE or word.partition("=")[0] in _GIT_CODE:
            return True, False
        i += 2 if word in _GIT_TAKES else 1
    sub, rest = (args[i], args[i + 1 :]) if i < len(args) else ("", [])
    code = (
        (sub == "rebase" and any(w in ("-x", "--exec") or w.startswith("--exec=") for w in rest))
        or (sub == "bisect" and rest[:1] == ["run"])
        or (sub == "submodule" and "foreach" in rest)
        or sub == "filter-branch"
        or (sub in ("difftool", "mergetool") and any(_long_prefix(w, "extcmd") for w in rest))
        or (sub in ("difftool", "mergetool") and "-x" in rest)
    )
    writes = any(_long_prefix(w, "output", "output-directory") for w in rest)
    return code, writes


def _sort(args: list[str]) -> tuple[bool, bool]:
    code = any(_long_prefix(w, "compress-program") for w in args)
    writes = any(_long_prefix(w, "output") for w in args)
    for word in args:
        for letter in _short_cluster(word):
            if letter in "ktST":
                break
            writes |= letter == "o"
    return code, writes


def _sed(args: list[str]) -> tuple[bool, bool]:
    code = writes = False
    scripts: list[str] = []
    i = 0
    operand_seen = False
    while i < len(args):
        word = args[i]
        i += 1
        if word in ("-e", "--expression") and i < len(args):
            scripts.append(args[i])
            i += 1
        elif word.startswith("--expression="):
            scripts.append(word.partition("=")[2])
        elif word in ("-f", "--file") or word.startswith("--file="):
            code = True
        elif _long_prefix(word, "in-place"):
            writes = True
        elif cluster := _short_cluster(word):
            head = cluster.split("e", 1)[0].split("f", 1)[0]
            writes |= "i" in head
            code |= "f" in cluster.split("e", 1)[0]
            if "e" in cluster and not cluster.startswith("i"):
                rest = cluster.split("e", 1)[1]
                scripts.append(rest if rest else (args[i] if i < len(args) else ""))
                i += 0 if rest else 1
        elif not operand_seen and not scripts and not word.startswith("-"):
            scripts.append(word)
            operand_seen = True
    for script in scripts:
        code |= bool(_SED_CODE.search(script))
        writes |= bool(_SED_WRITE.search(script + " "))
    return code, writes


def _find(args: list[str]) -> tuple[bool, bool]:
    code = any(w in ("-exec", "-execdir", "-ok", "-okdir", "-delete") for w in args)
    writes = any(w in ("-fprint", "-fprint0", "-fprintf", "-fls") for w in args)
    return code, writes


_TAR_CODE = _set(
    "to-command use-compress-program checkpoint-action info-script new-volume-script "
    "rsh-command rmt-command"
)
_CURL_WRITES = _set(
    "output remote-name remote-name-all output-dir dump-header cookie-jar trace "
    "trace-ascii libcurl config create-dirs"
)


def _program(name: str, args: list[str]) -> tuple[bool, bool]:
    """Whether ``name args`` runs hidden code, and whether it writes by an option."""
    if name in OPAQUE:
        return True, False
    if name in SHELLS:
        return _shell_runs_code(args), False
    if match := _INTERPRETER.fullmatch(name.lower()):
        return _interpreter_runs_code(match.group(1), args), False
    if name == "git":
        return _git(args)
    if name == "sort":
        return _sort(args)
    if name == "sed":
        return _sed(args)
    if name == "find":
        return _find(args)
    if name in ("mapfile", "readarray"):
        return any("C" in _short_cluster(w) for w in args), False
    if name == "make":
        return any(w == "-E" or _long_prefix(w, "eval") for w in args), False
    if name == "tar":
        clusters = "".join(_short_cluster(w) for w in args[1:])
        code = any(_long_prefix(w, *_TAR_CODE) for w in args) or "I" in clusters or "F" in clusters
        return code, True
    if name == "curl":
        clusters = "".join(_short_cluster(w) for w in args)
        writes = any(_long_prefix(w, *_CURL_WRITES) for w in args) or bool(
            set(clusters) & set("oODcK")
        )
        return False, writes
    operands = [w for w in args if not w.startswith("-")]
    writes = (
        name == "wget"
        or (name == "tee" and bool(operands))
        or (name == "uniq" and len(operands) >= 2)
        or (
            name in ("shuf", "tree")
            and any("o" in _short_cluster(w) or _long_prefix(w, "output") for w in args)
        )
        or (name == "yq" and any(w == "-i" or _long_prefix(w, "inplace") for w in args))
        or (
            name == "date" and any("s" in _short_cluster(w) or _long_prefix(w, "set") for w in args)
        )
    )
    return False, writes


def classify(words: list[Word]) -> tuple[list[str], bool, bool]:
    """The program and arguments a simple command runs (paths, wrappers and assignments
    taken off), whether it is opaque, and whether it writes by an option."""
    i = 0
    while i < len(words):
        head = words[i]
        if not head.literal or head.expands or not head.value or head.value in _RESERVED:
            # a variable or glob as program, or a keyword the grammar took for a command
            # (it reads `! if …; then rm x; fi` as commands `if`, `then rm x`, `fi`)
            return [w.value for w in words[i:]], True, False
        name = head.value.rstrip("/").rsplit("/", 1)[-1]
        spec = WRAPPERS.get(name)
        if spec is None:
            args = [w.value for w in words[i + 1 :]]
            code, writes = _program(name, args)
            options = args.index("--") if "--" in args else len(args)  # then operands only
            if name in _GLOB_SENSITIVE and any(w.expands for w in words[i + 1 : i + 1 + options]):
                writes = True
            return [name, *args], code, writes
        found = _skip_wrapper(spec, words, i + 1)
        if found is None:
            return [w.value for w in words[i:]], True, False
        i = found
    return [], False, False
