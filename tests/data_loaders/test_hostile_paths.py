"""Hostile paths and files through the loaders: errors never echo file content, and a
confined process opens nothing outside the allowed data roots (``data_loaders.access``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from data_loaders import access
from data_loaders._common import describe_columns, quoted
from data_loaders.registry import load_study
from pbo_core.data import DataValidationError

CANARY = "SECRET-LINE-CANARY-7f3a"

#: One-line files standing in for sensitive ones (a passwd line, a .env, a CSV-looking
#: line of short names, a key file).
CANARY_FILES = {
    "passwd": f"root:x:0:0:{CANARY}:/root:/bin/bash\n",
    "dotenv": f"OPENAI_API_KEY={CANARY}\n",
    "csv_names": f"a,b,{CANARY}\n",
    "short_name": f"{CANARY}\n",
    "key": f"-----BEGIN OPENSSH PRIVATE KEY----- {CANARY}\n",
}

#: Studies whose loaders take a file path, and a header matching them partly (so the
#: names are plausible column names) with the canary in a cell.
FILE_STUDIES = ("bela", "presidential", "swissmetro")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        access.DATA_ROOTS_ENV,
        access.SHARED_SERVER_ENV,
        access.MAX_BYTES_ENV,
        *access.DATASET_ENV_VARS,
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(access.DATA_HOME_ENV, str(tmp_path / "home"))


def _errors(study: str, path: Path) -> str:
    with pytest.raises(Exception) as info:  # any error, never the canary
        load_study(study, path=str(path))
    return f"{type(info.value).__name__}: {info.value}"


@pytest.mark.parametrize("study", FILE_STUDIES)
@pytest.mark.parametrize("kind", sorted(CANARY_FILES))
def test_a_one_line_file_is_never_echoed(tmp_path: Path, study: str, kind: str) -> None:
    f = tmp_path / f"{kind}.csv"
    f.write_text(CANARY_FILES[kind])
    msg = _errors(study, f)
    assert CANARY not in msg
    assert str(f) in msg  # the file is still named


@pytest.mark.parametrize("study", ("bela", "presidential"))
def test_a_canary_cell_below_a_matching_header_is_not_quoted(tmp_path: Path, study: str) -> None:
    header = "id,task,alt,choice,cost" if study == "bela" else "r_id,profile,pref,cage"
    f = tmp_path / "half.csv"
    f.write_text(f"{header},KEY={CANARY}\n1,1,{CANARY},1,2,3\n")
    msg = _errors(study, f)
    assert CANARY not in msg
    assert "missing column" in msg and "names not shown" in msg
    f.write_text(f"{header},extra\n1,1,{CANARY},1,2,3\n")  # plain names are listed
    assert "'extra'" in _errors(study, f)


def test_names_are_listed_only_when_the_header_looks_like_the_data() -> None:
    assert "'cost'" in describe_columns(["id", "cost"], ["id", "task"])
    assert "names not shown" in describe_columns(["x", "y"], ["id", "task"])  # no overlap
    assert "names not shown" in describe_columns(["id", "k=v"], ["id"])  # not a name
    assert "names not shown" in describe_columns(["id", "x" * 40], ["id"])  # too long
    many = describe_columns([f"c{i}" for i in range(30)], ["c1"])
    assert "and 18 more" in many and "'c29'" not in many


def test_values_are_quoted_only_when_short_and_plain() -> None:
    assert quoted(3) == "3" and quoted(2.5) == "2.5"
    assert quoted("ultrasound") == "'ultrasound'"
    for secret in (f"KEY={CANARY}", "x" * 40, "a'b", "line\nbreak", "k:v"):
        assert secret not in quoted(secret) and "not shown" in quoted(secret)


# ----------------------------------------------------------------------------- roots
@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """``(root, outside)``: one allowed root and a folder beside it holding a canary."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.csv").write_text(CANARY_FILES["csv_names"])
    monkeypatch.setenv(access.DATA_ROOTS_ENV, str(root))
    return root, outside


def _hostile(root: Path, outside: Path) -> dict[str, Path]:
    """Paths a visitor might type, each to be refused before it is opened."""
    (root / "link.csv").symlink_to(outside / "secret.csv")
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    (root / ".env").write_text(CANARY_FILES["dotenv"])
    (root / "sub").mkdir()
    fifo = root / "pipe.csv"
    os.mkfifo(fifo)
    return {
        "outside": outside / "secret.csv",
        "outside_absent": outside / "absent.csv",
        "dotdot": root / ".." / "outside" / "secret.csv",
        "symlink": root / "link.csv",
        "symlink_dir": root / "linkdir" / "secret.csv",
        "hidden": root / ".env",
        "fifo": fifo,
        "directory": root / "sub",
        "proc": Path("/proc/self/environ"),
        "dev": Path("/dev/zero"),
        "etc": Path("/etc/passwd"),
    }


