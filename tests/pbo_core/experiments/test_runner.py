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


def uneven(cell) -> pd.DataFrame:
    """Frames that differ: no rows, a column only some cells have (ints), text, two rows."""
    x = cell["x"]
    if x % 5 == 0:
        return pd.DataFrame({"x": pd.Series([], dtype="int64")})
    df = pd.DataFrame({"x": [x] * (1 + x % 2), "name": [f"c{x}"] * (1 + x % 2)})
    if x % 3 == 0:
        df["extra"] = x
    return df


def test_rows_folded_in_runs_are_the_plain_concatenation(tmp_path, monkeypatch) -> None:
    """The grid's frames concatenated in runs of CHUNK_CELLS as the grid goes (memory)
    give exactly the concatenation of every cell's frame, also resumed from files."""
    from pbo_core.experiments import runner

    cells = [{"x": i} for i in range(23)]
    expected = pd.concat([f for f in (uneven(c) for c in cells) if len(f)], ignore_index=True)
    for chunk in (1, 4, 7, 1000):
        monkeypatch.setattr(runner, "CHUNK_CELLS", chunk)
        got = run_grid(cells, uneven)
        pd.testing.assert_frame_equal(got, expected)
    monkeypatch.setattr(runner, "CHUNK_CELLS", 4)
    run_grid(cells[::2], uneven, out_dir=tmp_path)  # half the cells stored
    resumed = run_grid(cells, uneven, out_dir=tmp_path)  # read back in between
    pd.testing.assert_frame_equal(resumed, expected, check_dtype=False)
    rows = runner._Rows(10)
    for i in range(4):
        rows.put(i, uneven({"x": i + 1}))
    assert rows.start == 4 and rows.frames[:4] == [None] * 4  # folded: frames released
