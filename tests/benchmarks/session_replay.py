"""What opening a session costs: replaying N answers on Electricity (every answer refits
the model), the reason a session holds at most ``dashboard._session_files.MAX_ANSWERS``.

    python tests/benchmarks/session_replay.py --methods dt,gp,dt-linear --answers 50,200 --json -
    python tests/benchmarks/session_replay.py --study train --methods gp --answers 100

Each row: method, answers, seconds to replay the answers table into a fresh session
(``ElicitationSession.from_frame``, what a stored or uploaded session costs) and the size
of its answers CSV.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from data_loaders.registry import load_study  # noqa: E402
from pbo_core.session import ElicitationSession, study_item_set  # noqa: E402


def replay_seconds(method: str, answers: int, study: str = "electricity") -> dict[str, object]:
    """Answer ``answers`` questions (a fixed A/B pattern), then time the replay."""
    warnings.simplefilter("ignore")
    s = ElicitationSession.for_items(
        **study_item_set(load_study(study), max_items=200, seed=0), strategy=method, seed=0
    )
    for k in range(answers):
        s.apply("AB"[k % 2] if k % 5 else "A")
    table = s.to_frame()
    t0 = time.perf_counter()
    ElicitationSession.from_frame(table, **s.config())
    return {
        "study": study,
        "method": method,
        "answers": answers,
        "replay_s": round(time.perf_counter() - t0, 2),
        "csv_bytes": len(table.to_csv(index=False)),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--methods", default="dt,gp,dt-linear")
    p.add_argument("--answers", default="50,200")
    p.add_argument("--study", default="electricity", help="a study key (at most 200 items)")
    p.add_argument("--json", default=None, help="write the rows as JSON ('-': stdout)")
    args = p.parse_args(argv)
    rows = [
        replay_seconds(m, int(n), args.study)
        for m in args.methods.split(",")
        for n in args.answers.split(",")
    ]
    for r in rows:
        print(r, file=sys.stderr, flush=True)
    if args.json == "-":
        print(json.dumps(rows, indent=1))
    elif args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
