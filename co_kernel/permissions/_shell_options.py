"""What the arguments of a safe shell command mean: read-only options, operands, paths.

Auto-approval must not trust the command word alone (`date --se 2001-01-01` sets the
clock): each default safe command has a table of its options, and a command passes only
when every option is a known read-only one. Long options resolve the way GNU
``getopt_long`` does (an exact name, else a unique prefix of the command's options, the
writing ones included, so ``--se`` is ``--set``); git's are matched exactly. The parse
also yields the path arguments, which the classifier checks against the workspace and
Co's protected files.

A table is a string of tokens. Short: one letter, or several flag letters in one token.
Long: the option's name. Suffixes: ``=`` takes an argument, ``?`` an optional one (glued
or after ``=``), ``@`` a file argument; prefix ``!`` marks a writer; suffix ``*`` marks
an option that makes the command read whole trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["COMMANDS", "Parsed", "Spec", "parse_arguments"]


@dataclass(frozen=True)
class Option:
    """One option of a command."""

    name: str
    """The letter or long name, without dashes."""
    arg: str = ""
    """"" no argument, "=" a required one, "?" an optional one."""
    safe: bool = True
    """False for options that write or change state."""
    path: bool = False
    """The argument names a file."""
    recursive: bool = False
    """The command reads whole directory trees with this option."""


def _option(token: str) -> Option:
    safe = not token.startswith("!")
    token = token.lstrip("!")
    recursive = token.endswith("*")
    token = token.rstrip("*")
    arg, path = "", False
    if token.endswith("@"):
        arg, path, token = "=", True, token[:-1]
    elif token.endswith(("=", "?")):
        arg, token = token[-1], token[:-1]
    return Option(token, arg, safe, path, recursive)


def _table(text: str, *, short: bool) -> dict[str, Option]:
    options: dict[str, Option] = {}
    for token in text.split():
        if short and token.isalnum() and len(token) > 1:
            options.update((c, Option(c)) for c in token)  # a run of flag letters
            continue
        option = _option(token)
        options[option.name] = option
    return options


@dataclass(frozen=True)
class Spec:
    """How one safe command reads its arguments."""

    shorts: dict[str, Option] = field(default_factory=dict[str, Option])
    longs: dict[str, Option] = field(default_factory=dict[str, Option])
    operands: str = "paths"
    """"paths", "words" (not files), "any" (every argument is a word, options too),
    "none" (no operands allowed), "pattern" (grep: the first is the pattern unless an
    option gave one), "format" (date: only +FORMAT)."""
    abbreviations: bool = True
    """Long options may be abbreviated to a unique prefix (GNU getopt_long)."""

    def long(self, name: str) -> Option | None:
        """The option ``--name`` means, or None when unknown or ambiguous."""
        if name in self.longs:
            return self.longs[name]
        if not self.abbreviations or not name:
            return None
        matches = [o for n, o in self.longs.items() if n.startswith(name)]
        return matches[0] if len(matches) == 1 else None


def _spec(shorts: str, longs: str, operands: str = "paths", *, gnu: bool = True) -> Spec:
    common = "" if not gnu else " help version"
    return Spec(_table(shorts, short=True), _table(longs + common, short=False), operands, gnu)


_DIGITS = "0123456789"
_GIT_DIFF = (
    "p patch s no-patch stat? numstat shortstat name-only name-status summary raw "
    "patch-with-stat U= unified= W function-context w ignore-all-space b "
    "ignore-space-change ignore-blank-lines ignore-space-at-eol word-diff? color? "
    "no-color color-words? R check find-renames? M? C? find-copies? dirstat? "
    "abbrev? full-index binary text a submodule? minimal patience histogram "
    "diff-algorithm= relative? no-relative z no-ext-diff no-textconv"
)

COMMANDS: dict[str, Spec] = {
    "ls": _spec(
        "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1 I= T= w=",
        "all almost-all author escape block-size= ignore-backups color? colour? classify? "
        "file-type directory dired dereference dereference-command-line "
        "dereference-command-line-symlink-to-dir format= full-time group-directories-first "
        "no-group human-readable si hide= hide-control-chars hyperlink? ignore= "
        "indicator-style= inode kibibytes literal numeric-uid-gid quote-name quoting-style= "
        "reverse recursive size show-control-chars sort= time= time-style= tabsize= width= "
        "zero context",
    ),
    "pwd": _spec("L P", "logical physical", "none"),
    "cat": _spec(
        "AbeEnstTuv",
        "number-nonblank number squeeze-blank show-nonprinting show-ends show-tabs show-all",
    ),
    "head": _spec(f"qvz{_DIGITS} c= n=", "bytes= lines= quiet silent verbose zero-terminated"),
    "tail": _spec(
        f"fFqvz{_DIGITS} c= n= s=",
        "bytes= follow? lines= max-unchanged-stats= pid= quiet silent retry "
        "sleep-interval= verbose zero-terminated",
    ),
    "wc": _spec("clmwL", "bytes chars lines files0-from@ max-line-length words total="),
    "echo": Spec(operands="any"),  # echo prints whatever follows, options included
    "date": _spec(
        "Ru d= f@ I? r@ !s=",
        "date= debug file@ iso-8601? reference@ resolution rfc-email rfc-822 rfc-2822 "
        "rfc-3339= !set= uct universal utc",
        "format",
    ),
    "whoami": _spec("", "", "none"),
    "id": _spec("aZgGnruz", "context group groups name real user zero", "words"),
    "uname": _spec(
        "asnrvmpio",
        "all kernel-name sysname nodename kernel-release release kernel-version machine "
        "processor hardware-platform operating-system",
        "none",
    ),
    "grep": _spec(
        f"EFGHILPTUZabchilnoqsuvVwxyz{_DIGITS} A= B= C= D= d= e= f@ m= r* R*",
        "after-context= basic-regexp before-context= binary-files= byte-offset context= "
        "color? colour? count devices= directories= dereference-recursive* exclude= "
        "exclude-from@ exclude-dir= extended-regexp file@ files-with-matches "
        "files-without-match fixed-strings include= ignore-case no-ignore-case initial-tab "
        "label= line-buffered line-number line-regexp max-count= no-filename "
        "no-group-separator group-separator= no-messages null null-data only-matching "
        "perl-regexp quiet recursive* regexp= invert-match silent text binary "
        "unix-byte-offsets with-filename word-regexp",
        "pattern",
    ),
    "which": _spec("as", "", "words", gnu=False),
    "df": _spec(
        "ahHiklPTv B= t= x=",
        "all block-size= inodes human-readable si local output? portability print-type "
        "sync no-sync total type= exclude-type=",
    ),
    "du": _spec(
        "0abcDhHklLmPsSx B= d= t= X@",
        "null all apparent-size block-size= bytes total count-links dereference "
        "dereference-args max-depth= human-readable inodes si no-dereference "
        "one-file-system separate-dirs summarize threshold= time? time-style= exclude= "
        "exclude-from@ files0-from@",
    ),
    "file": _spec(
        "bcdEhikLlnNrsSvzZ0 !C !p e= f@ F= m@ P=",
        "brief checking-printout !compile debug exclude= exclude-quiet= extension "
        "files-from@ separator= mime apple mime-type mime-encoding keep-going list "
        "dereference magic-file@ no-dereference no-buffer no-pad print0 !preserve-date "
        "parameter= raw special-files uncompress uncompress-noreport",
    ),
    "stat": _spec("Lt c= f", "dereference file-system cached= format= printf= terse"),
    "git status": _spec(
        "sbvz u?",
        "short branch porcelain? long verbose untracked-files? ignored? "
        "ignore-submodules? column? no-column ahead-behind no-ahead-behind renames "
        "no-renames find-renames? show-stash no-optional-locks",
        gnu=False,
    ),
    "git log": _spec(
        f"{_DIGITS}ipz n= S= G= L=",
        "oneline max-count= skip= graph decorate? no-decorate all branches? tags? "
        "author= committer= since= until= after= before= grep= all-match invert-grep "
        "regexp-ignore-case reverse format= pretty? abbrev-commit no-abbrev-commit "
        "no-merges merges first-parent follow date= source log-size parents children "
        "left-right cherry-pick topo-order date-order author-date-order walk-reflogs "
        "show-signature no-notes mailmap use-mailmap " + _GIT_DIFF,
        gnu=False,
    ),
    "git diff": _spec(
        "pswbWRaz U= M? C?",
        _GIT_DIFF + " cached staged merge-base no-index exit-code quiet",
        gnu=False,
    ),
    "git branch": _spec(
        "arvl",
        "all remotes verbose list contains= no-contains= merged? no-merged? sort= "
        "format= points-at= show-current column? no-column color? no-color abbrev= "
        "omit-empty ignore-case",
        "none",
        gnu=False,
    ),
    "python3 --version": _spec("", "", "none", gnu=False),
}


@dataclass
class Parsed:
    """A safe command's arguments, once every option was found read-only."""

    paths: list[str] = field(default_factory=list[str])
    """Arguments that name files (operands and file-valued options)."""
    recursive: bool = False
    """The command reads whole trees under its paths."""


