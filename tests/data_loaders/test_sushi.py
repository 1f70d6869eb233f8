import io
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from data_loaders import sushi
from data_loaders._common import DataNotAvailableError
from data_loaders.sushi import (
    SET_A_MASTER_IDS,
    download_sushi,
    find_sushi_dir,
    load_sushi,
    sushi_status,
)
from pbo_core.data import DataValidationError
from tests.fixtures.shared_data import real_sushi_dir
from tests.fixtures.synthetic import sushi_zip_bytes, write_sushi_tiny

REAL = real_sushi_dir()  # $DTPBO_SUSHI_DIR or ../shared/data/sushi beside the checkout
needs_real = pytest.mark.skipif(
    REAL is None, reason="real SUSHI data not present ($DTPBO_SUSHI_DIR, ../shared/data/sushi)"
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DTPBO_SUSHI_DIR", raising=False)
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "data_home"))


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Path, dict]:
    folder = tmp_path / "sushi3-2016"
    truth = write_sushi_tiny(folder, n_users=6, seed=1)
    return folder, truth


# ---------------------------------------------------------------------------- fixture data
def test_set_a_on_fixture(tiny) -> None:
    folder, truth = tiny
    s = load_sushi("A", folder)
    assert s.key == "sushi-a"
    assert s.counts() == {"respondents": 6, "items": 10, "comparisons": 6 * 45}
    assert s.data.items["master_id"].tolist() == list(SET_A_MASTER_IDS)
    assert s.data.items["set_a_id"].tolist() == list(range(10))
    assert s.data.items["name"].iloc[5] == "item06"  # set-A 5 -> master 6
    assert s.data.items["name_en"].iloc[8] == "item26 (synthetic 26)"  # from README-en
    np.testing.assert_array_equal(s.extras["true_order"], truth["order_a"])
    # the first user's ranking: best beats all 9 others, then the second beats 8...
    first = truth["order_a"][0]
    assert s.data.pairs[:9].tolist() == [[first[0], j] for j in first[1:]]
    assert s.data.pairs[9].tolist() == [first[1], first[2]]
    assert s.data.respondent[:45].tolist() == [0] * 45
    assert s.schema.names == [
        "style", "major_group", "minor_group", "oiliness", "eat_frequency", "price",
    ]  # fmt: skip
    assert s.user_schema.names[:3] == ["gender", "age", "time"]
    assert len(s.users) == 6 and "user_id" in s.users
    s.user_schema.encode(s.users)  # users are encodable
    assert "redistribution" in s.license.lower() and "Kamishima" in s.citation


@pytest.mark.parametrize("coding", ["2016", "2013"])
def test_set_b_on_fixture_detects_score_coding(tmp_path: Path, coding: str) -> None:
    truth = write_sushi_tiny(tmp_path / "s", n_users=5, seed=2, coding=coding)
    s = load_sushi("B", tmp_path / "s")
    assert s.counts() == {"respondents": 5, "items": 100, "comparisons": 5 * 45}
    assert s.data.items["master_id"].tolist() == list(range(100))
    assert s.extras["score_coding"] == coding
    scores = s.extras["scores"]
    expected = np.where(truth["scores2016"] >= 0, truth["scores2016"], np.nan)
    np.testing.assert_array_equal(scores, expected)  # always returned in 2016 coding
    # each user's pairs only involve their 10 items
    for u in range(5):
        used = np.unique(s.data.pairs[s.data.respondent == u])
        assert set(used) == set(truth["order_b"][u])
    # forcing the wrong coding is possible (and reverses the scores)
    forced = load_sushi("B", tmp_path / "s", score_coding="2013" if coding == "2016" else "2016")
    np.testing.assert_array_equal(forced.extras["scores"], 4 - expected)


def test_optional_shop_frequency(tiny) -> None:
    folder, _ = tiny
    s = load_sushi("A", folder, include_shop_frequency=True)
    assert s.schema.names[-1] == "shop_frequency"
    assert s.data.X.shape == (10, 7)


