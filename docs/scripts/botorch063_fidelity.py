"""KappaSharp on the paper's own stack, BoTorch 0.6.3 (docs/fidelity.md round four).

Command (from the repository root, in the project's environment; niced, resumable)::

    PYTHONPATH=. nice -n 19 python docs/scripts/botorch063_fidelity.py --seeds 30 --jobs 2

It

1. builds a separate virtual environment (``--env``, default
   ``$DTPBO_DATA_HOME/fidelity-env-botorch063``, ``~/.cache/dtpbo/...`` without it; never
   the project's ``.venv``) with BoTorch 0.6.3 and the gpytorch, torch and numpy/scipy of
   its era from the package registry (:data:`PINS`); an existing environment with those
   versions is reused;
2. makes the paper's initial designs (``pool_n6_k15``: 6 Latin-hypercube points, all 15
   pairs) with the project's :func:`pbo_core.loop.initial_design` and ``run_pbo``'s random
   streams, so seed ``s`` starts from the same comparisons as round three's seed ``s``;
3. runs, in that environment, ``docs/scripts/botorch063_worker.py`` once per (function,
   method, seed): DTLZ2-16D and Levy-10D, T = 50 queries, sigma = 0.1, ``plain``
   (PairwiseGP + analytic EUBO) and ``static`` (Static KappaSharp on that PairwiseGP, the
   project's hook ported to 0.6.3), paired by seed (the same design and oracle stream);
   every row, with one record per hyperparameter fit (outcome, failed tries, lengthscales,
   outputscale), is appended to the JSONL file ``--out``; finished (function, method, seed)
   rows are skipped, so the command resumes;
4. prints the summary table (:func:`summarize`): final best utility mean and s.e. per cell,
   the gain of ``static`` over ``plain`` on the means, the paired difference with its
   paired t test over the seeds both methods finished, and the fit outcomes.

``--summary-only`` prints the table of an existing JSONL file and needs neither torch nor
the environment; ``--build-only`` builds the environment and stops.

Versions (:data:`PINS`): BoTorch 0.6.3 (2022-03) was released against torch ~1.11 and
gpytorch 1.6. torch 1.11 and 1.12 have no wheel for CPython 3.11 (this machine's Python);
the oldest torch with one is 1.13.0, which BoTorch 0.6.3 (``torch>=1.9``) and gpytorch
1.6.0 accept, so that is what runs. PyPI's Linux wheel of torch 1.13.0 is the CUDA 11.7
build (it pulls the ``nvidia-*-cu11`` runtime wheels, about 2 GB in all); no CPU-only 1.13
wheel is on PyPI. It runs on the CPU here (there is no GPU); numpy 1.23.5, scipy 1.9.3
and scikit-learn 1.1.3 are late-2022 releases with 3.11 wheels that torch 1.13 (built
against numpy 1.x) works with. The environment used for docs/fidelity.md also holds
pyro-ppl 1.8.0 (BoTorch 0.6.3's pin), on CPython 3.11.7.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().with_name("botorch063_worker.py")

#: The separate environment's packages (module docstring: why these).
PINS = {
    "torch": "1.13.0",
    "gpytorch": "1.6.0",
    "botorch": "0.6.3",
    "numpy": "1.23.5",
    "scipy": "1.9.3",
    "scikit-learn": "1.1.3",
}
FUNCTIONS = ("dtlz2_16", "levy10")
METHODS = ("plain", "static")
INIT = "pool_n6_k15"
SIGMA = 0.1
ITERS = 50


def _data_home() -> Path:
    home = os.environ.get("DTPBO_DATA_HOME")
    return Path(home).expanduser() if home else Path.home() / ".cache" / "dtpbo"


def default_env() -> Path:
    """``$DTPBO_DATA_HOME/fidelity-env-botorch063`` (``~/.cache/dtpbo`` without it)."""
    return _data_home() / "fidelity-env-botorch063"


def default_out() -> Path:
    """``$DTPBO_DATA_HOME/results/botorch063/runs.jsonl``: the per-user data folder, never
    the checkout."""
    return _data_home() / "results" / "botorch063" / "runs.jsonl"


def env_python(env: Path) -> Path:
    return env / "bin" / "python"


def env_versions(env: Path) -> dict[str, str] | None:
    """The pinned packages' versions in ``env`` (``None`` if it has no Python)."""
    py = env_python(env)
    if not py.exists():
        return None
    code = (
        "import json, importlib.metadata as m\n"
        f"names = {list(PINS)!r}\n"
        "out = {}\n"
        "for n in names:\n"
        "    try:\n"
        "        out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError:\n"
        "        out[n] = None\n"
        "print(json.dumps(out))\n"
    )
    res = subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