def parse_arguments(spec: Spec, args: list[str]) -> Parsed | None:
    """``args`` as the command reads them, or None when any option is unknown or writes."""
    operands: list[str] = []
    parsed = Parsed()
    pattern_given = False
    i = 0
    ended = False
    while i < len(args):
        word = args[i]
        i += 1
        if ended or word == "-" or not word.startswith("-") or spec.operands == "any":
            operands.append(word)
            continue
        if word == "--":
            ended = True
            continue
        read = _read_option(spec, word, args, i)
        if read is None:
            return None
        found, i = read
        for option, value in found:
            if not option.safe:
                return None
            if option.path and value:
                parsed.paths.append(value)
            if option.recursive or (option.name in ("d", "directories") and value == "recurse"):
                parsed.recursive = True
            pattern_given |= option.name in ("e", "f", "regexp", "file")
    return _operands(spec, operands, parsed, pattern_given)


def _read_option(
    spec: Spec, word: str, args: list[str], i: int
) -> tuple[list[tuple[Option, str | None]], int] | None:
    """The options in ``word`` with their values, and where the next word is."""
    found: list[tuple[Option, str | None]] = []
    if word.startswith("--"):
        name, eq, value = word[2:].partition("=")
        option = spec.long(name)
        if option is None:
            return None
        if option.arg == "=" and not eq:
            if i >= len(args):
                return None
            value, i = args[i], i + 1
        elif option.arg == "" and eq:
            return None
        return [(option, value if option.arg == "=" or eq else None)], i
    for j in range(1, len(word)):
        short = spec.shorts.get(word[j])
        if short is None:
            return None
        if short.arg == "":
            found.append((short, None))
            continue
        rest = word[j + 1 :]
        if short.arg == "=" and not rest:
            if i >= len(args):
                return None
            rest, i = args[i], i + 1
        found.append((short, rest or None))
        break
    return found, i