def test_parent_folder_and_env_var(tiny, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, _ = tiny
    assert find_sushi_dir(folder.parent) == folder  # finds sushi3-2016/ inside
    monkeypatch.setenv("DTPBO_SUSHI_DIR", str(folder.parent))
    assert load_sushi("a").counts()["respondents"] == 6
    assert sushi_status("B") == (True, f"found in {folder}")


def test_results_are_cached(tiny) -> None:
    folder, _ = tiny
    assert load_sushi("A", folder) is load_sushi("A", folder)


# ---------------------------------------------------------------------------- absent data
def test_absent_data_says_how_to_obtain(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(DataNotAvailableError, match=r"kamishima\.net/sushi") as err:
        load_sushi("A")
    assert "DTPBO_SUSHI_DIR" in str(err.value) and "download_sushi" in str(err.value)
    with pytest.raises(DataNotAvailableError, match="does not exist"):
        load_sushi("A", tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotAvailableError, match=r"lacks \['sushi3.idata'"):
        load_sushi("A", tmp_path / "empty")
    monkeypatch.setenv("DTPBO_SUSHI_DIR", str(tmp_path / "gone"))
    ok, reason = sushi_status("A")
    assert not ok and "$DTPBO_SUSHI_DIR" in reason
    with pytest.raises(ValueError, match="'A' or 'B'"):
        load_sushi("C", tmp_path)


# ---------------------------------------------------------------------------- malformed files
def _edit(folder: Path, name: str, line: int, new: str) -> None:
    p = folder / name
    lines = p.read_text(encoding="utf-8").splitlines()
    lines[line - 1] = new
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")


ORDER_A = "sushi3a.5000.10.order"
ORDER_B = "sushi3b.5000.10.order"
SCORE_B = "sushi3b.5000.10.score"


@pytest.mark.parametrize(
    ("sset", "name", "line", "new", "pattern"),
    [
        ("A", ORDER_A, 1, "12 1", r"line 1: header should be '10 1'"),
        ("A", ORDER_A, 3, "0 10 0 1 2 3 4 5 6 7 8", r"line 3: declares 10 items but lists 9"),
        ("A", ORDER_A, 4, "0 10 0 1 2 3 4 5 6 7 8 8", r"line 4: an item appears twice"),
        ("A", ORDER_A, 2, "0 10 0 1 2 3 4 5 6 7 8 10", r"line 2: item id 10 outside 0..9"),
        ("A", ORDER_A, 5, "0 10 0 1 2 x 4 5 6 7 8 9", r"line 5: field 6: 'x' is not an integer"),
        ("A", ORDER_A, 3, "1 10 0 1 2 3 4 5 6 7 8 9", r"line 3: a ranking line starts with"),
        ("A", ORDER_A, 3, "", r"line 3: empty line"),
        ("B", ORDER_B, 2, "0 10 0 1 2 3 4 5 6 7 8 100", r"line 2: item id 100 outside 0..99"),
        ("B", ORDER_B, 3, "0 9 0 1 2 3 4 5 6 7 8", r"line 3: ranking of length 9; earlier"),
        ("A", "sushi3.idata", 4, "3\tx\t1\t0\t4\t5.5\t1\t2\t0.5",
         r"sushi3.idata, line 4: oiliness: '5.5' is not a number in \[0, 4\]"),
        ("A", "sushi3.idata", 2, "1\tx\t2\t0\t4\t1\t1\t2\t0.5",
         r"line 2: style: '2' is not an integer in \[0, 1\]"),
        ("A", "sushi3.idata", 3, "7\tx\t1\t0\t4\t1\t1\t2\t0.5",
         r"line 3: item id 7 should equal the row number 2"),
        ("A", "sushi3.idata", 5, "4\tx\t1\t0\t4", r"line 5: expected 9 TAB-separated fields"),
        ("A", "sushi3.udata", 2, "5\t0\t6\t300\t1\t1\t0\t1\t1\t0\t0",
         r"sushi3.udata, line 2: age: '6' is not an integer in \[0, 5\]"),
        ("A", "sushi3.udata", 3, "5\t0\t1\t300\t48\t1\t0\t1\t1\t0\t0",
         r"line 3: prefecture until 15: '48'"),
        ("A", "sushi3.udata", 1, "5\t0\t1\t300", r"line 1: expected 11 TAB-separated fields"),
        ("B", SCORE_B, 2, " ".join(["-1"] * 99 + ["5"]), r"score.*line 2: score 5 outside -1..4"),
        ("B", SCORE_B, 3, " ".join(["-1"] * 99), r"line 3: expected 100 scores, got 99"),
    ],
)  # fmt: skip
def test_malformed_files_name_file_and_line(
    tiny, sset: str, name: str, line: int, new: str, pattern: str
) -> None:
    folder, _ = tiny
    _edit(folder, name, line, new)
    with pytest.raises(DataValidationError, match=pattern) as err:
        load_sushi(sset, folder)
    assert str(folder / name) in str(err.value)


def test_misaligned_files(tiny) -> None:
    folder, _ = tiny
    p = folder / "sushi3.udata"
    p.write_text("\n".join(p.read_text().splitlines()[:-1]) + "\n")
    with pytest.raises(DataValidationError, match=r"has 5 users but .* has 6 rankings"):
        load_sushi("A", folder)


def test_scores_must_cover_the_ranked_items(tiny) -> None:
    folder, truth = tiny
    row = np.full(100, -1)
    items = [i for i in range(100) if i not in truth["order_b"][1]][:10]
    row[items] = 2
    _edit(folder, SCORE_B, 2, " ".join(map(str, row)))
    with pytest.raises(
        DataValidationError, match=rf"{SCORE_B}, line 2: scored items .*{ORDER_B}, line 3"
    ):
        load_sushi("B", folder)


def test_score_rows_must_match_rankings(tiny) -> None:
    folder, _ = tiny
    p = folder / SCORE_B
    p.write_text("\n".join(p.read_text().splitlines()[:-2]) + "\n")
    with pytest.raises(DataValidationError, match=r"has 4 rows but .* has 6 rankings"):
        load_sushi("B", folder)


# ---------------------------------------------------------------------------- download
def test_download_requires_explicit_opt_in(tmp_path: Path, monkeypatch) -> None:
    def boom(*a, **k):  # pragma: no cover - must not be called
        raise AssertionError("urlopen called without consent")

    monkeypatch.setattr(urllib.request, "urlopen", boom)
    with pytest.raises(PermissionError, match="accept_license=True"):
        download_sushi(tmp_path)


def test_download_failure_message(tmp_path: Path, monkeypatch) -> None:
    def offline(url, timeout=None):
        raise urllib.error.URLError("no network here")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(DataNotAvailableError) as err:
        download_sushi(tmp_path, accept_license=True)
    msg = str(err.value)
    assert "could not download the SUSHI archive from https://www.kamishima.net/asset/" in msg
    assert "no network here" in msg and "by hand from https://www.kamishima.net/sushi/" in msg


def test_download_not_a_zip(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: io.BytesIO(b"<html>"))
    with pytest.raises(DataNotAvailableError, match="not a zip archive"):
        download_sushi(tmp_path, accept_license=True)


def test_download_unzips_into_data_home(tiny, tmp_path: Path, monkeypatch) -> None:
    folder, _ = tiny
    payload = sushi_zip_bytes(folder)
    seen = {}

    def fake(url, timeout=None):
        seen["url"] = url
        return io.BytesIO(payload)

    monkeypatch.setattr(urllib.request, "urlopen", fake)
    out = download_sushi(accept_license=True)
    assert seen["url"] == sushi.SUSHI_ARCHIVE_URL
    assert out == tmp_path / "data_home" / "sushi" / "sushi3-2016"
    # found without any configuration afterwards
    assert load_sushi("B").counts()["respondents"] == 6


# ---------------------------------------------------------------------------- real data
@needs_real
def test_real_set_a() -> None:
    s = load_sushi("A", REAL)
    assert s.counts() == {"respondents": 5000, "items": 10, "comparisons": 225_000}
    order = s.extras["true_order"]
    # SOURCE.md: toro (set-A 7) first in 1713 rankings, kappa-maki (set-A 9) in 36
    assert int((order[:, 0] == 7).sum()) == 1713
    assert int((order[:, 0] == 9).sum()) == 36
    assert s.data.items["name_en"].iloc[7].startswith("toro")
    assert s.data.items["name_en"].iloc[5].startswith("ikura")  # not sake (salmon)
    assert s.users["user_id"].is_unique


@needs_real
def test_real_set_b_reversed_scores() -> None:
    s = load_sushi("B", REAL)
    assert s.counts() == {"respondents": 5000, "items": 100, "comparisons": 225_000}
    assert s.extras["score_coding"] == "2013"  # this copy is the 2013 archive
    scores = s.extras["scores"]
    # after conversion to 2016 coding toro / chu-toro / maguro are liked (SOURCE.md)
    means = np.nanmean(scores, axis=0)
    assert means[8] > np.nanmean(scores) and means[19] > np.nanmean(scores)
    # 2016 histogram: 4 ("like") is the most frequent value, 18767 times
    assert int(np.sum(scores == 4)) == 18767
