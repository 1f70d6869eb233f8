import pandas as pd
import pytest

from pbo_core.experiments.runner import cell_key, read_results, run_grid


def square(cell) -> pd.DataFrame:
    return pd.DataFrame({"x": [cell["x"]], "y": [cell["x"] ** 2]})


def test_cell_key_is_stable_and_order_free() -> None:
    assert cell_key({"a": 1, "b": "x"}) == cell_key({"b": "x", "a": 1})
    assert cell_key({"a": 1}) != cell_key({"a": 2})


def test_grid_resumes_from_files(tmp_path) -> None:
    cells = [{"x": i} for i in range(5)]
    out = run_grid(cells, square, out_dir=tmp_path)
    assert out["y"].tolist() == [0, 1, 4, 9, 16]
    # a partial folder (as left by an interrupted run) is completed, not recomputed
    (next(tmp_path.glob("cell-*.parquet"))).unlink()
    seen = []

    def spy(cell):
        seen.append(cell["x"])
        return square(cell)

    again = run_grid(cells, spy, out_dir=tmp_path)
    assert len(seen) == 1
    assert sorted(again["y"]) == [0, 1, 4, 9, 16]
    assert len(read_results(tmp_path)) == 5
    assert not list(tmp_path.glob("*.tmp*"))  # writes are atomic


def test_parallel_joblib_matches_serial() -> None:
    cells = [{"x": i} for i in range(6)]
    assert run_grid(cells, square, jobs=2).equals(run_grid(cells, square, jobs=1))


def test_grid_runs_on_a_dask_cluster(tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1")
        out = run_grid(
            [{"x": i} for i in range(4)], square, out_dir=tmp_path, dask_scheduler=address
        )
    assert out["y"].tolist() == [0, 1, 4, 9]
    assert len(read_results(tmp_path)) == 4


def flaky(cell) -> pd.DataFrame:
    if cell["x"] == 2:
        raise ValueError("boom")
    return square(cell)


def test_a_failing_cell_does_not_lose_the_others(tmp_path) -> None:
    from pbo_core.experiments.runner import GridError

    with pytest.raises(GridError, match=r"(?s)1 cell\(s\) failed:.*'x': 2.*ValueError: boom"):
        run_grid([{"x": i} for i in range(4)], flaky, out_dir=tmp_path)
    assert sorted(read_results(tmp_path)["x"]) == [0, 1, 3]
    # the rerun computes only the failed cell
    assert run_grid([{"x": i} for i in range(4)], square, out_dir=tmp_path)["y"].tolist() == [
        0,
        1,
        4,
        9,
    ]
