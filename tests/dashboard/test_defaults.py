"""Default grids: computed once into the per-user data folder, then reused."""

import dataclasses
from pathlib import Path

import pytest

from dashboard._services import defaults
from dashboard._services.results import is_default_root


def test_results_home_follows_dtpbo_data_home(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DTPBO_NO_DEFAULT_RESULTS", raising=False)
    assert defaults.results_home() == tmp_path / "home" / "results"
    assert is_default_root(str(tmp_path / "home" / "results"))
    assert not is_default_root("results")  # a checkout-relative folder is never written
    monkeypatch.setenv("DTPBO_NO_DEFAULT_RESULTS", "1")
    assert not is_default_root(str(tmp_path / "home" / "results"))


@pytest.mark.parametrize("name", ["bench", "rho-pmr-demo"])
def test_default_grid_is_computed_once_and_reused(tmp_path, monkeypatch, name) -> None:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    grid = defaults.GRIDS[name]
    small = grid.cells()[:3]
    calls: list[dict] = []

    def counted(cell):
        calls.append(dict(cell))
        return grid.fn(cell)

    monkeypatch.setitem(
        defaults.GRIDS, name, dataclasses.replace(grid, cells=lambda: small, fn=counted)
    )
    assert defaults.GRIDS[name].missing() == 3
    seen: list[tuple[int, int]] = []
    out = defaults.ensure(name, progress=lambda d, t: seen.append((d, t)))
    assert out == tmp_path / "home" / "results" / "defaults" / name
    assert len(calls) == 3 and seen[-1] == (3, 3)
    assert len(list(Path(out).glob("cell-*.parquet"))) == 3
    assert defaults.GRIDS[name].missing() == 0
    defaults.ensure(name)  # second time: read back, nothing recomputed
    assert len(calls) == 3


def test_default_grids_stay_small() -> None:
    # first visit budget: DT runs are cheap, GP runs few
    bench = defaults.GRIDS["bench"].cells()
    assert sum(c["method"] == "gp" for c in bench) <= 2
    assert len(defaults.GRIDS["hierarchy-swissmetro"].cells()) <= 90
    for g in defaults.GRIDS.values():
        assert g.command.startswith("python -m ")
