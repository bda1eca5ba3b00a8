"""Server-sent events merged as Co's coalescing transport merges a burst of them."""

from __future__ import annotations

from co_kernel.models._coalesce import _EVENT_END, _EventMerger

__all__ = ["merge_events"]


def merge_events(events: list[bytes]) -> bytes:
    """The events (without their blank-line ends) with runs of text chunks merged."""
    merger = _EventMerger()
    merger.feed(b"".join(event + _EVENT_END for event in events))
    return merger.take()
