"""The page process's memory: glibc's settings, giving freed pages back, what an object
holds, and a cache bounded in bytes (standard library and NumPy/pandas only).

**Large blocks are their own mappings** (:func:`tune_malloc`). By default glibc raises
its mmap threshold to the size of the largest block freed (up to 32 MB), so after the
first upload every 12-30 MB buffer (an upload's bytes, a study pickled by a worker, its
arrays) came from the heap, whose freed pages it keeps: 30 imports of 17.7 MB files left
the page process at 759 MB, 120 MB of it free heap pages (docs/shared-server.md). Fixed
at :data:`MMAP_THRESHOLD`, such blocks go back to the system when freed. The page
process sets it once however it was started (``python -m dashboard``, ``streamlit run``
or ``AppTest``).

**A cache bounded in bytes** (:class:`SizedCache`). A study within the import limits
(:mod:`data_loaders.limits`: 20 MB, 1,000,000 lines) holds from about 20 MB (the memory
benchmark's 17.7 MB file) to about 145 MB in memory (a 10 MB wide file of 999,999 one-row
choice situations, each its own respondent), so a cache bounded by its number of
entries is not a bound on memory. Entries are measured by :func:`footprint` when they
are stored.
"""

from __future__ import annotations

import dataclasses
import gc
import sys
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import numpy as np
import pandas as pd

__all__ = ["MMAP_THRESHOLD", "SizedCache", "footprint", "trim", "tune_malloc"]

#: Allocations at least this large are their own memory mappings, given back to the
#: system when freed (:func:`tune_malloc`).
MMAP_THRESHOLD = 2**20

_TUNED: list[bool] = []


def _libc() -> Any:
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


def tune_malloc() -> bool:
    """glibc's malloc: every allocation of :data:`MMAP_THRESHOLD` or more its own mapping,
    once per process; ``False`` where there is no glibc."""
    if not _TUNED:
        try:
            libc = _libc()
            _TUNED.append(bool(libc is not None and libc.mallopt(-3, MMAP_THRESHOLD)))
        except (OSError, AttributeError):  # M_MMAP_THRESHOLD is -3; no glibc here
            _TUNED.append(False)
    return _TUNED[0]


def trim(collect: bool = False) -> None:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``), after a
    full garbage collection when ``collect``."""
    if collect:
        gc.collect()
    try:
        libc = _libc()
        if libc is not None:
            libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


#: What :func:`footprint` does not walk into: code and modules are the program's, not data.
_NOT_DATA = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
)


def footprint(obj: Any) -> int:
    """Bytes held by ``obj`` and everything it refers to: arrays (a view counted once,
    with its base), data frames and series (``memory_usage(deep=True)``), strings and
    bytes, through dataclasses, attributes, dicts and sequences; each object once.

    It counts the buffers that make a loaded study large, not the interpreter's
    per-object overhead of small containers (a study loaded in a fresh process: 146 MB
    resident, 143 MB counted)."""
    seen: set[int] = set()
    total = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen or o is None or isinstance(o, _NOT_DATA):
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):
            base = o
            while isinstance(base.base, np.ndarray):
                base = base.base
            if base is not o:
                if id(base) in seen:
                    continue
                seen.add(id(base))
            total += base.nbytes
            if base.dtype == object:  # its items' sizes, not walked further
                total += sum(map(sys.getsizeof, base.ravel().tolist()))
        elif isinstance(o, pd.DataFrame):
            total += int(o.memory_usage(deep=True).sum())
        elif isinstance(o, (pd.Series, pd.Index)):
            total += int(o.memory_usage(deep=True))
        elif isinstance(o, (str, bytes, bytearray, memoryview)):
            total += sys.getsizeof(o)
        elif isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        elif dataclasses.is_dataclass(o):
            stack.extend(getattr(o, f.name, None) for f in dataclasses.fields(o))
        elif hasattr(o, "__dict__"):
            stack.extend(vars(o).values())
        elif hasattr(o, "__slots__"):
            stack.extend(getattr(o, s, None) for s in o.__slots__)
        else:
            total += sys.getsizeof(o)
    return total


V = TypeVar("V")


@dataclasses.dataclass
class _Entry(Generic[V]):
    value: V
    nbytes: int
    used: float


class SizedCache(Generic[V]):
    """A least-recently-used cache of at most ``max_bytes`` (by :func:`footprint`) and
    ``max_entries``, each entry dropped after ``ttl`` seconds unused; shared by every
    thread (every browser session of the server).

    :meth:`get` computes a missing value once however many sessions ask for it at once
    (a lock per key), returns it to all of them and then keeps it, dropping the least
    recently used entries until both bounds hold. A value larger than ``max_bytes`` on
    its own is returned and not kept. A computation that raises keeps nothing.

    Parameters
    ----------
    max_bytes, max_entries : int
        The bounds (at least 1 entry).
    ttl : float
        Seconds an entry is kept after its last use.
    clock : callable, optional
        Seconds, monotonic (tests pass their own).
    """

    def __init__(
        self,
        max_bytes: int,
        max_entries: int,
        ttl: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_bytes = int(max_bytes)
        self.max_entries = max(int(max_entries), 1)
        self.ttl = float(ttl)
        self._clock = clock
        self._entries: OrderedDict[Hashable, _Entry[V]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept for ``key``, or ``make()`` (kept when it fits)."""
        hit = self._lookup(key)
        if hit is not None:
            return hit.value
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        try:
            with key_lock:
                hit = self._lookup(key)  # another session made it meanwhile
                if hit is not None:
                    return hit.value
                value = make()
                self._store(key, value, footprint(value))
                return value
        finally:
            with self._lock:
                if not key_lock.locked():
                    self._key_locks.pop(key, None)

    def _lookup(self, key: Hashable) -> _Entry[V] | None:
        now = self._clock()
        with self._lock:
            self._expire(now)
            entry = self._entries.get(key)
            if entry is not None:
                entry.used = now
                self._entries.move_to_end(key)
            return entry

    def _store(self, key: Hashable, value: V, nbytes: int) -> None:
        with self._lock:
            self._entries.pop(key, None)
            if nbytes > self.max_bytes:
                return
            self._entries[key] = _Entry(value, nbytes, self._clock())
            while len(self._entries) > self.max_entries or self.nbytes > self.max_bytes:
                self._entries.popitem(last=False)

    def _expire(self, now: float) -> None:
        for key in [k for k, e in self._entries.items() if now - e.used > self.ttl]:
            del self._entries[key]

    @property
    def nbytes(self) -> int:
        """Bytes the kept values hold (:func:`footprint` when stored)."""
        return sum(e.nbytes for e in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop every entry (a study removed, expired, published)."""
        with self._lock:
            self._entries.clear()