@pytest.mark.parametrize("study", ("bela", "presidential"))
def test_hostile_paths_are_refused_before_opening(roots, study: str) -> None:
    root, outside = roots
    for name, path in _hostile(root, outside).items():
        with pytest.raises(access.PathRefusedError) as info:
            load_study(study, path=str(path))
        msg = str(info.value)
        assert CANARY not in msg, name
        assert "secret" not in msg or name in ("outside", "dotdot", "symlink_dir"), name
        assert str(outside) not in msg or name in ("outside", "outside_absent"), name


def test_an_outside_path_is_refused_whether_or_not_it_exists(roots) -> None:
    _root, outside = roots
    msgs = []
    for f in (outside / "secret.csv", outside / "absent.csv"):
        with pytest.raises(access.PathRefusedError) as info:
            access.check_file(f)
        msgs.append(str(info.value).replace(f.name, "F"))
    assert msgs[0] == msgs[1]  # no existence oracle


def test_a_fifo_and_proc_are_refused_even_unconfined(tmp_path: Path) -> None:
    assert not access.is_confined()
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    for p in (fifo, Path("/proc/self/status"), tmp_path):
        with pytest.raises(access.PathRefusedError):
            load_study("bela", path=str(p))


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path, monkeypatch) -> None:
    big = tmp_path / "big.csv"
    big.write_text("id,task\n" + "1,2\n" * 100)
    monkeypatch.setenv(access.MAX_BYTES_ENV, "64")
    with pytest.raises(access.PathRefusedError, match="larger than 64 bytes"):
        load_study("bela", path=str(big))


def test_inside_the_root_loads_and_the_env_folders_are_roots(roots, monkeypatch) -> None:
    root, outside = roots
    ok = root / "bela.csv"
    ok.write_text("id,task\n1,2\n")
    with pytest.raises(DataValidationError, match="missing column"):  # read, not refused
        load_study("bela", path=str(ok))
    monkeypatch.setenv("DTPBO_PRESIDENTIAL_PATH", str(outside / "secret.csv"))
    assert outside.resolve() in access.allowed_roots()  # the administrator's folder
    with pytest.raises(DataValidationError):
        load_study("presidential")


def test_default_roots_personal_and_shared(tmp_path: Path, monkeypatch) -> None:
    roots = access.allowed_roots()
    assert (tmp_path / "home").resolve() in roots and Path.home().resolve() in roots
    monkeypatch.setenv(access.SHARED_SERVER_ENV, "1")
    assert access.is_confined()
    assert Path.home().resolve() not in access.allowed_roots()


def test_confined_block_and_sushi_folder(tmp_path: Path) -> None:
    outside = tmp_path / "sushi"
    outside.mkdir()
    with access.confined():  # roots: data home, home folder, bundled data
        assert access.is_confined()
        with pytest.raises(access.PathRefusedError):
            load_study("sushi-a", data_dir=str(outside))
    assert not access.is_confined()


def test_a_sushi_file_with_a_canary_header_is_not_echoed(tmp_path: Path) -> None:
    from tests.fixtures.synthetic import write_sushi_tiny

    folder = tmp_path / "sushi3-2016"
    write_sushi_tiny(folder, n_users=6, seed=1)
    order = folder / "sushi3a.5000.10.order"
    lines = order.read_text().splitlines()
    order.write_text("\n".join([f"KEY={CANARY}", *lines[1:]]) + "\n")
    msg = _errors_dir("sushi-a", folder)
    assert CANARY not in msg and "line 1" in msg and "not shown" in msg


def _errors_dir(study: str, folder: Path) -> str:
    with pytest.raises(Exception) as info:  # any error, never the canary
        load_study(study, data_dir=str(folder))
    return f"{type(info.value).__name__}: {info.value}"


def test_outputs_are_written_only_below_the_data_home(tmp_path: Path, monkeypatch) -> None:
    """Results and caches a page writes: below the data home, symlinks resolved."""
    home = tmp_path / "home"
    (home / "results").mkdir(parents=True)
    monkeypatch.setenv("DTPBO_DATA_HOME", str(home))
    (home / "escape").symlink_to(tmp_path)
    ok = [home / "results" / "new", home / "results", home / "cache.sqlite"]
    for p in ok:
        folder = p.suffix != ".sqlite"
        assert access.check_output(p, folder=folder, what="out") == p
    refused = {
        tmp_path / "elsewhere": True,
        home / ".." / "x": True,
        home / "escape" / "x": True,  # a symlink out of the data home
        home / ".hidden" / "x": True,
        "/proc/self/x": True,
        home: False,  # the data home itself is no file
        home / "results": False,  # a folder where a file is wanted
    }
    for p, folder in refused.items():
        with pytest.raises(access.PathRefusedError):
            access.check_output(p, folder=folder, what="out")
    (home / "file").write_text("x")
    with pytest.raises(access.PathRefusedError, match="not a folder"):
        access.check_output(home / "file", folder=True, what="out")
