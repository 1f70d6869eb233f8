"""Which files the loaders may open: allowed data roots, file kinds and sizes.

A dashboard visitor types paths *on the server*. Without a policy that turns the loaders
into a file-reading oracle (any file the server process can read). Every loader therefore
passes each file or folder it is about to open through :func:`check_file` /
:func:`check_folder` first; the checks use ``stat`` only, so nothing refused is ever
opened.

Always refused (in every process):

* anything under ``/proc``, ``/sys`` or ``/dev`` (after resolving symlinks);
* for a file: a folder, a device, a FIFO or a socket (only regular files), and a file
  larger than :func:`max_bytes` (``$DTPBO_MAX_DATA_BYTES``, default 2 GiB).

Refused when the process is **confined** (the dashboard always is, see :func:`confined`;
any process is when ``$DTPBO_DATA_ROOTS`` or ``$DTPBO_SHARED_SERVER`` is set):

* a path that, with every symlink resolved, is not below one of :func:`allowed_roots`
  (so ``..`` and symlinks cannot escape);
* a path with a hidden component (``.env``, ``.ssh/``...) below its root.

The allowed roots (1)::

    roots = $DTPBO_DATA_ROOTS (os.pathsep-separated)             if set, else
            data home + (home folder unless shared-server mode)
            + the folders named by the data-set variables (DTPBO_BELA_PATH, ...)
            + the package's bundled data folder (always)

Refusals raise :class:`PathRefusedError`, whose message names the path as typed and the
rule, never the target of a symlink or anything read from a file, and does not say whether
a refused path exists.

Where the dashboard **writes** (results of a benchmark run, an extraction cache) a typed
path must lie below the data home itself (:func:`check_output`, in every process): caches
and results are written only under the data folder.
"""

from __future__ import annotations

import contextvars
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pbo_core.errors import PathRefusedError

__all__ = [
    "DATASET_ENV_VARS",
    "DATA_HOME_ENV",
    "DATA_ROOTS_ENV",
    "MAX_BYTES_ENV",
    "SHARED_SERVER_ENV",
    "PathRefusedError",
    "allowed_roots",
    "check_file",
    "check_folder",
    "check_output",
    "check_path",
    "confined",
    "data_home",
    "is_confined",
    "max_bytes",
    "refusal",
    "roots_summary",
    "shared_server",
]

#: Environment variable naming the folder for downloaded data (default ``~/.cache/dtpbo``).
DATA_HOME_ENV = "DTPBO_DATA_HOME"
#: Environment variable listing the allowed data roots (``os.pathsep``-separated).
DATA_ROOTS_ENV = "DTPBO_DATA_ROOTS"
#: Environment variable switching on shared-server mode (``1``, ``true``, ``yes``, ``on``).
SHARED_SERVER_ENV = "DTPBO_SHARED_SERVER"
#: Environment variable with the largest data file the loaders open, in bytes.
MAX_BYTES_ENV = "DTPBO_MAX_DATA_BYTES"
#: Default of :func:`max_bytes`: 2 GiB (the largest bundled or published file is < 50 MB).
DEFAULT_MAX_BYTES = 2 * 1024**3
#: Environment variables an administrator sets to locate the user-supplied data sets.
DATASET_ENV_VARS = (
    "DTPBO_BELA_PATH",
    "DTPBO_PRESIDENTIAL_PATH",
    "DTPBO_SUSHI_DIR",
    "DTPBO_PMR_DIR",
)
#: The data bundled with the package (always allowed: mapping files, vendored studies).
_VENDORED = Path(__file__).resolve().parent / "data"
#: Never data, whatever the roots say.
_SYSTEM = (Path("/proc"), Path("/sys"), Path("/dev"))

_CONFINED: contextvars.ContextVar[bool] = contextvars.ContextVar("dtpbo_confined", default=False)