def _operands(
    spec: Spec, operands: list[str], parsed: Parsed, pattern_given: bool
) -> Parsed | None:
    kind = spec.operands
    if kind == "none" and operands:
        return None
    if kind == "format":
        # `date MMDDhhmmYY` sets the clock; only `+FORMAT` prints.
        return parsed if all(o.startswith("+") for o in operands) else None
    if kind == "pattern":
        files = operands if pattern_given else operands[1:]
        parsed.paths += files or (["."] if parsed.recursive else [])
    elif kind == "paths":
        parsed.paths += operands
    return parsed


# -- find: operands first, then an expression of primaries --------------------------------

_FIND_FLAGS = frozenset(
    {
        "-depth",
        "-d",
        "-follow",
        "-mount",
        "-xdev",
        "-noleaf",
        "-daystart",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        "-print",
        "-print0",
        "-ls",
        "-prune",
        "-quit",
        "-true",
        "-false",
        "-empty",
        "-readable",
        "-writable",
        "-executable",
        "-nouser",
        "-nogroup",
        "-not",
        "-a",
        "-o",
        "-and",
        "-or",
        "!",
        "(",
        ")",
        ",",
    }
)
_FIND_ARGS = frozenset(
    {
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-type",
        "-xtype",
        "-size",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-perm",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-links",
        "-inum",
        "-maxdepth",
        "-mindepth",
        "-printf",
        "-regextype",
        "-lname",
        "-ilname",
        "-fstype",
        "-used",
    }
)
_FIND_PATH_ARGS = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})


def parse_find(args: list[str]) -> Parsed | None:
    """``find``'s arguments: options -H/-L/-P, start paths, then read-only primaries only."""
    parsed = Parsed()
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P"):
        i += 1
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("!", "(", ")", ",")):
        parsed.paths.append(args[i])
        i += 1
    while i < len(args):
        word = args[i]
        i += 1
        if word in _FIND_FLAGS:
            continue
        if word not in _FIND_ARGS and word not in _FIND_PATH_ARGS:
            return None  # -exec, -delete, -fprint... and anything unknown
        if i >= len(args):
            return None
        if word in _FIND_PATH_ARGS:
            parsed.paths.append(args[i])
        i += 1
    return parsed
