"""Memos of functions of one text (a cell, a header), bounded by the characters they keep.

``functools.lru_cache`` counts entries, so twenty edits of a 4.5 MB cell would keep twenty
copies; a :class:`TextMemo` counts characters too (:data:`PARSE_CHARS` for the parse caches of
:func:`cuda_magic.cell.parse_cell` and of :mod:`.include_scan`).
"""

from __future__ import annotations

import functools
import threading

__all__ = ["PARSE_CHARS", "TextMemo", "text_memo"]

PARSE_CHARS = 8 * 2**20     # characters of text the parse caches keep each (the latest always)


class TextMemo:
    """A memo of a function of one text (a cell, a header), least recently used out first,
    bounded by entries and by the characters of the texts it keeps (``max_chars``): a big cell
    edited twenty times is not kept twenty times.  The latest text is always kept (an unchanged
    re-run finds it), however big.  :func:`text_memo` makes one; the parse caches of
    :func:`cuda_magic.cell.parse_cell` and of :mod:`.include_scan` are two."""

    def __init__(self, function, max_chars: int, max_entries: int):
        self.function, self.max_chars, self.max_entries = function, max_chars, max_entries
        self._lock = threading.Lock()
        self._kept: dict[str, object] = {}      # insertion order = use order
        self._chars = 0
        functools.update_wrapper(self, function)

    def __call__(self, text: str):
        try:
            with self._lock:
                value = self._kept.pop(text)
                self._kept[text] = value
                return value
        except (KeyError, TypeError):       # not kept (TypeError: no text; the function says)
            pass
        value = self.function(text)         # outside the lock: parsing may take a while
        with self._lock:
            if text not in self._kept:
                self._chars += len(text)
            self._kept[text] = value
            while len(self._kept) > 1 and (self._chars > self.max_chars or
                                           len(self._kept) > self.max_entries):
                old = next(iter(self._kept))
                del self._kept[old]
                self._chars -= len(old)
        return value

    def cache_clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._chars = 0

    def cache_info(self) -> tuple[int, int]:
        """(texts kept, their characters)."""
        with self._lock:
            return len(self._kept), self._chars


def text_memo(max_chars: int, max_entries: int):
    """Decorate a function of one ``str`` with a :class:`TextMemo`."""
    return lambda function: TextMemo(function, max_chars, max_entries)
