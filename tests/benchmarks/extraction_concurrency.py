"""Wall time of a concurrent extraction against the scripted OpenAI-compatible server.

The unit test ``test_auto_mode_uses_full_concurrency_and_stores_the_format_at_once``
checks that the format probe is followed by all requests at the full concurrency (4 in
flight); this script times the same workload: 20 messages, every answer delayed by
``--delay`` seconds, concurrency 4. One probe, then 19 requests 4 at a time take about
6 x delay (sequentially 20 x delay); the target is 2.5 s at delay 0.2 s.

    python tests/benchmarks/extraction_concurrency.py --repeats 5 --json -

Exits 1 when ``--check`` is given and the median exceeds the target.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make the tests package importable
    sys.path.insert(0, str(ROOT))

from feature_extraction.cache import ExtractionCache  # noqa: E402
from feature_extraction.client import LLMConfig  # noqa: E402
from feature_extraction.extract import extract_features  # noqa: E402
from feature_extraction.spec import table9_spec  # noqa: E402
from tests.feature_extraction.conftest import scripted_server  # noqa: E402

SPEC = table9_spec().subset(["red_flag_syndrome", "message_actionability", "acuity_conflict"])
GOOD = {
    "red_flag_syndrome": ["syncope_or_near_syncope"],
    "message_actionability": "same_day_triage_or_call",
    "acuity_conflict": "none",
}
TARGET_S = 2.5


def one_run(base_url: str, n: int, concurrency: int, folder: Path) -> float:
    """Seconds to extract ``n`` messages with a fresh cache."""
    cfg = LLMConfig(
        base_url=base_url, model="scripted", backoff_base=0.01, timeout=5.0, api_key="x",
        max_concurrency=concurrency,
    )  # fmt: skip
    texts = {f"k{i}": f"ITEM-k{i} I fainted this morning." for i in range(n)}
    with ExtractionCache(folder / "c.sqlite") as cache:
        t0 = time.perf_counter()
        res = extract_features(texts, SPEC, cfg, cache=cache)
        seconds = time.perf_counter() - t0
    if not all(r.ok for r in res.records):
        raise RuntimeError("an extraction failed against the scripted server")
    return seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--delay", type=float, default=0.2, help="seconds per answer")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", metavar="PATH|-", help="write the figures as JSON")
    ap.add_argument("--check", action="store_true", help=f"exit 1 above {TARGET_S} s")
    args = ap.parse_args(argv)
    times = []
    with scripted_server() as server:
        for r in range(args.repeats):
            server.state.reset()
            server.state.default_answer = GOOD
            server.state.delay = args.delay
            with tempfile.TemporaryDirectory() as tmp:
                times.append(one_run(server.base_url, args.messages, args.concurrency, Path(tmp)))
            print(f"run {r + 1}: {times[-1]:.3f} s, max in flight {server.state.max_in_flight}")
    out = {
        "messages": args.messages,
        "concurrency": args.concurrency,
        "delay_s": args.delay,
        "seconds": [round(t, 3) for t in times],
        "median_s": round(statistics.median(times), 3),
        "sequential_s": round(args.messages * args.delay, 3),
        "target_s": TARGET_S,
    }
    if args.json:
        text = json.dumps(out, indent=2)
        print(text) if args.json == "-" else Path(args.json).write_text(text + "\n")
    print(f"median {out['median_s']} s (sequential would be {out['sequential_s']} s)")
    return 1 if args.check and out["median_s"] > TARGET_S else 0


if __name__ == "__main__":
    raise SystemExit(main())