def build_env(env: Path) -> dict[str, str]:
    """Create ``env`` and install :data:`PINS` with pip (kept when already there)."""
    env = env.expanduser().resolve()
    project_venv = (REPO / ".venv").resolve()
    if env == project_venv or project_venv in env.parents or env == Path(sys.prefix).resolve():
        raise SystemExit(f"refusing to install into the project's environment ({env})")
    have = env_versions(env)
    want = {k: v for k, v in PINS.items()}
    if have is not None and all(have.get(k) == v for k, v in want.items()):
        return have
    if have is None:
        env.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    pins = [f"{k}=={v}" for k, v in PINS.items()]
    print(f"installing {' '.join(pins)} into {env}", file=sys.stderr, flush=True)
    subprocess.run(
        [str(env_python(env)), "-m", "pip", "install", "--no-cache-dir", *pins], check=True
    )
    have = env_versions(env) or {}
    bad = {k: have.get(k) for k, v in want.items() if have.get(k) != v}
    if bad:
        raise SystemExit(f"the environment has other versions than pinned: {bad}")
    return have


def make_design(function: str, seed: int) -> dict:
    """The paper's initial design of ``seed`` as ``run_pbo`` draws it (project env)."""
    from pbo_core.benchmarks import get_benchmark
    from pbo_core.loop import initial_design
    from pbo_core.problem import Problem

    problem = Problem.from_benchmark(get_benchmark(function))
    rng_init = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[0])
    X0, idx0 = initial_design(problem, 15, rng_init, INIT)
    return {"X0": X0.tolist(), "idx0": idx0.tolist(), "u0": problem.utility(X0).tolist()}


def read_rows(path: Path) -> list[dict]:
    """The JSONL rows (a torn last line from a killed run is ignored)."""
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def _mean_se(v: np.ndarray) -> str:
    se = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
    return f"{v.mean():.3g} +- {se:.2g}"


def summarize(rows: list[dict]) -> list[dict]:
    """One table row per function (module docstring, step 4).

    ``plain`` and ``static`` are paired over the seeds both finished; "fits failed" counts
    fits after which 0.6.3 reported "Fitting failed on all retries" (5 failed tries; the
    model keeps the last try's hyperparameters) or raised, over both methods' runs ("of
    which raised": 0.6.3's retry raises ``RuntimeError: Error(s) in loading state_dict``
    when the failed try left the MAP buffer ``utility`` empty, after the initial
    hyperparameters have been loaded back; docs/fidelity.md round four);
    "fits at initial values" those that ended at exactly the initial hyperparameters
    (lengthscale 0.4, outputscale log 2); "median lengthscale / outputscale" is over the
    last fit of every run (median over the run's dimensions, then over runs).
    """
    from scipy import stats

    out = []
    for fn in sorted({r["function"] for r in rows}):
        cell = {
            m: {r["seed"]: r for r in rows if r["function"] == fn and r["method"] == m}
            for m in METHODS
        }
        common = sorted(set(cell["plain"]) & set(cell["static"]))
        if not common:
            continue
        y = np.array([cell["plain"][s]["final_best"] for s in common])
        x = np.array([cell["static"][s]["final_best"] for s in common])
        d = x - y
        p = float(stats.ttest_rel(x, y).pvalue) if len(d) > 1 and np.any(d != 0) else 1.0
        runs = [cell[m][s] for m in METHODS for s in common]
        fits = [f for r in runs for f in r["fits"]]
        failed = sum(f["outcome"] != "ok" for f in fits)
        crashed = sum(f["outcome"] == "error" for f in fits)
        notpsd = sum(f.get("notpsd_tries", 0) for f in fits)
        initial = sum(bool(f.get("at_initial")) for f in fits)
        last = [r["fits"][-1] for r in runs]
        ls = np.median([np.median(f["lengthscales"]) for f in last])
        os_ = np.median([f["outputscale"] for f in last])
        ks = [f["ks"] for s in common for f in cell["static"][s]["fits"] if "ks" in f]
        active = sum(bool(k.get("active")) for k in ks)
        by_method = {
            m: sum(f["outcome"] != "ok" for s in common for f in cell[m][s]["fits"])
            for m in METHODS
        }
        out.append(
            {
                "function": fn,
                "seeds": len(common),
                "plain": _mean_se(y),
                "static": _mean_se(x),
                "gain": f"{100 * (x.mean() - y.mean()) / abs(y.mean()):+.1f} %",
                "static - plain": _mean_se(d),
                "p (paired t)": f"{p:.3f}",
                "static better": f"{int((d > 0).sum())} of {len(d)}",
                "fits failed (plain / static)": (
                    f"{failed} of {len(fits)} ({by_method['plain']} / {by_method['static']})"
                ),
                "of which raised": crashed,
                "NotPSD tries": notpsd,
                "fits at initial values": f"{initial} of {len(fits)}",
                "median lengthscale / outputscale (last fit)": f"{ls:.3g} / {os_:.3g}",
                "KS active fits": f"{active} of {len(ks)}",
                "s / run (median)": f"{np.median([r['seconds'] for r in runs]):.0f}",
            }
        )
    return out


