"""Wall times of three fits whose unit tests check only what they compute.

* ``swissmetro-build``: building the bundled SwissMetro study from its parsed table
  (target < 1 s);
* ``respondent-cv-train``: the per-respondent logit, shrunk and independent, with the
  strength chosen by task CV, on the bundled Dutch train study (235 respondents; target
  < 30 s, about 1.5 s on one quiet core);
* ``item-offsets-2000``: Bradley-Terry with per-user offsets on 2,000 simulated users
  ranking 10 items (target < 60 s).

    python tests/benchmarks/fit_timings.py --json -

Exits 1 when ``--check`` is given and a row misses its target.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make the tests package importable
    sys.path.insert(0, str(ROOT))

from data_loaders import swissmetro as sm  # noqa: E402
from data_loaders.registry import load_study  # noqa: E402
from pbo_core.models.bradley_terry import ItemOffsetSurrogate  # noqa: E402
from pbo_core.models.linear import RespondentLinearSurrogate  # noqa: E402
from tests.pbo_core.models.test_bradley_terry import sushi_like  # noqa: E402


def _timed(run: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


def swissmetro_build() -> float:
    """Seconds of ``_build`` on the parsed bundled table (reading it is not timed)."""
    frame = sm.read_swissmetro()
    return _timed(
        lambda: sm._build(
            frame, str(sm.SWISSMETRO_FILE), purposes=None, ga_cost="zero", items="profiles",
            respondents=None, exclude=(),
        )
    )  # fmt: skip


def respondent_cv_train() -> float:
    """Seconds of the shrunk and the independent per-respondent fits (loading not timed)."""
    study = load_study("train")

    def both() -> None:
        RespondentLinearSurrogate(shrink=True).fit(study.data)
        RespondentLinearSurrogate().fit(study.data)

    return _timed(both)


def item_offsets_2000() -> float:
    """Seconds of the offsets fit on 2,000 simulated users (simulation not timed)."""
    data, _ = sushi_like(n_users=2000, seed=6)
    return _timed(lambda: ItemOffsetSurrogate().fit(data))


ROWS: dict[str, tuple[Callable[[], float], float]] = {
    "swissmetro-build": (swissmetro_build, 1.0),
    "respondent-cv-train": (respondent_cv_train, 30.0),
    "item-offsets-2000": (item_offsets_2000, 60.0),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated rows")
    ap.add_argument("--json", metavar="PATH|-", help="write the figures as JSON")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)
    out = []
    for name in args.rows.split(","):
        run, target = ROWS[name]
        seconds = run()
        out.append({"row": name, "seconds": round(seconds, 3), "target_s": target})
        print(f"{name:22s} {seconds:8.3f} s  (target < {target:g} s)")
    if args.json:
        text = json.dumps(out, indent=2)
        print(text) if args.json == "-" else Path(args.json).write_text(text + "\n")
    missed = [r["row"] for r in out if r["seconds"] >= r["target_s"]]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
