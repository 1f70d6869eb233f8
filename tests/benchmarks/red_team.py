"""The load and fault suite, as one command: a real shared-mode server attacked as a
hostile visitor would, then killed, restarted, stopped and crowded; one table of what held.

    python tests/benchmarks/red_team.py [--quick] [--json PATH] [--only GROUPS]

Starts ``python -m dashboard`` in shared mode (``DTPBO_SHARED_SERVER=1``, as ``make serve``)
on a free loopback port with a private data folder in a temporary directory, waits for its
ready line (a fresh data folder: the tree kernels are compiled first), and drives it over
HTTP and its websocket with Chromium (Playwright, ``/usr/bin/chromium``) through the
pages, as visitors do. The per-address and per-visitor quotas are raised (every simulated
visitor comes from loopback: one address), the bundled studies' precompute and the tree
comparison are off, so each case's figures are its own. The groups, in order:

``corpus``
    The hostile files on the Add-a-study form (``tests/fixtures/malformed/amplify.py`` and
    ``hostile_files.py``): each is refused in one sentence naming the file, within its
    bound (:data:`AMPLIFY_S` for the two amplification files and the Parquet footer that
    lies about its sizes, :data:`REFUSE_S` for the rest), the job workers under
    :data:`WORKER_MB`, the server under :data:`SERVER_EXTRA_MB` more, every health check
    (polled every 0.1 s) answered within :data:`HEALTH_S`, nothing stored.
``fields``
    Hostile text: a 5,000-character availability condition of spaces on the form and in a
    recipe (one sentence naming the field, at most :data:`FIELD_CPU_S` of the server's and
    its workers' CPU) and on the command line (``import-study --available-when``, the
    same CPU bound); recipes with fields of the wrong type or an unlisted codec (one
    sentence each, no bare exception name, no error id); Markdown links and an image in
    every free-text field of the form, pending and imported (0 links, 0 images, the
    image's server never asked).
``worker``
    kill -9 of the job worker that is importing a visitor's file: that visitor reads one
    sentence, the next visitor's import goes through, and the study stored before is
    unchanged and opens for its owner.
``server``
    kill -9 of the server while a worker imports: the orphaned workers end, a server
    restarted on the same data folder serves, every study stored before is byte for byte
    the same and opens for its owner (the cookie signed before the crash still counts).
``sigterm``
    SIGTERM: the server exits with status 0 within 30 s, no process of its data folder is
    left (workers included, also one spawned while it stopped) and its log has no traceback.
``visitors``
    ``tests/benchmarks/concurrent_visitors.py --visitors 16 --answers 5 --shared``: every
    answer stored once in its own session, every visitor's own answers after a reload,
    and the server's p95 per answer within :data:`P95_S`.

It prints one table (Markdown: check | held/broken | time (s) | detail), one row per case,
and exits with status 1 when any row is broken. A check that fails in an unforeseen way
is a broken row naming the exception, never a traceback. ``--quick``: 4 visitors instead
of 16 and 6 MB imports instead of 18 MB for the kills. ``--json PATH`` writes the rows and
every figure measured (``-``: standard error). Progress goes to standard error.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import os
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:  # run as a script: make the tests package importable
    sys.path.insert(0, str(ROOT))

from tests.fixtures import server_visits as sv  # noqa: E402
from tests.fixtures.malformed import hostile_files as hf  # noqa: E402
from tests.fixtures.malformed.amplify import amplifying_parquet, amplifying_xlsx  # noqa: E402

#: Each refusal within this many seconds (wall, from the file set in the browser to the
#: sentence shown) ...
REFUSE_S = 10.0
#: ... and the files that expand to gigabytes within this many (the bound the docs state).
AMPLIFY_S = 2.0
#: A job worker's peak resident memory while a hostile file is read (MB).
WORKER_MB = 500.0
#: The server process's extra resident memory while a case runs (MB).
SERVER_EXTRA_MB = 500.0
#: Every health check answered within this many seconds meanwhile.
HEALTH_S = 1.0
#: A hostile field costs at most this much CPU (server and workers, or the command).
FIELD_CPU_S = 0.5
#: The server's p95 per answer with the visitors answering at once (docs/shared-server.md).
P95_S = 2.0
#: What the next visitor's import after a kill may take (seconds; a hang guard).
NEXT_VISITOR_S = 180.0
#: The orphaned workers of a killed server are gone within this many seconds.
ORPHANS_S = 60.0

GROUPS = ("corpus", "fields", "worker", "server", "sigterm", "visitors")

#: The shared server's settings: shared mode, quotas raised (every simulated visitor is
#: one loopback address), nothing computed in the background.
SHARED_ENV = {
    "DTPBO_SHARED_SERVER": "1",
    "DTPBO_NO_DEFAULT_RESULTS": "1",
    "DTPBO_NO_TREE_CHOICE": "1",
    "DTPBO_NO_PRECOMPUTE": "1",
    "DTPBO_MAX_STUDIES_PER_ADDRESS": "1000",
    "DTPBO_MAX_STUDIES_PER_VISITOR": "1000",
    "DTPBO_MAX_VISITOR_STUDY_BYTES": str(64 * 2**30),
    "DTPBO_MAX_ADDRESS_STUDY_BYTES": str(64 * 2**30),
}


# ----------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Row:
    """One check's outcome: held or broken, its wall seconds, one line of detail."""

    check: str
    held: bool
    seconds: float
    detail: str


