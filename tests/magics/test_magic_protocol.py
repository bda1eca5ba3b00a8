"""Every registered magic module is a `Magic`: its usage, help text, run and completion."""

from __future__ import annotations

import inspect

import pytest

from co_kernel.magics import MAGICS, Magic, MagicError, find_magic, magic_completer


@pytest.mark.parametrize("name", sorted(MAGICS))
def test_every_registered_magic_is_a_magic(name: str) -> None:
    magic = find_magic(name)
    assert isinstance(magic, Magic)
    assert magic.USAGE.startswith(f"%{name}")
    assert (magic.__doc__ or "").strip(), f"%{name} has no help text"
    assert inspect.iscoroutinefunction(magic.run)
    completer = magic_completer(magic)
    assert completer is None or callable(completer)


def test_completion_is_offered_only_by_magics_that_have_it() -> None:
    assert magic_completer(find_magic("model")) is not None
    assert magic_completer(find_magic("clear")) is None


def test_an_unknown_magic_is_refused_with_a_suggestion() -> None:
    with pytest.raises(MagicError, match=r"Did you mean %model\?"):
        find_magic("modle")
