"""A shell command line as the shell reads it: its simple commands and their words.

Permission rules and the safe-command list must decide what a command line runs, not
what its text looks like (``/bin/rm``, ``\\rm``, ``'rm'``, ``env rm``, ``FOO=1 rm``,
``sh -c 'rm x'`` all run ``rm``). ``parse_line`` reads the line with tree-sitter's bash
grammar and walks every node: pipelines, lists, subshells, functions, loops, command
and process substitutions, redirections and here-documents. Each simple command keeps
its words after quote removal and its program after ``_shell_programs`` took off
paths, wrappers and assignments; a command is *opaque* when its program cannot be known
or runs code of its own. What the parser cannot read is opaque as a whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from ._shell_programs import Word, classify

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["CommandLine", "SimpleCommand", "parse_line"]


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command of a line."""

    text: str
    """Its source text (assignments and words, no redirections)."""
    words: tuple[str, ...]
    """Its words after quote removal, assignments excluded; expansions as written."""
    argv: tuple[str, ...]
    """The program run and its arguments: paths, wrappers and assignments taken off."""
    opaque: bool
    """The program cannot be known, or it runs code the line does not show."""
    writes: bool
    """A read-only program is given a writing option (``git log --output``, ``sort -o``)."""
    assigns: bool = False
    """It starts with ``NAME=value`` words (which may change what the program does)."""


@dataclass(frozen=True)
class CommandLine:
    """What a command line runs."""

    commands: tuple[SimpleCommand, ...]
    plain: bool
    """One simple command and nothing else: no chaining, pipe, redirection, background,
    substitution, ``${…}``, arithmetic or control structure (``$NAME`` may appear)."""
    opaque: bool
    """Some command is opaque, or the line could not be parsed."""
    writes: bool
    """Some command has a writing option, or output goes to a file by redirection."""


_UNREADABLE = CommandLine((), plain=False, opaque=True, writes=True)
# What bash and the grammar read differently: control characters (tree-sitter takes \r
# for a blank) and a line continuation inside a word (bash joins `r\<newline>m` into rm).
_MISREAD = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]|(?<=\S)\\\n(?=\S)")
_LITERAL_LEAVES = frozenset({"word", "number"})
_NAME_BUILTINS = frozenset(
    {"printf", "read", "unset", "declare", "typeset", "local", "export", "readonly", "test"}
    | {"[", "mapfile", "readarray", "wait", "getopts", "let"}
)
"""Builtins that take variable names: ``a[$(cmd)]`` there runs ``cmd`` (subscripts are
arithmetic), so a word with ``[`` makes them opaque."""
_PLAIN_KINDS = frozenset(
    {"program", "command_name", "word", "number", "raw_string", "string", "string_content"}
    | {"ansi_c_string", "translated_string", "concatenation", "simple_expansion"}
    | {"variable_name", "variable_assignment", "=", '"', "$", ";", "comment"}
)
"""Nodes a plain line may hold: words and ``$NAME``, nothing that runs or redirects."""
_GLOB = re.compile(r"[*?\[{]")
_OUTPUT_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&", "&>|"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_ARITHMETIC_OPERATORS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_ANSI_ESCAPES = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
_ANSI = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)")
_DECLARERS = frozenset({"declare", "typeset", "local", "export", "readonly"})
"""Builtins whose ``-i`` makes later assignments to a name arithmetic."""


@lru_cache(maxsize=1)
def _parser() -> Parser:
    # Loaded with the first shell command decided, not with the kernel.
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def _ansi_c(body: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "xuU":
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8))
        if code[0] == "c":
            return chr(ord(code[1]) & 0x1F)
        return _ANSI_ESCAPES.get(code, "\\" + code)

    return _ANSI.sub(one, body)


def _unquote_word(raw: str) -> tuple[str, bool]:
    """An unquoted word's value (backslashes removed) and whether the shell may expand it
    into other words (an unescaped glob or brace character)."""
    if "\\" not in raw:
        return raw, _GLOB.search(raw) is not None
    out: list[str] = []
    special = False
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        special |= c in "*?[{"
        out.append(c)
        i += 1
    return "".join(out), special


def _word(node: Node) -> Word:
    """A word's value: literal when no expansion is left in it; otherwise its source text."""
    kind = node.type
    if kind in _LITERAL_LEAVES:
        value, special = _unquote_word(_text(node))
        return Word(value, literal=True, expands=special)
    if kind == "raw_string":
        return Word(_text(node)[1:-1], literal=True)
    if kind == "ansi_c_string":
        return Word(_ansi_c(_text(node)[2:-1]), literal=True)
    if kind in ("string", "translated_string"):
        parts: list[str] = []
        for child in node.named_children:
            if child.type != "string_content":
                return Word(_text(node), literal=False)
            parts.append(re.sub(r'\\([\\"$`])|\\\n', r"\1", _text(child)))
        return Word("".join(parts), literal=True)
    if kind == "concatenation":
        pieces = [_word(c) for c in node.children]
        return Word(
            "".join(p.value for p in pieces),
            literal=all(p.literal for p in pieces),
            expands=any(p.expands for p in pieces),
        )
    return Word(_text(node), literal=False)