def print_table(rows: list[dict]) -> None:
    if not rows:
        print("no paired runs yet")
        return
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def run_all(args: argparse.Namespace) -> None:
    """Steps 1-3 of the module docstring."""
    versions = build_env(args.env)
    print(f"environment {args.env}: {versions}", file=sys.stderr, flush=True)
    if args.build_only:
        return
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {(r["function"], r["method"], r["seed"], r["iters"]) for r in read_rows(out)}
    todo = [
        (fn, m, s)
        for s in range(args.seed_start, args.seed_start + args.seeds)
        for fn in args.functions
        for m in args.methods
        if (fn, m, s, args.iters) not in done
    ]
    print(f"{len(todo)} runs to do, {len(done)} rows in {out}", file=sys.stderr, flush=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH="")
    running: list[tuple[subprocess.Popen, Path, tuple, float]] = []
    tmp = Path(tempfile.mkdtemp(prefix="botorch063-"))
    designs: dict[tuple[str, int], dict] = {}

    def start(fn: str, m: str, s: int) -> None:
        if (fn, s) not in designs:
            designs[(fn, s)] = make_design(fn, s)
        job = {
            "function": fn,
            "method": m,
            "seed": s,
            "iters": args.iters,
            "sigma": SIGMA,
            "init": INIT,
            "repo": str(REPO),
            **designs[(fn, s)],
        }
        jf = tmp / f"{fn}-{m}-{s}.json"
        jf.write_text(json.dumps(job))
        proc = subprocess.Popen(
            [str(env_python(args.env)), str(WORKER), str(jf)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        running.append((proc, jf, (fn, m, s), time.time()))

    queue = list(todo)
    while queue or running:
        while queue and len(running) < args.jobs:
            start(*queue.pop(0))
        time.sleep(1.0)
        for item in list(running):
            proc, jf, key, t0 = item
            if proc.poll() is None:
                continue
            running.remove(item)
            stdout, stderr = proc.communicate()
            if proc.returncode != 0:
                print(f"{key} failed:\n{stderr[-3000:]}", file=sys.stderr, flush=True)
                continue
            row = json.loads(stdout.strip().splitlines()[-1])
            with out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            n_fail = sum(f["outcome"] != "ok" for f in row["fits"])
            print(
                f"{key}: final best {row['final_best']:.4g}, {n_fail} of {len(row['fits'])} "
                f"fits failed, {time.time() - t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            jf.unlink(missing_ok=True)


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--env", type=Path, default=default_env(), help="the separate environment")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSONL rows (default: $DTPBO_DATA_HOME/results/botorch063/runs.jsonl)",
    )
    p.add_argument("--seeds", type=int, default=30, help="seeds per cell (default 30)")
    p.add_argument("--seed-start", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--iters", type=int, default=ITERS, help="queries T (default 50)")
    p.add_argument("--functions", type=_csv, default=list(FUNCTIONS), help="dtlz2_16,levy10")
    p.add_argument("--methods", type=_csv, default=list(METHODS), help="plain,static")
    p.add_argument("--jobs", type=int, default=1, help="runs at once (default 1)")
    p.add_argument("--build-only", action="store_true", help="build the environment, stop")
    p.add_argument(
        "--summary-only", action="store_true", help="print the table of --out (no torch)"
    )
    args = p.parse_args()
    args.out = args.out if args.out is not None else default_out()
    if not args.summary_only:
        run_all(args)
        if args.build_only:
            return
    rows = [r for r in read_rows(args.out) if r["iters"] == args.iters]
    print_table(summarize(rows))


if __name__ == "__main__":
    main()
