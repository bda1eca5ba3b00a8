"""One error tree: every exception Co defines is a CoError in co_kernel.exceptions, and the
module's docstring draws the tree as the classes really are."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pydantic_ai.exceptions

import co_kernel
from co_kernel import exceptions
from co_kernel.exceptions import CoError

# Defined elsewhere, on purpose. pydantic-ai's own errors must stay its errors (it retries,
# falls back and ends a turn on them by their class), so these subclass one and are also
# RunErrors; they live beside the pydantic-ai import, which exceptions.py must not pay at
# kernel start.
PYDANTIC_AI_ERRORS = {"UnfinishedResponse", "ReplayMismatch", "CoLimitExceeded"}
# Control flow, not an error: raised and caught inside one method of the turn runner.
CONTROL_FLOW = {"co_kernel.turn._run._Interrupted"}


def _defined_exceptions() -> list[type[BaseException]]:
    # Papermill loads co_kernel.cli.papermill as its engine plugin while it is imported itself:
    # imported first, as papermill users do, not from the middle of co_kernel.cli.papermill.
    importlib.import_module("papermill")
    found = []
    for info in pkgutil.walk_packages(co_kernel.__path__, "co_kernel."):
        if info.name == "co_kernel.__main__":  # runs the command line when imported
            continue
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == info.name:
                found.append(value)
    return found


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _drawn_tree() -> dict[str, str | None]:
    """Class name -> the parent the docstring draws it under."""
    doc = exceptions.__doc__ or ""
    block = doc.split("::", 1)[1].split("\n\n")[1]
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in block.splitlines():
        match = re.match(r"^ {4}([│ ├└─]*)(\w+)", line)
        assert match, f"not a line of the tree: {line!r}"
        depth = len(match.group(1)) // 4
        del stack[depth:]
        parents[match.group(2)] = stack[-1] if stack else None
        stack.append(match.group(2))
    return parents


def test_every_co_exception_is_a_co_error_defined_in_exceptions():
    strays = []
    for cls in _defined_exceptions():
        if _name(cls) in CONTROL_FLOW:
            continue
        if not issubclass(cls, CoError):
            strays.append(f"{_name(cls)} is not a CoError")
        elif cls.__module__ != "co_kernel.exceptions":
            pydantic_base = any(
                base.__module__ == pydantic_ai.exceptions.__name__ for base in cls.__bases__
            )
            if cls.__name__ not in PYDANTIC_AI_ERRORS or not pydantic_base:
                strays.append(f"{_name(cls)} is not defined in co_kernel.exceptions")
    assert strays == []


def test_the_docstring_draws_the_real_tree():
    classes = {
        cls.__name__: cls
        for cls in _defined_exceptions()
        if issubclass(cls, CoError) and _name(cls) not in CONTROL_FLOW
    }
    assert classes.keys() >= PYDANTIC_AI_ERRORS
    drawn = _drawn_tree()
    assert sorted(drawn) == sorted(classes)
    for name, parent in drawn.items():
        bases = [base.__name__ for base in classes[name].__bases__]
        assert (parent or "Exception") in bases, f"{name} is drawn under {parent}, bases {bases}"


def test_exceptions_exports_every_class_it_defines():
    defined = {
        name
        for name, value in vars(exceptions).items()
        if inspect.isclass(value) and value.__module__ == exceptions.__name__
    }
    assert defined == set(exceptions.__all__)