class Broken(Exception):
    """A check whose property did not hold; the message is the row's detail."""


HEADER = ("check", "held/broken", "time (s)", "detail")


def one_line(text: object, limit: int = 200) -> str:
    """``text`` on one line (whitespace runs made one space), cut to ``limit``."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def run_check(name: str, check: Callable[[], str]) -> Row:
    """Run ``check`` (it returns the detail of what held, or raises :class:`Broken` with
    what did not); any other exception is a broken row naming it (its type and first
    line), never a traceback."""
    t0 = time.perf_counter()
    try:
        detail, held = check(), True
    except Broken as exc:
        detail, held = str(exc), False
    except Exception as exc:  # the row says what happened; the suite goes on
        lines = str(exc).strip().splitlines()
        detail, held = f"{type(exc).__name__}: {lines[0] if lines else '(no message)'}", False
    return Row(name, held, round(time.perf_counter() - t0, 1), one_line(detail))


def table(rows: Sequence[Row]) -> str:
    """The rows as one Markdown table (columns padded to line up as text)."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [HEADER] + [
        (cell(r.check), "held" if r.held else "broken", f"{r.seconds:.1f}", cell(r.detail))
        for r in rows
    ]
    widths = [max(len(line[k]) for line in lines) for k in range(len(HEADER))]

    def fmt(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "| " + " | ".join("-" * w for w in widths) + " |"
    return "\n".join([fmt(lines[0]), rule, *(fmt(line) for line in lines[1:])])


def exit_code(rows: Sequence[Row]) -> int:
    """0 when every row held (and there is one), else 1."""
    return 0 if rows and all(r.held for r in rows) else 1


def require(ok: bool, detail: str) -> None:
    """Raise :class:`Broken` with ``detail`` unless ``ok``."""
    if not ok:
        raise Broken(detail)


# ----------------------------------------------------------------------------- the server
def _processes_of(home: Path) -> list[int]:
    """Process ids whose environment names data folder ``home`` (a server, its workers,
    also orphans whose parent is gone)."""
    mark = f"DTPBO_DATA_HOME={home}\0".encode()
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if mark in (d / "environ").read_bytes() and b"zombie" not in _status(d):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def _status(d: Path) -> bytes:
    try:
        return (d / "status").read_bytes()
    except OSError:
        return b""


def _digest(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` and its SHA-256."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@dataclass
class Server:
    """One ``python -m dashboard`` of the suite: its URL, process, folder and log."""

    url: str
    pid: int
    work: Path
    stack: contextlib.ExitStack
    ready_s: float

    @property
    def log(self) -> Path:
        return self.work / "streamlit.log"


@dataclass
class Suite:
    """What the checks share: the work folder, the data folder, the current server, the
    browser, and the figures measured (for ``--json``)."""

    work: Path
    quick: bool
    figures: dict[str, Any] = field(default_factory=dict)
    server: Server | None = None
    restarts: int = 0
    _pw: Any = None
    _browser: Any = None
    #: A visitor who imported a study before the kills: (context, page, key, digest).
    owner: tuple[Any, Any, str, dict[str, str]] | None = None

    @property
    def home(self) -> Path:
        return self.work / "data_home"

    def studies(self) -> list[str]:
        """The stored studies (not the staging folders of an import under way)."""
        return [f for f in sv.stored(self.home)[0] if not f.startswith(".")]

    def start(self) -> Server:
        """The server (started on :attr:`home` and waited for when there is none)."""
        if self.server is not None:
            return self.server
        from tests.fixtures.streamlit_server import streamlit_server

        sub = self.work / f"server-{self.restarts}"
        sub.mkdir()
        stack = contextlib.ExitStack()
        try:
            url = stack.enter_context(
                streamlit_server(sub, extra_env=SHARED_ENV, data_home=self.home, timeout=300)
            )
            pid = int((sub / "streamlit.pid").read_text())
            ready = sv.wait_ready(sub / "streamlit.log", timeout=900)
        except BaseException:
            stack.close()
            self.restarts += 1  # the next attempt in a folder of its own
            raise
        self.server = Server(url, pid, sub, stack, round(ready, 1))
        self.figures.setdefault("servers", []).append({"ready_s": round(ready, 1)})
        log(f"server {self.restarts} at {url} (pid {pid}) ready after {ready:.1f} s")
        return self.server

    def drop_server(self) -> None:
        """Forget the current server (stopping it if it still runs)."""
        if self.server is not None:
            self.server.stack.close()
            self.server = None
            self.restarts += 1

    def browser(self) -> Any:
        if self._browser is None:
            from playwright.sync_api import expect, sync_playwright

            from tests.fixtures.streamlit_server import BROWSER_ARGS, CHROMIUM

            expect.set_options(timeout=60_000)
            self._pw = sync_playwright().start()
            self._browser = self._pw.chromium.launch(
                executable_path=str(CHROMIUM), args=BROWSER_ARGS
            )
        return self._browser

    def visitor(self, path: str = "") -> tuple[Any, Any]:
        """A new visitor (a new browser context) on the current server's ``path``."""
        srv = self.start()
        ctx, pg = sv.new_visitor(self.browser())
        pg.goto(srv.url + path)
        sv.settle(pg)
        return ctx, pg

    def close(self) -> None:
        self.drop_server()
        if self._browser is not None:
            self._browser.close()
            self._pw.stop()


def log(message: str) -> None:
    print(f"[red-team] {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- the form
def open_form(pg: Any) -> Any:
    """The Add-a-study form opened; its file uploaders."""
    pg.get_by_text("Add a study (your own choice data)").click()
    boxes = pg.locator('[data-testid="stFileUploader"]')
    boxes.first.wait_for(state="visible")
    return boxes


def problems(pg: Any) -> list[str]:
    """The problem column of the form's problem table (one cell per problem)."""
    cells: list[str] = []
    for row in pg.locator('[data-testid="stTable"] tbody tr').all():
        tds = row.locator("td").all_inner_texts()
        if tds:
            cells.append(tds[-1])
    return cells


def alerts(pg: Any) -> list[str]:
    return [t for t in pg.locator('[data-testid="stAlert"]').all_inner_texts() if t.strip()]


def _said(text: str) -> str:
    """Why a shown message is not one plain sentence, or ``""``."""
    if "\n" in text.strip():
        return "more than one line"
    for bad in ("Traceback", "error id", "Something went wrong", "Error:"):
        if bad in text:
            return f"it shows {bad!r}"
    return ""


def _watch_detail(r: dict[str, Any]) -> str:
    failed = f", {r['health_failures']} failed" if r["health_failures"] else ""
    return (
        f"worker {r['worker_peak_mb']:.0f} MB, server +{r['extra_rss_mb']:.0f} MB, "
        f"{r['cpu_s'] + r['workers_cpu_s']:.2f} s CPU, health <= {r['health_worst_s']:.2f} s "
        f"({r['health_checks']} checks{failed})"
    )


def _bounded(r: dict[str, Any], seconds: float) -> list[str]:
    """What of a watched case's figures broke its bounds."""
    out = []
    if r["seconds"] > seconds:
        out.append(f"{r['seconds']:.1f} s > {seconds:g} s")
    if r["worker_peak_mb"] >= WORKER_MB:
        out.append(f"worker {r['worker_peak_mb']:.0f} MB >= {WORKER_MB:g}")
    if r["extra_rss_mb"] >= SERVER_EXTRA_MB:
        out.append(f"server +{r['extra_rss_mb']:.0f} MB")
    if r["health_failures"]:
        out.append(f"{r['health_failures']} health checks failed")
    if r["health_worst_s"] > HEALTH_S:
        out.append(f"health answered in {r['health_worst_s']:.2f} s > {HEALTH_S:g} s")
    return out


# ----------------------------------------------------------------------------- corpus
@dataclass(frozen=True)
class Upload:
    """A hostile file for the form: its row's name, file name, maker (given the work
    folder), the words of its refusal and the bound on its time."""

    check: str
    name: str
    make: Callable[[Path], bytes]
    words: str
    seconds: float = REFUSE_S


def _canary(work: Path) -> Path:
    path = work / "canary" / "secret.txt"
    path.parent.mkdir(exist_ok=True)
    path.write_text("XXE-CANARY-7f3a91 the server's own file\n")
    return path


def _escape_target(work: Path) -> Path:
    return work / "escaped" / "evil.sh"


CORPUS = (
    Upload(
        "xlsx: 1 MB shared string in 2,000 cells",
        "tiny.xlsx",
        lambda w: amplifying_xlsx(),
        "the sheet as text is larger than 20 MB",
        AMPLIFY_S,
    ),
    Upload(
        "xlsx: 200 MB sheet part (zip bomb)",
        "part-bomb.xlsx",
        lambda w: hf.xlsx_part_bomb(),
        "larger than 160 MB uncompressed",
    ),
    Upload(
        "xlsx: XML entity expansion (10^9 lol)",
        "entities.xlsx",
        lambda w: hf.xlsx_entity_expansion(),
        "cannot be read as an Excel workbook",
    ),
    Upload(
        "xlsx: external entity (file:// canary)",
        "external-entity.xlsx",
        lambda w: hf.xlsx_external_entity(str(_canary(w))),
        "cannot be read as an Excel workbook",
    ),
    Upload(
        "csv.gz: 30 MB of zeros (gzip bomb)",
        "bomb.csv.gz",
        lambda w: hf.gzip_bomb(),
        "decompressed text is larger than 20 MB",
    ),
    Upload(
        "parquet: 1 MB dictionary value x 8,000 rows",
        "tiny.parquet",
        lambda w: amplifying_parquet(),
        "its text columns hold more than 20 MB",
        AMPLIFY_S,
    ),
    Upload(
        "parquet: footer claims 2 GB of footer",
        "footer-length.parquet",
        lambda w: hf.parquet_footer_lies_about_its_length(),
        "cannot be read as Parquet",
    ),
    Upload(
        "parquet: footer claims 1 kB for a 1 GiB page",
        "footer-sizes.parquet",
        lambda w: hf.parquet_footer_lies_about_its_sizes(),
        "the uncompressed table is larger than 80 MB",
        AMPLIFY_S,
    ),
    Upload(
        "zip: a zip inside the zip",
        "nested.zip",
        lambda w: hf.nested_zip(),
        "compressed again",
    ),
    Upload(
        "zip: member ../../../ to a path (zip slip)",
        "traversing.zip",
        lambda w: hf.traversing_zip(_escape_target(w)),
        "not a format the import reads",
    ),
)


def check_upload(suite: Suite, case: Upload, page: dict[str, Any]) -> str:
    """One hostile file on the form (one visitor's page, kept in ``page`` across cases)."""
    from playwright.sync_api import expect

    from tests.fixtures.streamlit_server import attach_file

    srv = suite.start()
    if "pg" not in page:
        page["ctx"], page["pg"] = suite.visitor()
        page["boxes"] = open_form(page["pg"])
    pg, boxes = page["pg"], page["boxes"]
    path = suite.work / "files" / case.name
    path.parent.mkdir(exist_ok=True)
    blob = case.make(suite.work)
    path.write_bytes(blob)
    before = suite.studies()
    sv.settle(pg)
    results: dict[str, Any] = {}
    refusal = pg.locator('[data-testid="stTable"] td', has_text=f"{case.name}:")
    with sv.watched(srv.url, srv.pid, case.name, results):
        attach_file(boxes.nth(0), path)
        expect(refusal.first).to_be_visible()
    sv.settle(pg)
    r = results[case.name]
    r["bytes"] = len(blob)
    suite.figures.setdefault("corpus", {})[case.check] = r
    said = problems(pg)
    require(len(said) == 1, f"{len(said)} problems shown: {said[:2]}")
    (sentence,) = said
    broken = _bounded(r, case.seconds)
    if why := _said(sentence):
        broken.append(f"the message: {why}")
    if not sentence.startswith(f"{case.name}:") or case.words not in sentence:
        broken.append(f"said {sentence[:90]!r}")
    body = pg.content()
    if "XXE-CANARY" in body:
        broken.append("the canary file's text is on the page")
    if "../" in " ".join(said) or _escape_target(suite.work).exists():
        broken.append("the member's path was used")
    if suite.studies() != before:
        broken.append("a study was stored")
    detail = (
        f"{len(blob) / 1e3:,.1f} kB refused in {r['seconds']:.1f} s "
        f"({sentence[len(case.name) + 2 :][:48]}...); " + _watch_detail(r)
    )
    require(not broken, "; ".join(broken) + f" ({detail})")
    return detail


# ----------------------------------------------------------------------------- fields
SPACES = " " * 5000


def _field_case(suite: Suite, what: str, act: Callable[[Any], None], words: str) -> str:
    """A hostile value given to the form by ``act``: one alert naming ``words``, within
    :data:`FIELD_CPU_S` of the server's and its workers' CPU, the health answering."""
    from playwright.sync_api import expect

    srv = suite.start()
    ctx, pg = suite.visitor()
    try:
        boxes = open_form(pg)
        from tests.fixtures.shapes import SHAPES
        from tests.fixtures.streamlit_server import attach_file

        attach_file(boxes.nth(0), SHAPES["panel-long"].file)
        sv.settle(pg)
        pg.get_by_role("button", name="Import study").wait_for(state="visible")
        results: dict[str, Any] = {}
        shown = pg.locator('[data-testid="stAlert"]', has_text=words)
        with sv.watched(srv.url, srv.pid, what, results):
            act(pg)
            expect(shown.first).to_be_visible()
        sv.settle(pg)
        r = results[what]
        suite.figures.setdefault("fields", {})[what] = r
        said = [a for a in alerts(pg) if words in a]
        cpu = r["cpu_s"] + r["workers_cpu_s"]
        broken = [b for b in _bounded(r, REFUSE_S) if "worker" not in b]
        if cpu > FIELD_CPU_S:
            broken.append(f"{cpu:.2f} s of CPU > {FIELD_CPU_S:g}")
        if len(said) != 1:
            broken.append(f"{len(said)} messages")
        elif why := _said(said[0]):
            broken.append(f"the message: {why}")
        detail = f"{said[0][:60] if said else ''}...; {_watch_detail(r)}"
        require(not broken, "; ".join(broken) + f" ({detail})")
        return detail
    finally:
        ctx.close()


def check_condition_on_form(suite: Suite) -> str:
    value = "fast: price ==" + SPACES[: 5000 - len("fast: price ==") - 2] + " 1"

    def act(pg: Any) -> None:
        sv.fill(pg, "Availability conditions", value)

    return _field_case(suite, "5,000-character condition (form)", act, "Availability conditions")


def _recipe_act(suite: Suite, name: str, recipe: dict[str, Any]) -> Callable[[Any], None]:
    from tests.fixtures.streamlit_server import attach_file

    path = suite.work / "files" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(recipe))

    def act(pg: Any) -> None:
        box = pg.locator('[data-testid="stFileUploader"]', has_text="Recipe")
        attach_file(box, path)

    return act


def check_condition_in_recipe(suite: Suite) -> str:
    recipe = {"columns": {"available_when": [SPACES]}}
    act = _recipe_act(suite, "spaces-recipe.json", recipe)
    return _field_case(suite, "5,000-space condition (recipe)", act, "spaces-recipe.json")


#: Recipes whose fields have the wrong type or name a codec the form does not offer.
BAD_RECIPES = {
    "codec-recipe.json": {"encoding": "zlib_codec"},
    "sep-recipe.json": {"sep": "[,;]+"},
    "levels-recipe.json": {"columns": {"levels": [{}]}},
    "features-recipe.json": {"columns": {"respondent_features": [{}]}},
}


def check_bad_recipes(suite: Suite) -> str:
    out = []
    for name, recipe in BAD_RECIPES.items():
        out.append(_field_case(suite, name, _recipe_act(suite, name, recipe), name))
    return f"{len(out)} recipes, one sentence each: " + "; ".join(o.split(";")[0] for o in out)


def check_condition_on_command(suite: Suite) -> str:
    """A bounded field on the command line: ``python -m data_loaders import-study FILE
    --available-when "<5,000 spaces>"``."""
    from tests.fixtures.shapes import SHAPES

    env = {k: v for k, v in os.environ.items() if not k.startswith("DTPBO_")}
    env.update(PYTHONPATH=str(ROOT), DTPBO_DATA_HOME=str(suite.work / "command_home"))
    cmd = [sys.executable, "-m", "data_loaders", "import-study", str(SHAPES["panel-long"].file)]
    cmd += ["--available-when", SPACES]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    said = out.stderr.strip()
    suite.figures["command"] = {"cpu_s": round(cpu, 3), "status": out.returncode, "said": said}
    broken = []
    if out.returncode == 0:
        broken.append("imported")
    if cpu > FIELD_CPU_S:
        broken.append(f"{cpu:.2f} s of CPU > {FIELD_CPU_S:g}")
    if "--available-when" not in said or _said(said):
        broken.append(f"said {said[:90]!r}")
    detail = f"status {out.returncode} after {cpu:.2f} s of CPU: {said[:80]!r}"
    require(not broken, "; ".join(broken) + f" ({detail})")
    return detail


def check_markdown_fields(suite: Suite) -> str:
    """The Markdown of :data:`~tests.fixtures.server_visits.HOSTILE` in every free-text
    field of the form, pending, then as the imported study's title: no link, no image."""
    from tests.fixtures.shapes import SHAPES
    from tests.fixtures.streamlit_server import attach_file

    with sv.image_server() as (img_port, hits):
        hostile = sv.HOSTILE.replace("IMG", str(img_port))
        ctx, pg = suite.visitor()
        requested: list[str] = []
        pg.on("request", lambda r: requested.append(r.url))
        try:
            boxes = open_form(pg)
            attach_file(boxes.nth(0), SHAPES["panel-long"].file)
            sv.settle(pg)
            marks: dict[str, list[str]] = {}
            for label, value in sv.hostile_form_fields(hostile):
                sv.fill(pg, label, value)
                marks[f"{label} pending"] = sv.hostile_marks(pg, img_port)
            sv.fill(pg, "Study title", f"Fields {hostile}")
            pg.get_by_role("button", name="Import study").click()
            sv.settle(pg)
            pg.get_by_text("it is selected below").wait_for(state="visible")
            marks["imported"] = sv.hostile_marks(pg, img_port)
            shown_as_text = "evil.example" in pg.inner_text("body")
        finally:
            ctx.close()
        made = {k: v for k, v in marks.items() if v}
        asked = [u for u in requested if f":{img_port}" in u]
        suite.figures["markdown_fields"] = {"views": len(marks), "made": made, "hits": hits}
        detail = (
            f"{len(marks)} views (5 fields pending, the imported title): "
            f"{sum(map(len, marks.values()))} links/images, image server asked {len(hits)} times"
        )
        require(not made and not hits and not asked and shown_as_text, detail + f" {made}")
        return detail


# ----------------------------------------------------------------------------- kills
def _import_and_wait_for_work(suite: Suite, pg: Any, path: Path, title: str) -> int:
    """Set ``path`` on the form, click Import study, and return the worker that took the
    import (the worker whose CPU time grows most over 0.3 s once the click is in)."""
    from tests.fixtures.streamlit_server import attach_file

    srv = suite.start()
    boxes = open_form(pg)
    attach_file(boxes.nth(0), path, wait_ms=180_000)
    sv.settle(pg)
    button = pg.get_by_role("button", name="Import study")
    button.wait_for(state="visible", timeout=300_000)
    sv.fill(pg, "Study title", title)
    before = {w: sv.cpu_s(w, children=False) for w in sv.workers(srv.pid)}
    button.click()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = {}
        for w in sv.workers(srv.pid):
            with contextlib.suppress(OSError, IndexError, ValueError):
                now[w] = sv.cpu_s(w, children=False)
        grown = {w: now[w] - before.get(w, 0.0) for w in now}
        busy = max(grown, key=grown.__getitem__, default=None)
        if busy is not None and grown[busy] >= 0.1:
            return busy
        before.update(now)
    raise Broken("no worker started the import within 60 s")


def _big_file(suite: Suite, name: str, seed: int) -> Path:
    from server_memory import big_csv  # tests/benchmarks/server_memory.py

    path = suite.work / "files" / name
    path.parent.mkdir(exist_ok=True)
    return big_csv(path, 6.0 if suite.quick else 18.0, seed=seed)


def _owner_study(suite: Suite) -> tuple[Any, Any, str, dict[str, str]]:
    """A visitor who imported a small study before any kill (kept for the checks after
    the kills): their context and page, the study's key and its files' digests."""
    if suite.owner is None:
        from tests.fixtures.shapes import SHAPES

        ctx, pg = suite.visitor()
        before = set(suite.studies())
        csv = suite.work / "files" / "owner.csv"
        csv.parent.mkdir(exist_ok=True)
        csv.write_bytes(SHAPES["panel-long"].file.read_bytes())
        sv.import_study(pg, csv, "Stored before the kills")
        (key,) = set(suite.studies()) - before
        suite.owner = (ctx, pg, key, _digest(suite.home / "studies" / key))
    return suite.owner


def _owner_opens(suite: Suite) -> str:
    """The owner's study opens for them on the current server (its title shown)."""
    from playwright.sync_api import expect

    _ctx, pg, key, _ = suite.owner  # type: ignore[misc]
    pg.goto(f"{suite.start().url}/?study={key}")
    sv.settle(pg)
    expect(pg.locator("h3", has_text="Stored before the kills").first).to_be_visible()
    return key


def check_worker_kill(suite: Suite) -> str:
    """kill -9 of the worker importing a visitor's file."""
    from playwright.sync_api import expect

    from tests.fixtures.shapes import SHAPES

    _, _, key, digest = _owner_study(suite)
    big = _big_file(suite, "big-worker.csv", seed=1)
    ctx, pg = suite.visitor()
    stored_before = set(suite.studies())
    try:
        worker = _import_and_wait_for_work(suite, pg, big, "Killed import")
        os.kill(worker, signal.SIGKILL)
        killed_at = time.perf_counter()
        sentence = pg.locator('[data-testid="stTable"] td', has_text="worker process ended")
        expect(sentence.first).to_be_visible(timeout=120_000)
        told_s = time.perf_counter() - killed_at
        said = problems(pg)
        body = pg.inner_text("body")
    finally:
        ctx.close()
    # the next visitor
    ctx2, pg2 = suite.visitor()
    try:
        t0 = time.perf_counter()
        csv = suite.work / "files" / "next.csv"
        csv.write_bytes(SHAPES["panel-long"].file.read_bytes())
        before = set(suite.studies())
        sv.import_study(pg2, csv, "After the killed worker")
        next_s = time.perf_counter() - t0
        new = set(suite.studies()) - before
    finally:
        ctx2.close()
    _owner_opens(suite)
    same = _digest(suite.home / "studies" / key) == digest
    lost = stored_before - set(suite.studies())
    suite.figures["worker_kill"] = {
        "told_s": round(told_s, 1),
        "next_visitor_s": round(next_s, 1),
        "said": said,
    }
    broken = []
    if len(said) != 1 or _said(said[0]):
        broken.append(f"the visitor read {said[:2]}")
    if "error id" in body or "Something went wrong" in body:
        broken.append("an error id on the page")
    if len(new) != 1 or next_s > NEXT_VISITOR_S:
        broken.append(f"the next visitor's import: {len(new)} studies in {next_s:.0f} s")
    if not same or lost:
        broken.append(f"stored studies changed ({sorted(lost)} lost)")
    detail = (
        f"told in {told_s:.1f} s ({said[0][:60] if said else ''!r}); next visitor imported "
        f"in {next_s:.1f} s; {len(stored_before)} stored studies intact, the owner's opens"
    )
    require(not broken, "; ".join(broken) + f" ({detail})")
    return detail


def check_server_kill(suite: Suite) -> str:
    """kill -9 of the server while a worker imports, then a restart on the same folder."""
    _owner_study(suite)
    srv = suite.start()
    big = _big_file(suite, "big-server.csv", seed=2)
    keep = {k: _digest(suite.home / "studies" / k) for k in suite.studies()}
    ctx, pg = suite.visitor()
    try:
        _import_and_wait_for_work(suite, pg, big, "Import under a crash")
        os.kill(srv.pid, signal.SIGKILL)
        t0 = time.perf_counter()
    finally:
        ctx.close()
    orphans = _processes_of(suite.home)
    while orphans and time.perf_counter() - t0 < ORPHANS_S:
        time.sleep(0.2)
        orphans = _processes_of(suite.home)
    orphans_s = time.perf_counter() - t0
    suite.drop_server()
    t1 = time.perf_counter()
    suite.start()
    restart_s = time.perf_counter() - t1
    after = set(suite.studies())
    changed = [
        k for k, d in keep.items() if k not in after or _digest(suite.home / "studies" / k) != d
    ]
    new = sorted(after - set(keep))
    staging = [f for f in sv.stored(suite.home)[0] if f.startswith(".import-")]
    _owner_opens(suite)
    suite.figures["server_kill"] = {
        "orphans_left": orphans,
        "orphans_gone_s": round(orphans_s, 1),
        "restart_ready_s": round(restart_s, 1),
        "changed": changed,
        "new_after_crash": new,
        "staging_left": staging,
    }
    broken = []
    if orphans:
        broken.append(f"{len(orphans)} workers still running {ORPHANS_S:g} s after the crash")
    if changed:
        broken.append(f"stored studies changed: {changed}")
    detail = (
        f"workers gone {orphans_s:.1f} s after; restarted, ready in {restart_s:.0f} s; "
        f"{len(keep)} stored studies byte-identical, the owner's opens (cookie signed "
        f"before the crash); the crashed import {'saved whole' if new else 'not saved'}"
        + (f", {len(staging)} staging folder left" if staging else "")
    )
    require(not broken, "; ".join(broken) + f" ({detail})")
    return detail


def check_sigterm(suite: Suite) -> str:
    """SIGTERM: exit status 0, nothing of the data folder left running, a clean log."""
    srv = suite.start()
    workers = sv.workers(srv.pid)
    text_before = srv.log.read_text(errors="replace")
    seconds = sv.sigterm(srv.pid)
    status = None
    if seconds != float("inf"):
        _, raw = os.waitpid(srv.pid, 0)  # the streamlit_server fixture started it here
        status = os.waitstatus_to_exitcode(raw)
    time.sleep(1.0)  # a worker that was being spawned as the server stopped
    left = _processes_of(suite.home)
    tail = srv.log.read_text(errors="replace")[len(text_before) :]
    suite.drop_server()
    suite.figures["sigterm"] = {
        "seconds": seconds,
        "status": status,
        "workers_before": len(workers),
        "left": left,
        "log_after": tail[-2000:],
    }
    broken = []
    if seconds == float("inf"):
        broken.append("still running 30 s after SIGTERM")
    if status != 0:
        broken.append(f"exit status {status}")
    if left:
        broken.append(f"{len(left)} processes of its data folder left")
    if "Traceback" in tail:
        line = [x for x in tail.splitlines() if x.strip()][-1]
        broken.append(f"a traceback in the log ({line.strip()[:60]})")
    detail = (
        f"gone in {seconds:.2f} s, exit status {status}; {len(workers)} workers before, "
        f"{len(left)} processes left"
    )
    require(not broken, "; ".join(broken) + f" ({detail})")
    return detail + "; log clean"


def check_visitors(suite: Suite) -> str:
    """The concurrent-visitors workload in shared mode (its own server and folder)."""
    from concurrent_visitors import checks_hold  # tests/benchmarks/concurrent_visitors.py

    n = 4 if suite.quick else 16
    out = suite.work / "visitors.json"
    cmd = [sys.executable, str(BENCH / "concurrent_visitors.py"), "--visitors", str(n)]
    cmd += ["--answers", "5", "--shared", "--json", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if not out.exists():
        lines = (run.stderr or run.stdout).strip().splitlines()
        raise Broken(f"no figures (exit status {run.returncode}): {lines[-1] if lines else ''}")
    res = json.loads(out.read_text())
    suite.figures["visitors"] = {k: v for k, v in res.items() if k != "runs"}
    p95 = res["server_p95"]
    detail = (
        f"{res['stored_answers']}/{res['expected_answers']} stored, {res['mixed']} mixed, "
        f"{res['duplicated']} duplicated, {res['visitors_seeing_own_answers_after_reload']}/"
        f"{n} own after reload; server p50 {res['server_p50']} s, p95 {p95} s; load "
        f"{res['loadavg_before'][0]:.1f} -> {res['loadavg_after'][0]:.1f}"
    )
    require(checks_hold(res) and p95 is not None and p95 <= P95_S, detail)
    return detail


# ----------------------------------------------------------------------------- the run
def checks(suite: Suite, groups: Sequence[str]) -> Iterator[tuple[str, Callable[[], str]]]:
    """The checks of ``groups``, in order: (row name, the check)."""
    if "corpus" in groups:
        page: dict[str, Any] = {}
        for case in CORPUS:
            yield case.check, lambda case=case: check_upload(suite, case, page)
        yield "the health check after the corpus", lambda: _health(suite, page)
    if "fields" in groups:
        yield "5,000-character condition on the form", lambda: check_condition_on_form(suite)
        yield "5,000-space condition in a recipe", lambda: check_condition_in_recipe(suite)
        yield (
            "import-study --available-when 5,000 spaces",
            lambda: check_condition_on_command(suite),
        )
        yield "recipes: wrong types, unlisted codec", lambda: check_bad_recipes(suite)
        yield "Markdown links and an image in fields", lambda: check_markdown_fields(suite)
    if "worker" in groups:
        yield "kill -9 of the importing worker", lambda: check_worker_kill(suite)
    if "server" in groups:
        yield "kill -9 of the server mid-import, restart", lambda: check_server_kill(suite)
    if "sigterm" in groups:
        yield "SIGTERM", lambda: check_sigterm(suite)
    if "visitors" in groups:
        n = 4 if suite.quick else 16
        yield f"{n} visitors x 5 answers", lambda: check_visitors(suite)


def _health(suite: Suite, page: dict[str, Any]) -> str:
    """The server still answers its health check and a new visitor's page after the
    corpus (and the corpus's visitor leaves)."""
    import urllib.request

    if "ctx" in page:
        page["ctx"].close()
    srv = suite.start()
    with urllib.request.urlopen(f"{srv.url}/_stcore/health", timeout=10) as r:
        require(r.read().strip() == b"ok", "the health check did not say ok")
    ctx, pg = suite.visitor()
    try:
        open_form(pg)
    finally:
        ctx.close()
    return f"ok; a new visitor's form opens; {len(suite.studies())} studies stored (none)"


def run(groups: Sequence[str], quick: bool) -> tuple[list[Row], dict[str, Any]]:
    """Run the checks of ``groups`` on a fresh server; the rows and the figures."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dtpbo-red-team-") as tmp:
        suite = Suite(Path(tmp), quick)
        try:
            for name, check in checks(suite, groups):
                log(f"{name} ...")
                with contextlib.redirect_stdout(sys.stderr):
                    row = run_check(name, check)
                log(f"{name}: {'held' if row.held else 'BROKEN'} in {row.seconds:.1f} s")
                rows.append(row)
        finally:
            with contextlib.suppress(Exception):
                if suite.owner is not None:
                    suite.owner[0].close()
            suite.close()
    return rows, suite.figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="4 visitors, 6 MB imports for the kills")
    ap.add_argument("--json", metavar="PATH", help="write the rows and figures ('-': stderr)")
    ap.add_argument(
        "--only",
        default=",".join(GROUPS),
        help=f"comma-separated groups to run (default all: {','.join(GROUPS)})",
    )
    args = ap.parse_args(argv)
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown:
        ap.error(f"unknown group(s) {', '.join(unknown)}; choose from {', '.join(GROUPS)}")
    started = datetime.datetime.now().astimezone()
    load_before = os.getloadavg()
    rows, figures = run(groups, args.quick)
    load_after = os.getloadavg()
    print(table(rows), flush=True)
    log(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
        f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}"
    )
    if args.json:
        doc = {
            "started": started.isoformat(timespec="seconds"),
            "command": shlex.join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]),
            "quick": args.quick,
            "groups": groups,
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in load_after],
            "cpus": os.cpu_count(),
            "rows": [asdict(r) for r in rows],
            "figures": figures,
        }
        text = json.dumps(doc, indent=1, default=str)
        if args.json == "-":
            print(text, file=sys.stderr)
        else:
            Path(args.json).write_text(text)
    return exit_code(rows)


if __name__ == "__main__":
    if str(BENCH) not in sys.path:  # the other benchmarks, imported by name
        sys.path.insert(0, str(BENCH))
    raise SystemExit(main())
