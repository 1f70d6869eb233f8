"""Benchmark grids: cells, summaries and the ``python -m pbo_core.bench`` command.

Runs every (function, method, seed) cell of a grid with :func:`pbo_core.loop.run_pbo`,
in parallel with joblib, and prints a summary per (function, method). With ``--out`` the
per-step rows go to Parquet files in that folder and finished cells are skipped when the
command is run again (see :mod:`pbo_core.experiments.runner`).

Example::

    python -m pbo_core.bench --functions all --methods dt,dt-literal --seeds 5 \\
        --iters 200 --out results/bench --json -
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from itertools import product
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import t as student_t
from scipy.stats import ttest_rel

from pbo_core import __version__
from pbo_core.benchmarks import PAPER_FUNCTIONS, available_benchmarks, get_benchmark
from pbo_core.experiments.runner import Cell, cell_key, progress_printer, run_grid, write_json
from pbo_core.loop import INIT_DESIGNS, RunResult, parse_init, run_pbo
from pbo_core.models.gp import FIDELITY_VARIANTS, variant_options
from pbo_core.problem import Problem
from pbo_core.registry import make_strategy, names

__all__ = [
    "SWEEP_PARAMS",
    "activation_summary",
    "build_parser",
    "main",
    "mean_ci",
    "run_cell",
    "runtime_summary",
    "summarize",
]


#: Optional cell parameters (present in a cell's key only when set on the command line).
#: ``ratio`` / ``max_depth``: DT surrogate (F.4 / F.7); ``dim``: function dimension (F.5);
#: ``ks_tau`` / ``ks_alpha``: KappaSharp threshold and calibration exponent; ``eubo``:
#: ``"paper"`` for KappaSharp's EUBO optimiser settings (4 restarts, 32 raw samples);
#: ``botorch_priors`` / ``gp_priors``: hyperparameter priors of BoTorch's and our GP;
#: ``gp_variant``: BoTorch 0.6-era behaviours of our GP (``FIDELITY_VARIANTS``).
SWEEP_PARAMS = (
    "dim",
    "noise",
    "ratio",
    "max_depth",
    "ks_tau",
    "ks_alpha",
    "eubo",
    "botorch_priors",
    "gp_priors",
    "gp_variant",
)

#: Strategy options taken from a cell (cell key -> :func:`make_strategy` keyword).
_STRATEGY_OPTIONS = {
    "ratio": "ratio",
    "max_depth": "max_depth",
    "ks_tau": "tau",
    "ks_alpha": "alpha",
    "eubo": "eubo",
    "botorch_priors": "priors",
    "gp_priors": "priors",
    "gp_variant": "variant",
}


def run_cell(cell: Cell, callback: Callable[[int, RunResult], None] | None = None) -> pd.DataFrame:
    """One benchmark run as tidy per-step rows.

    Parameters
    ----------
    cell
        Keys ``function``, ``method``, ``seed``, ``iters``, ``n_init`` and optionally
        ``noise`` (default 0), ``noise_sigma``, ``init`` (default ``"lhs"``) and the sweep
        parameters of :data:`SWEEP_PARAMS` (``dim``, ``ratio``, ``max_depth``, ``ks_tau``,
        ``ks_alpha``, ``eubo``).
    callback
        ``callback(step, partial_result)`` after every step (progress bars).

    Returns
    -------
    pandas.DataFrame
        One row per step. Methods with KappaSharp also get the activation trace per step:
        ``ks_score`` (decisiveness of the latest comparison), ``ks_ema`` (its moving
        average), ``ks_active`` (whether the correction shaped that step's fit),
        ``ks_eta`` and ``ks_step`` (Algorithm 1's ``t``: row step 0, the fit after the
        initial design, is ``t = 1``).
    """
    dim = cell.get("dim")
    f = get_benchmark(cell["function"], dim=None if dim is None else int(dim))
    problem = Problem.from_benchmark(f)
    sigma = cell.get("noise_sigma")
    noise = float(cell.get("noise", 0.0))
    options = {kw: cell[key] for key, kw in _STRATEGY_OPTIONS.items() if cell.get(key) is not None}
    strategy = make_strategy(cell["method"], **options)
    res = run_pbo(
        problem,
        strategy,
        n_init=int(cell["n_init"]),
        n_iter=int(cell["iters"]),
        seed=int(cell["seed"]),
        noise_r=noise,
        noise_sigma=None if sigma is None else float(sigma),
        init=str(cell.get("init", "lhs")),
        method=cell["method"],
        callback=callback,
    )
    df = res.to_frame().rename(columns={"problem": "function"})
    df.insert(2, "dim", f.dim)
    df["noise"] = noise
    df["noise_sigma"] = np.nan if sigma is None else float(sigma)
    df["init"] = str(cell.get("init", "lhs"))
    df["iters"] = int(cell["iters"])
    df["n_init"] = int(cell["n_init"])
    for key in SWEEP_PARAMS[2:]:
        if cell.get(key) is not None:
            df[key] = cell[key]
    failures = getattr(strategy, "fit_failures_", None)
    if failures is not None:  # hyperparameter fits that failed (BoTorch's and ours)
        df["fit_failures"] = len(failures)
    merged = getattr(strategy, "merged_items_", None)
    if merged is not None:  # our GP: duplicate items merged at the last fit
        df["merged_items"] = int(merged)
    trace = getattr(strategy, "activation_trace", None)
    if callable(trace):
        rec = trace()
        if len(rec) == len(df):
            df["ks_step"] = [int(r["step"]) for r in rec]
            df["ks_score"] = [r["decisiveness"] for r in rec]
            df["ks_ema"] = [r["ema"] for r in rec]
            df["ks_active"] = [bool(r["active"]) for r in rec]
            df["ks_eta"] = [np.nan if r["eta"] is None else float(r["eta"]) for r in rec]
    return df


def mean_ci(values: np.ndarray, level: float = 0.95) -> dict[str, Any]:
    """Mean, sd, s.e., Student-t confidence interval and median of a sample.

    Parameters
    ----------
    values
        One value per seed.
    level
        Coverage of the interval (t interval: ``mean +- t_{n-1} * se``).

    Returns
    -------
    dict
        ``mean``, ``sd`` (ddof 1), ``se``, ``ci`` ``[lo, hi]`` (``[mean, mean]`` for one
        value) and ``median``.
    """
    x = np.asarray(values, dtype=float)
    n = len(x)
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else 0.0
    se = sd / np.sqrt(n) if n > 1 else 0.0
    half = float(student_t.ppf(0.5 + level / 2.0, n - 1) * se) if n > 1 else 0.0
    return {
        "mean": mean,
        "sd": sd,
        "se": float(se),
        "ci": [mean - half, mean + half],
        "median": float(np.median(x)),
    }


def _group_keys(rows: pd.DataFrame) -> list[str]:
    """``function``, ``method``, every option that was set (``ratio``, ``max_depth``,
    ``ks_tau``, ``ks_alpha``, ``eubo``) and ``dim``/``noise`` when they take several values."""
    keys = ["function", "method"]
    for col in SWEEP_PARAMS:
        if col not in rows:
            continue
        if rows[col].nunique(dropna=False) > 1 or col not in ("dim", "noise"):
            keys.append(col)
    return keys


def _normalise(rows: pd.DataFrame) -> pd.DataFrame:
    """Swept columns as groupable values: a missing value (unset, e.g. no depth cap) is
    ``"none"``, whole-number depths and dimensions are ints."""
    rows = rows.copy()
    for col in SWEEP_PARAMS:
        if col in rows and rows[col].isna().any():
            vals = rows[col].astype(object)
            if col in ("max_depth", "dim"):
                vals = vals.map(lambda v: v if pd.isna(v) else int(v))
            rows[col] = vals.where(rows[col].notna(), "none")
    return rows


def _ordered_groups(last: pd.DataFrame, keys: list[str]) -> list[tuple[tuple, pd.DataFrame]]:
    order = {name: i for i, name in enumerate(dict.fromkeys(last["function"]))}
    m_order = {name: i for i, name in enumerate(dict.fromkeys(last["method"]))}

    def sort_key(kv: tuple[tuple, pd.DataFrame]) -> tuple:
        k = kv[0]
        rest = tuple((1, str(v), 0.0) if isinstance(v, str) else (0, "", float(v)) for v in k[2:])
        return (order[k[0]], *rest, m_order[k[1]])

    return sorted(last.groupby(keys, dropna=False), key=sort_key)


def summarize(rows: pd.DataFrame, baseline: str | None = None) -> list[dict[str, Any]]:
    """Per (function, method, swept parameters): final-regret statistics and wall time.

    Every row has ``final_regret_mean``, ``final_regret_sd`` (ddof 1; also under the older
    name ``final_regret_std``), ``final_regret_se``, ``final_regret_ci95`` (Student-t
    interval ``mean +- t_{0.975, n-1} se`` over seeds, see :func:`mean_ci`) and
    ``final_regret_median``, plus the median wall time per run. Swept parameters
    (the options of :data:`SWEEP_PARAMS` present in ``rows``; ``dim`` and ``noise`` when they
    take several values) become extra grouping keys.

    With ``baseline``, every other method also gets ``gain_pct_vs`` (percentage
    improvement of the mean final best utility over the baseline's, KappaSharp's "Gain")
    and ``p_value_vs`` (paired t-test over the seeds both ran, common random numbers).
    """
    out: list[dict[str, Any]] = []
    if rows.empty:
        return out
    rows = _normalise(rows)
    gkeys = _group_keys(rows)
    keys = [*gkeys, "seed"]
    last = rows.loc[rows.groupby(keys, dropna=False)["step"].idxmax()]
    per_run_time = rows.groupby(keys, dropna=False)["time_s"].sum()
    best = last.set_index(keys)["best_value"] if "best_value" in last else None
    for k, g in _ordered_groups(last, gkeys):
        times = per_run_time.loc[k]
        st = mean_ci(g["regret"].to_numpy())
        row: dict[str, Any] = {
            "function": k[0],
            "method": k[1],
            "dim": int(g["dim"].iloc[0]),
            **{c: _plain(v) for c, v in zip(gkeys[2:], k[2:], strict=True)},
            "seeds": int(g["seed"].nunique()),
            "iters": int(g["iters"].iloc[0]),
            "final_regret_mean": st["mean"],
            "final_regret_sd": st["sd"],
            "final_regret_std": st["sd"],
            "final_regret_se": st["se"],
            "final_regret_ci95": st["ci"],
            "ci95_method": "t",
            "final_regret_median": st["median"],
            "time_per_run_median_s": float(np.median(times.to_numpy())),
        }
        if best is not None:
            bst = mean_ci(g["best_value"].to_numpy())
            row["final_best_utility_mean"] = bst["mean"]
            row["final_best_utility_sd"] = bst["sd"]
            row["final_best_utility_se"] = bst["se"]
        if baseline is not None and best is not None and k[1] != baseline:
            bk = (k[0], baseline, *k[2:])
            try:
                b = best.loc[bk]
            except KeyError:
                b = None
            if b is not None:
                mine = best.loc[k]
                common = mine.index.intersection(b.index)
                x, y = mine.loc[common].to_numpy(), b.loc[common].to_numpy()
                row["baseline"] = baseline
                row["gain_pct_vs"] = float(100.0 * (x.mean() - y.mean()) / abs(y.mean()))
                diff = x - y
                row["p_value_vs"] = (
                    float(ttest_rel(x, y).pvalue) if len(common) > 1 and np.any(diff != 0) else 1.0
                )
        out.append(row)
    return out


def _plain(v: Any) -> Any:
    """JSON-friendly scalar (numpy -> Python)."""
    return v.item() if isinstance(v, np.generic) else v


def runtime_summary(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """Wall seconds per run (sum of the step times) per group (DT-PBO Table 5).

    Returns one dict per (function, method, swept parameters) with ``runs``,
    ``time_per_run_mean_s``, ``time_per_run_sd_s``, ``time_per_run_se_s``,
    ``time_per_run_median_s`` and ``time_per_step_mean_ms``.
    """
    if rows.empty:
        return []
    rows = _normalise(rows)
    gkeys = _group_keys(rows)
    per_run = rows.groupby([*gkeys, "seed"], dropna=False).agg(
        t=("time_s", "sum"), steps=("step", "size")
    )
    per_run = per_run.reset_index()
    out = []
    for k, g in _ordered_groups(per_run, gkeys):
        st = mean_ci(g["t"].to_numpy())
        out.append(
            {
                "function": k[0],
                "method": k[1],
                **{c: _plain(v) for c, v in zip(gkeys[2:], k[2:], strict=True)},
                "runs": len(g),
                "time_per_run_mean_s": st["mean"],
                "time_per_run_sd_s": st["sd"],
                "time_per_run_se_s": st["se"],
                "time_per_run_median_s": st["median"],
                "time_per_step_mean_ms": float(1e3 * g["t"].sum() / g["steps"].sum()),
            }
        )
    return out


def activation_summary(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """KappaSharp activation behaviour per group (KappaSharp App. F).

    For methods whose rows carry the trace (``ks_active``, ``ks_ema``): the share of steps
    with the correction active (mean and median over seeds), the first active step
    (Algorithm 1's ``t``, median over the seeds that activated; ``None`` if none did) and
    the mean EMA of the
    decisiveness score at the last step.
    """
    if rows.empty or "ks_active" not in rows:
        return []
    traced = _normalise(rows[rows["ks_active"].notna()])
    gkeys = _group_keys(traced)
    out = []
    for k, g in _ordered_groups(traced, gkeys):
        per_seed = g.groupby("seed")
        share = per_seed["ks_active"].mean().to_numpy(dtype=float)
        first = [
            int(s.loc[s["ks_active"].astype(bool), "ks_step"].min())
            for _, s in per_seed
            if s["ks_active"].astype(bool).any()
        ]
        last_ema = g.loc[g.groupby("seed")["step"].idxmax(), "ks_ema"].to_numpy(dtype=float)
        out.append(
            {
                "function": k[0],
                "method": k[1],
                **{c: _plain(v) for c, v in zip(gkeys[2:], k[2:], strict=True)},
                "seeds": len(share),
                "active_share_mean": float(share.mean()),
                "active_share_median": float(np.median(share)),
                "seeds_activated": len(first),
                "first_active_step_median": float(np.median(first)) if first else None,
                "final_ema_mean": float(last_ema.mean()),
            }
        )
    return out


def _parse_list(text: str, known: Sequence[str], what: str, all_value: Sequence[str]) -> list[str]:
    items = [t.strip().lower() for t in text.split(",") if t.strip()]
    if items == ["all"]:
        return list(all_value)
    bad = [t for t in items if t not in known]
    if bad:
        raise SystemExit(f"unknown {what}: {', '.join(bad)}; choose from {', '.join(known)}")
    return items


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(
        prog="python -m pbo_core.bench",
        description="Run preferential-BO benchmark grids and summarise final regret and time.",
    )
    p.add_argument(
        "--functions",
        default="all",
        help="comma-separated benchmark names, or 'all' for the eight DT-PBO paper functions "
        f"({', '.join(PAPER_FUNCTIONS)}); known: {', '.join(available_benchmarks())}",
    )
    p.add_argument(
        "--methods",
        default="dt",
        help=f"comma-separated methods; known: {', '.join(names(pbo=True))}",
    )
    p.add_argument("--seeds", type=int, default=5, help="number of seeds (0..N-1)")
    p.add_argument("--iters", type=int, default=200, help="queries after the initial design")
    p.add_argument("--n-init", type=int, default=20, help="initial Latin-hypercube pairs")
    p.add_argument(
        "--noise",
        default="0",
        help="probit noise r (App. F.6), or a comma grid such as 0,0.05,0.1,0.2 (Fig. 14); "
        "0 = noiseless",
    )
    p.add_argument(
        "--ratio",
        default=None,
        help="DT leaf ratio sigma_noise^2/sigma_prior^2, or a comma grid (F.4 ablation; dt "
        "methods only; default: each method's own, 1/4)",
    )
    p.add_argument(
        "--max-depth",
        default=None,
        help="DT maximum depth, or a comma grid such as 2,4,6,none (F.7 sweep; dt methods only)",
    )
    p.add_argument(
        "--dim",
        default=None,
        help="input dimension, or a comma grid (F.5 sweep; only functions defined for any "
        "dimension: rosenbrock, levy, michalewicz, schwefel, ackley, dtlz2)",
    )
    p.add_argument(
        "--ks-tau",
        default=None,
        help="KappaSharp activation threshold tau (default 0.30), or a comma grid (App. H)",
    )
    p.add_argument(
        "--ks-alpha",
        default=None,
        help="KappaSharp calibration exponent alpha (default 0.1), or a comma grid (App. I)",
    )
    p.add_argument(
        "--eubo",
        choices=("ours", "paper"),
        default=None,
        help="GP EUBO optimiser: ours (1024 raw candidate pairs, 8 L-BFGS-B restarts; "
        "default) or paper (KappaSharp App. G.2: 32 raw samples, 4 restarts)",
    )
    p.add_argument(
        "--botorch-priors",
        choices=("current", "0.6"),
        default=None,
        help="PairwiseGP hyperparameter priors of the botorch-gp* methods: current (the "
        "installed BoTorch's defaults; default) or 0.6 (BoTorch 0.6.x: lengthscale "
        "Gamma(1.2, 0.5) from 0.4, outputscale SmoothedBox(1, 4); the KappaSharp paper's stack)",
    )
    p.add_argument(
        "--gp-priors",
        choices=("current", "0.6"),
        default=None,
        help="hyperparameter priors of our gp* methods: current (BoTorch 0.18's defaults; "
        "default) or 0.6 (BoTorch 0.6.x's, as --botorch-priors 0.6)",
    )
    p.add_argument(
        "--gp-variant",
        default=None,
        help="BoTorch 0.6-era behaviours of our gp* methods, a comma grid of +-joined sets of "
        "raw (lengthscale prior on raw inputs), fallback (initial values after a failed "
        "hyperparameter fit), clamp (probit |z| <= 3), nomerge (duplicates kept); none or all",
    )
    p.add_argument(
        "--init",
        default="lhs",
        help="initial design: lhs (--n-init Latin-hypercube pairs; DT-PBO) or the KappaSharp "
        f"conditions {', '.join(INIT_DESIGNS[1:])} (any pool_n<N>_k<K> / pure_k<K>)",
    )
    p.add_argument(
        "--noise-sigma",
        type=float,
        default=None,
        help="absolute comparison noise sigma (KappaSharp Eq. 1); default 0.1 with a "
        "KappaSharp --init, none with lhs",
    )
    p.add_argument(
        "--baseline",
        default=None,
        help="method to compare the others against (gain_pct_vs, p_value_vs); default: "
        "'gp' when it is among the methods and others are too",
    )
    p.add_argument("--jobs", type=int, default=1, help="parallel workers (-1 = all cores)")
    p.add_argument("--dask-scheduler", default=None, help="run cells on this Dask scheduler")
    p.add_argument("--out", default=None, help="folder for per-step Parquet results (resumable)")
    p.add_argument("--fresh", action="store_true", help="recompute cells already in --out")
    p.add_argument("--json", default=None, metavar="PATH|-", help="write the JSON summary")
    p.add_argument("--quiet", action="store_true", help="no progress or table on stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m pbo_core.bench``."""
    args = build_parser().parse_args(argv)
    functions = _parse_list(args.functions, available_benchmarks(), "function", PAPER_FUNCTIONS)
    methods = _parse_list(args.methods, names(pbo=True), "method", names(pbo=True))
    if args.seeds < 1 or args.iters < 0 or args.n_init < 1:
        raise SystemExit("--seeds must be >= 1, --iters >= 0 and --n-init >= 1")
    try:
        parse_init(args.init, args.n_init)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    sigma = args.noise_sigma
    if sigma is None and args.init != "lhs":
        sigma = 0.1
    baseline = args.baseline
    if baseline is None and "gp" in methods and len(methods) > 1:
        baseline = "gp"
    if baseline is not None and baseline not in methods:
        raise SystemExit(f"--baseline {baseline} is not among --methods")
    noises = _grid(args.noise, float, "--noise")
    sweeps: dict[str, list[Any]] = {}
    for key, text, conv in (
        ("ratio", args.ratio, float),
        ("max_depth", args.max_depth, _depth),
        ("dim", args.dim, int),
        ("ks_tau", args.ks_tau, float),
        ("ks_alpha", args.ks_alpha, float),
    ):
        if text is not None:
            sweeps[key] = _grid(text, conv, "--" + key.replace("_", "-"))
    if args.eubo is not None:
        sweeps["eubo"] = [args.eubo]
    if args.botorch_priors is not None:
        sweeps["botorch_priors"] = [args.botorch_priors]
    if args.gp_priors is not None:
        sweeps["gp_priors"] = [args.gp_priors]
    if args.gp_variant is not None:
        sweeps["gp_variant"] = _grid(args.gp_variant, _variant, "--gp-variant")
    _check_options(functions, methods, sweeps)
    combos = [dict(zip(sweeps, vals, strict=True)) for vals in product(*sweeps.values())]
    cells = [
        {
            "function": fn,
            "method": m,
            "seed": s,
            "iters": args.iters,
            "n_init": args.n_init,
            "noise": r,
            "version": __version__,
            **({"init": args.init} if args.init != "lhs" else {}),
            **({"noise_sigma": sigma} if sigma is not None else {}),
            **{k: v for k, v in combo.items() if _applies(k, m)},
        }
        for fn in functions
        for combo in combos
        for r in noises
        for m in methods
        for s in range(args.seeds)
    ]
    # a parameter that does not apply to a method (e.g. --ratio for gp) gives duplicates
    cells = list({cell_key(c): c for c in cells}.values())

    progress = progress_printer(args.quiet, "runs")

    rows = run_grid(
        cells,
        run_cell,
        out_dir=args.out,
        jobs=args.jobs,
        dask_scheduler=args.dask_scheduler,
        fresh=args.fresh,
        progress=progress,
    )
    summary = summarize(rows, baseline)
    runtime = runtime_summary(rows)
    activation = activation_summary(rows)
    if not args.quiet:
        table = pd.DataFrame(summary).drop(columns=["final_regret_std"], errors="ignore")
        with pd.option_context("display.width", 220, "display.max_columns", 30):
            print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"), file=sys.stderr)
    out: dict[str, Any] = {"summary": summary, "runtime": runtime}
    if activation:
        out["activation"] = activation
    write_json(out, args.json)
    return 0


_DT_OPTIONS = ("ratio", "max_depth")
_GP_OPTIONS = ("ks_tau", "ks_alpha", "eubo", "gp_priors", "gp_variant")
_BOTORCH_OPTIONS = ("botorch_priors",)


def _applies(key: str, method: str) -> bool:
    """Does a sweep parameter apply to a method (DT options to ``dt*``, KS to ``gp*``)?"""
    if key in _DT_OPTIONS:
        return method.startswith("dt")
    if key in _GP_OPTIONS:
        ours_only = key in ("eubo", "gp_priors", "gp_variant")
        return method.startswith("gp") or (not ours_only and method.startswith("botorch"))
    if key in _BOTORCH_OPTIONS:
        return method.startswith("botorch")
    return True


def _check_options(functions: list[str], methods: list[str], sweeps: dict[str, list]) -> None:
    for key in sweeps:
        options = _DT_OPTIONS + _GP_OPTIONS + _BOTORCH_OPTIONS
        if key in options and not any(_applies(key, m) for m in methods):
            kind = "dt" if key in _DT_OPTIONS else ("botorch" if key in _BOTORCH_OPTIONS else "gp")
            raise SystemExit(f"--{key.replace('_', '-')} applies only to {kind} methods")
    for d in sweeps.get("dim", []):
        for fn in functions:
            try:
                get_benchmark(fn, dim=d)
            except ValueError as exc:
                raise SystemExit(f"--dim {d}: {fn}: {exc}") from None


def _variant(text: str) -> str:
    """A ``--gp-variant`` value, checked and in a canonical order (``all`` spelt out)."""
    options = variant_options(text)  # raises ValueError on unknown names
    if not options:
        return "none"
    return "+".join(k for k, v in FIDELITY_VARIANTS.items() if v.items() <= options.items())


def _depth(text: str) -> int | None:
    return None if text.lower() in ("none", "inf", "unlimited") else int(text)


def _grid(text: str, conv: Callable[[str], Any], flag: str) -> list[Any]:
    """Parse a comma grid (``0,0.1,0.2``); duplicates removed, order kept."""
    try:
        vals = [conv(t.strip()) for t in str(text).split(",") if t.strip()]
    except ValueError as exc:
        raise SystemExit(f"{flag}: {exc}") from None
    if not vals:
        raise SystemExit(f"{flag}: no values")
    return list(dict.fromkeys(vals))