def data_home() -> Path:
    """Folder for data the user downloads (``$DTPBO_DATA_HOME`` or ``~/.cache/dtpbo``)."""
    env = os.environ.get(DATA_HOME_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "dtpbo"


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def shared_server() -> bool:
    """True when ``$DTPBO_SHARED_SERVER`` is set (the page offers no path inputs)."""
    return _flag(SHARED_SERVER_ENV)


def max_bytes() -> int:
    """Largest file the loaders open (``$DTPBO_MAX_DATA_BYTES``, default 2 GiB)."""
    raw = os.environ.get(MAX_BYTES_ENV, "").strip()
    try:
        return int(raw) if raw else DEFAULT_MAX_BYTES
    except ValueError:
        return DEFAULT_MAX_BYTES


def _real(p: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(Path(p).expanduser()))


def allowed_roots() -> tuple[Path, ...]:
    """The folders below which a confined process reads data, symlinks resolved (eq. 1)."""
    listed = [s for s in os.environ.get(DATA_ROOTS_ENV, "").split(os.pathsep) if s.strip()]
    roots: list[Path] = [_real(s.strip()) for s in listed]
    if not listed:
        roots.append(_real(data_home()))
        if not shared_server():
            roots.append(_real(Path.home()))
    for var in DATASET_ENV_VARS:
        value = os.environ.get(var, "").strip()
        if value:
            p = _real(value)
            roots.append(p if p.is_dir() else p.parent)
    roots.append(_real(_VENDORED))
    out: list[Path] = []
    for r in roots:
        if r not in out and r != Path(r.anchor):  # "/" as a root would allow everything
            out.append(r)
    return tuple(out)


def is_confined() -> bool:
    """True inside :func:`confined` or when the environment asks for confinement."""
    return _CONFINED.get() or bool(os.environ.get(DATA_ROOTS_ENV, "").strip()) or shared_server()


@contextmanager
def confined() -> Iterator[None]:
    """Within the block, the loaders of this thread read only below :func:`allowed_roots`."""
    token = _CONFINED.set(True)
    try:
        yield
    finally:
        _CONFINED.reset(token)


def _below(path: Path, root: Path) -> bool:
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    return not any(part.startswith(".") for part in rel.parts)


def _checked(path: str | os.PathLike[str], what: str) -> tuple[Path, os.stat_result | None]:
    """The resolved path and its ``stat`` (``None`` if absent), after the place rules."""
    shown = str(path)
    try:
        real = _real(path)
    except (OSError, ValueError) as exc:  # an embedded NUL byte, a loop of symlinks...
        raise PathRefusedError(
            f"{what} {shown!r}: not a usable path ({type(exc).__name__})"
        ) from None
    if any(real == s or s in real.parents for s in _SYSTEM):
        raise PathRefusedError(f"{what} {shown!r}: system folders (/proc, /sys, /dev) hold no data")
    if is_confined():
        roots = allowed_roots()
        if not any(_below(real, r) for r in roots):
            raise PathRefusedError(
                f"{what} {shown!r} is outside the allowed data roots "
                f"({', '.join(str(r) for r in roots) or 'none'}) or names a hidden file; "
                f"copy the data below a root or set ${DATA_ROOTS_ENV}"
            )
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return real, None
    except OSError as exc:
        raise PathRefusedError(f"{what} {shown!r}: cannot be inspected ({exc.strerror})") from None
    return real, st


def check_file(path: str | os.PathLike[str], what: str = "data file") -> Path:
    """``path`` as given, after checking it may be opened as a data file (no opening).

    Raises
    ------
    PathRefusedError
        When a rule of the module docstring refuses it.
    FileNotFoundError
        When an allowed path does not exist.
    """
    _, st = _checked(path, what)
    if st is None:
        raise FileNotFoundError(f"{what} {str(path)!r}: no such file")
    if stat.S_ISDIR(st.st_mode):
        raise PathRefusedError(f"{what} {str(path)!r} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise PathRefusedError(
            f"{what} {str(path)!r} is not a regular file (a device, FIFO or socket)"
        )
    limit = max_bytes()
    if st.st_size > limit:
        raise PathRefusedError(
            f"{what} {str(path)!r} is larger than {limit:,} bytes (${MAX_BYTES_ENV})"
        )
    return Path(path)


def check_folder(path: str | os.PathLike[str], what: str = "data folder") -> Path:
    """``path`` as given, after checking it is an allowed folder (files inside are checked
    again by :func:`check_file` when opened).

    Raises
    ------
    PathRefusedError
        When a rule of the module docstring refuses it, or it is not a folder.
    FileNotFoundError
        When an allowed path does not exist.
    """
    _, st = _checked(path, what)
    if st is None:
        raise FileNotFoundError(f"{what} {str(path)!r}: no such folder")
    if not stat.S_ISDIR(st.st_mode):
        raise PathRefusedError(f"{what} {str(path)!r} is not a folder")
    return Path(path)


def check_path(path: str | os.PathLike[str], *, folder: bool, what: str) -> Path:
    """:func:`check_folder` when ``folder`` else :func:`check_file`."""
    return check_folder(path, what) if folder else check_file(path, what)


def check_output(path: str | os.PathLike[str], *, folder: bool, what: str) -> Path:
    """``path`` as given, after checking that something may be written there: with every
    symlink resolved it lies below the data home (:func:`data_home`), with no hidden
    component below it, and is a folder (``folder``) or a regular file when it exists.
    Nothing is created or opened.

    Raises
    ------
    PathRefusedError
        When it lies elsewhere, or exists as the wrong kind of file.
    """
    shown = str(path)
    try:
        real = _real(path)
        home = _real(data_home())
    except (OSError, ValueError) as exc:
        raise PathRefusedError(
            f"{what} {shown!r}: not a usable path ({type(exc).__name__})"
        ) from None
    inside = _below(real, home) and (real != home or folder)
    if not inside:
        raise PathRefusedError(
            f"{what} {shown!r} is not below the data folder ({home}, ${DATA_HOME_ENV}) or "
            "names a hidden file; results and caches are written only there"
        )
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return Path(path)
    except OSError as exc:
        raise PathRefusedError(f"{what} {shown!r}: cannot be inspected ({exc.strerror})") from None
    if folder and not stat.S_ISDIR(st.st_mode):
        raise PathRefusedError(f"{what} {shown!r} is not a folder")
    if not folder and not stat.S_ISREG(st.st_mode):
        raise PathRefusedError(f"{what} {shown!r} is not a regular file")
    return Path(path)


def refusal(path: str | os.PathLike[str], *, folder: bool, what: str) -> str | None:
    """Why ``path`` would be refused (``None`` when allowed; absence is not a refusal)."""
    try:
        check_path(path, folder=folder, what=what)
    except PathRefusedError as exc:
        return str(exc)
    except FileNotFoundError:
        return None
    return None


def roots_summary(roots: Sequence[Path] | None = None) -> str:
    """The allowed roots as one line, for captions and errors."""
    return ", ".join(str(r) for r in (allowed_roots() if roots is None else roots))
