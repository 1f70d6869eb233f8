"""The page process's memory: footprints, the byte-bounded cache, glibc's settings."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest

from dashboard import _memory
from dashboard._memory import SizedCache, footprint

MB = 2**20


@dataclass
class _Holder:
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    frame: pd.DataFrame | None = None
    more: list[object] = field(default_factory=list)


class _Plain:
    def __init__(self, payload: object) -> None:
        self.payload = payload


def test_footprint_counts_arrays_frames_and_nested_objects_once() -> None:
    base = np.zeros(MB // 8)  # 1 MB
    frame = pd.DataFrame({"a": np.arange(2 * MB // 8, dtype=np.int64)})  # 2 MB and its index
    holder = _Holder({"x": base, "view": base[::2], "again": base}, frame, [_Plain(base[10:])])
    size = footprint(holder)
    assert 3 * MB <= size < 3 * MB + 64 * 1024  # the base once, however many views name it
    assert footprint(_Plain([np.ones(MB // 8), np.ones(MB // 8)])) >= 2 * MB  # two arrays
    assert footprint(None) == 0
    labels = np.array([f"respondent-{i:06d}" for i in range(10_000)], dtype=object)
    assert footprint(labels) >= labels.nbytes + 10_000 * len("respondent-000000")
    # code and modules are the program's, not the object's data
    assert footprint(_Plain([np, pd.DataFrame, footprint])) < 1024


def test_footprint_of_a_loaded_study_covers_its_arrays() -> None:
    from data_loaders import load_study

    study = load_study("train")
    arrays = sum(v.nbytes for v in vars(study.data).values() if isinstance(v, np.ndarray))
    assert footprint(study) > arrays > 0


def _array_of(mb: float) -> np.ndarray:
    return np.zeros(int(mb * MB) // 8)


def test_the_cache_keeps_the_recently_used_within_its_bytes() -> None:
    cache: SizedCache[np.ndarray] = SizedCache(max_bytes=10 * MB, max_entries=8, ttl=60)
    made: list[str] = []

    def make(key: str, mb: float):
        return lambda: made.append(key) or _array_of(mb)

    cache.get("a", make("a", 4))
    cache.get("b", make("b", 4))
    cache.get("a", make("a", 4))  # a hit: "a" is now the most recently used
    cache.get("c", make("c", 4))  # 12 MB > 10: the least recently used, "b", goes
    assert made == ["a", "b", "c"] and len(cache) == 2
    assert cache.nbytes <= 10 * MB
    cache.get("b", make("b", 4))  # made again; "a" goes
    cache.get("c", make("c", 4))
    assert made == ["a", "b", "c", "b"] and cache.nbytes <= 10 * MB


def test_a_value_larger_than_the_budget_is_returned_and_not_kept() -> None:
    cache: SizedCache[np.ndarray] = SizedCache(max_bytes=2 * MB, max_entries=4, ttl=60)
    small = cache.get("small", lambda: _array_of(1))
    big = cache.get("big", lambda: _array_of(3))
    assert big.nbytes == 3 * MB and len(cache) == 1
    assert cache.get("small", lambda: _array_of(1)) is small  # the kept one stayed


def test_the_cache_keeps_at_most_its_entries_and_drops_the_unused() -> None:
    now = [0.0]
    cache: SizedCache[int] = SizedCache(max_bytes=MB, max_entries=2, ttl=10, clock=lambda: now[0])
    for k in range(3):
        cache.get(k, lambda k=k: k)
    assert len(cache) == 2
    now[0] = 5.0
    cache.get(2, lambda: -1)  # used at 5 s: kept past 10 s
    now[0] = 12.0
    assert cache.get(1, lambda: -1) == -1  # unused for 12 s: made again
    assert cache.get(2, lambda: -2) == 2
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0


def test_a_failed_computation_keeps_nothing() -> None:
    cache: SizedCache[int] = SizedCache(max_bytes=MB, max_entries=2, ttl=60)

    def fail() -> int:
        raise RuntimeError("worker lost")

    with pytest.raises(RuntimeError, match="worker lost"):
        cache.get("k", fail)
    assert len(cache) == 0 and cache.get("k", lambda: 7) == 7


def test_sessions_asking_at_once_share_one_computation() -> None:
    cache: SizedCache[np.ndarray] = SizedCache(max_bytes=10 * MB, max_entries=2, ttl=60)
    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow() -> np.ndarray:
        calls.append(1)
        started.set()
        release.wait(10)
        return _array_of(1)

    results: list[np.ndarray] = []
    first = threading.Thread(target=lambda: results.append(cache.get("s", slow)))
    first.start()
    assert started.wait(10)
    others = [
        threading.Thread(target=lambda: results.append(cache.get("s", slow))) for _ in range(3)
    ]
    for t in others:
        t.start()
    release.set()
    for t in [first, *others]:
        t.join(10)
    assert len(calls) == 1 and len(results) == 4
    assert all(r is results[0] for r in results)


def test_malloc_is_tuned_once_where_there_is_glibc() -> None:
    if _memory._libc() is None:
        pytest.skip("no C library found here")
    assert _memory.tune_malloc() is _memory.tune_malloc()
    _memory.trim(collect=True)  # nothing to assert but that it runs


def test_the_page_process_keeps_imported_studies_within_its_byte_budget(monkeypatch) -> None:
    from dashboard._services import studies

    assert studies._env_int("DTPBO_NOT_SET_ANYWHERE", studies.OWN_STUDY_CACHE_MB) == 256
    cache: SizedCache = SizedCache(max_bytes=5 * MB, max_entries=4, ttl=60)
    monkeypatch.setattr(studies, "_OWN_STUDIES", cache)
    loads: list[str] = []

    def in_worker(kind: str, title: str, fn: object, *args: object, key: str, **kw: object):
        loads.append(key)
        return _Plain(_array_of(2))

    monkeypatch.setattr(studies, "_in_worker", in_worker)
    for name in ["my-a", "my-b", "my-a", "my-c", "my-b"]:
        studies._load_own_study(name, (), ("env",), (0, 0))
    # 2 MB each within 5 MB: "my-b" went when "my-c" came, and was loaded again
    assert loads == ["my-a", "my-b", "my-c", "my-b"] and len(cache) == 2
    assert cache.nbytes <= 5 * MB