class _Walk:
    """Collects the simple commands of a tree and what makes the line not plain."""

    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []
        self.opaque = False
        self.writes = False
        self.structure = False  # anything beyond one bare simple command

    def node(self, node: Node) -> None:
        kind = node.type
        if kind == "command":
            self.command(node)
            return
        if kind in ("declaration_command", "unset_command"):
            self.builtin(node)
        elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            self.structure = True
            self.redirect(node)
        elif kind in ("arithmetic_expansion", "subscript") or (
            kind == "compound_statement" and _text(node).startswith("((")
        ):
            self.structure = True
            self.opaque |= _names_variables(node)  # a variable's value is evaluated as code
        elif kind == "test_command":
            self.structure = True
            self.opaque |= _names_variables(node) and any(
                _text(n) in _ARITHMETIC_OPERATORS for n in _descendants(node)
            )
        elif kind == "word" and "\n" in _text(node):
            self.opaque = True  # the grammar glued a newline into a word (`ls\n\\rm x`)
        elif kind not in _PLAIN_KINDS:
            self.structure = True
        for child in node.children:
            self.node(child)

    def redirect(self, node: Node) -> None:
        operator = next((c for c in node.children if not c.is_named), None)
        target = node.child_by_field_name("destination")
        if operator is None or _text(operator) not in _OUTPUT_REDIRECTS or target is None:
            return
        if _text(operator) == ">&" and target.type == "number":
            return  # 2>&1: a copy of a descriptor
        value = _word(target)
        if not (value.literal and value.value in _HARMLESS_TARGETS):
            self.writes = True

    def command(self, node: Node) -> None:
        assignments: list[Node] = []
        words: list[Node] = []
        for child in node.children:
            if child.type == "variable_assignment":
                assignments.append(child)
            elif child.type == "command_name":
                words.extend(child.named_children)
            elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                self.node(child)
                continue
            elif child.is_named:
                words.append(child)
            else:
                self.structure |= child.type != "$"
            self.node(child)  # substitutions and arithmetic inside words and assignments
        self.add(node, assignments, [_word(w) for w in words])

    def builtin(self, node: Node) -> None:
        name = _text(node.children[0]) if node.children else ""
        words = [Word(name, literal=True)] + [_word(c) for c in node.named_children]
        # `declare -i x`: what is later assigned to x is evaluated as arithmetic, as code
        self.opaque |= any(w.value[:1] in "-+" and "i" in w.value for w in words[1:])
        self.add(node, [], words)
        self.structure = True

    def add(self, node: Node, assignments: list[Node], words: list[Word]) -> None:
        argv, opaque, writes = classify(words)
        if argv and argv[0] in _NAME_BUILTINS and any("[" in w for w in argv[1:]):
            opaque = True
        if argv and argv[0] in _DECLARERS and any(w[:1] in "-+" and "i" in w for w in argv[1:]):
            # `declare -i x` read as a plain command (after `!`, the grammar does): what
            # is later assigned to x is evaluated as arithmetic, as code. The whole line.
            self.opaque = True
        if assignments:
            self.structure |= not words  # a bare assignment is a statement of its own
        start = (assignments or [node])[0].start_byte
        end = max([n.end_byte for n in assignments] + [_word_end(node)])
        source = (node.text or b"")[start - node.start_byte : end - node.start_byte]
        self.commands.append(
            SimpleCommand(
                text=source.decode("utf-8", "surrogateescape").strip(),
                words=tuple(w.value for w in words),
                argv=tuple(argv),
                opaque=opaque,
                writes=writes,
                assigns=bool(assignments),
            )
        )
        self.opaque |= opaque
        self.writes |= writes


def _word_end(node: Node) -> int:
    ends = [
        c.end_byte
        for c in node.children
        if c.type not in ("file_redirect", "heredoc_redirect", "herestring_redirect")
    ]
    return max(ends, default=node.end_byte)


def _descendants(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = list(node.children)
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(child.children)
    return found


def _names_variables(node: Node) -> bool:
    return any(
        n.type in ("variable_name", "word", "simple_expansion", "expansion")
        for n in _descendants(node)
    )


@lru_cache(maxsize=512)
def parse_line(text: str) -> CommandLine:
    """The simple commands ``text`` runs, and whether any is opaque or writes."""
    if not text.strip():
        return CommandLine((), plain=False, opaque=False, writes=False)
    if _MISREAD.search(text):
        return _UNREADABLE
    tree = _parser().parse(text.encode("utf-8", "surrogateescape"))
    root = tree.root_node
    if root.has_error:
        return _UNREADABLE
    walk = _Walk()
    walk.node(root)
    commands = tuple(walk.commands)
    plain = (
        len(commands) == 1
        and not walk.structure
        and len([c for c in root.children if c.type != "comment"]) == 1
        and root.children[0].type == "command"
    )
    return CommandLine(commands, plain=plain, opaque=walk.opaque, writes=walk.writes)
