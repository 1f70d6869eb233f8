"""Convergence: regret curves from results folders, and small benchmark runs."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import _charts as charts
from dashboard import _progress as waits
from dashboard import _services as svc
from dashboard import _ui as ui
from data_loaders.cached import load_study_cached
from pbo_core import __version__
from pbo_core.benchmarks import KAPPASHARP_FUNCTIONS, PAPER_FUNCTIONS, available_benchmarks
from pbo_core.experiments.bench import run_cell, summarize
from pbo_core.experiments.rho_regret import summarize_rho_regret
from pbo_core.experiments.runner import cell_path
from pbo_core.experiments.sushi import summarize_sushi_pbo, sushi_pbo_cell
from pbo_core.explain import labels
from pbo_core.registry import get, names

st.title("Convergence")
st.caption(
    "Regret per query of each method on the benchmark functions: mean ± one standard error "
    "over runs, lower is better.",
    help="Curves from result folders written by `python -m pbo_core.bench --out DIR` and "
    "`python -m pbo_core.experiments ... --out DIR` (one Parquet file per run; the "
    "sidebar picks the folder, the function and the methods). On a fresh install a small "
    "default grid is computed on first view into your per-user data folder "
    "(`$DTPBO_DATA_HOME/results`, default `~/.cache/dtpbo/results`) and read back "
    "instantly afterwards.",
)
ui.sidebar_heading("Convergence")

# a path on the server: read below the allowed data roots only; fixed on a shared server
root = str(
    ui.path_input(
        "Results folder (searched recursively)",
        key="cv_root",
        default=svc.results_home(),
        what="results folder",
        folder=True,
        write=False,
        help="Default: the per-user data folder. Point it at any --out folder (or a "
        "parent) below an allowed data root.",
        kept="cv_root_value",  # also read (and checked again) by the hierarchy page
        container=st.sidebar,
    )
)
where = ui.shown_path(root, "results folder")


def _chart_title(text: str) -> None:
    """Chart titles as page headings: Altair titles of stacked charts can overlap."""
    st.markdown(f"**{ui.md(text)}**")


def _rel(p: Path) -> str:
    return ui.relative_folder(root, p)


def _function_label(name: str) -> str:
    tags = []
    if name in PAPER_FUNCTIONS:
        tags.append("DT-PBO")
    if name in KAPPASHARP_FUNCTIONS:
        tags.append("KappaSharp")
    return f"{name} ({', '.join(tags)})" if tags else name


def _method_text(name: str) -> str:
    """``"dt-literal: DT-PBO, Algorithm 1 literally (qEUBO only)"``: the registry's label."""
    try:
        return f"{name}: {get(name).label}"
    except KeyError:
        return name


def _methods_note(methods: list[str]) -> None:
    """What each method key in the legend is (the registry's label and description)."""
    lines = []
    for m in methods:
        try:
            spec = get(m)
        except KeyError:
            continue
        lines.append(f"- **{m}**: {spec.label} — {spec.description}")
    if lines:
        with st.expander("What the methods are", expanded=False):
            st.markdown("\n".join(lines))


def _bench_table(summary: list[dict]) -> pd.DataFrame:
    """The final-regret summary as people read it: one row per method, the budget (runs x
    queries), mean, s.d. and a 95 % t-interval rounded to its precision; regret is never
    negative, so the interval is cut at 0 (and says so)."""
    rows = []
    for r in summary:
        lo, hi = (float(v) for v in r["final_regret_ci95"])
        cut = lo < 0
        est, ci = labels.ci_text(float(r["final_regret_mean"]), max(lo, 0.0), hi)
        d = labels.ci_decimals(max(lo, 0.0), hi)
        rows.append(
            {
                "method": _method_text(r["method"]),
                "runs (seeds)": int(r["seeds"]),
                "queries per run": int(r["iters"]),
                "final regret, mean": est,
                "s.d.": f"{float(r['final_regret_sd']):.{d}f}",
                "95% CI (t, over runs)": ci + (" (cut at 0)" if cut else ""),
                "median": f"{float(r['final_regret_median']):.{d}f}",
                "time per run (median, s)": f"{float(r['time_per_run_median_s']):.2g}",
            }
        )
    return pd.DataFrame(rows)


def _budget_note(summary: list[dict]) -> None:
    """Say so when the methods shown ran different budgets (their curves end at different
    queries and their final regrets are not comparable at face value)."""
    budgets = {(int(r["seeds"]), int(r["iters"])) for r in summary}
    if len(budgets) > 1:
        each = "; ".join(
            f"{ui.md(r['method'])} {r['iters']} queries x {r['seeds']} runs" for r in summary
        )
        shortest = min(int(r["iters"]) for r in summary)
        st.warning(
            f"Unequal budgets: {each}. Compare the curves up to query {shortest}; each final "
            "regret is at the method's own last query, and fewer runs give wider intervals."
        )


def bench_curves(rows: pd.DataFrame, key: str, where: Any = None) -> None:
    """Regret and cumulative time of one function, methods toggled (the pickers in
    ``where``, e.g. the sidebar; default a row above the curves)."""
    functions = list(dict.fromkeys(rows["function"]))
    if where is None:
        c1, c2, c3 = st.columns([2, 3, 1])
    else:
        c1 = c2 = c3 = where
    fn = c1.selectbox("Function", functions, format_func=_function_label, key=f"{key}_fn")
    sub = rows[rows["function"] == fn]
    for col, label in (("init", "Initial design"), ("noise", "Noise r")):
        if col in sub.columns and sub[col].nunique() > 1:
            vals = sorted(sub[col].dropna().unique().tolist(), key=str)
            v = c1.selectbox(label, vals, key=f"{key}_{col}")
            sub = sub[sub[col] == v]
    methods = list(dict.fromkeys(sub["method"]))
    chosen = c2.multiselect("Methods", methods, default=methods, key=f"{key}_methods::{fn}")
    log_y = c3.toggle("Log scale", value=True, key=f"{key}_log")
    sub = sub[sub["method"].isin(chosen)]
    if sub.empty:
        st.info("Choose at least one method.")
        return
    reg = svc.mean_se(sub, ["method", "step"], "regret")
    _chart_title(f"{fn}: regret")
    st.altair_chart(
        charts.band_chart(
            reg,
            x="step",
            color="method",
            x_title="query",
            y_title="regret (optimum − utility of the recommendation, mean ± s.e.)",
            log_y=log_y,
        ),
        width="stretch",
    )
    cum = svc.mean_se(sub, ["method", "step"], "cum_time_s")
    _chart_title(f"{fn}: cumulative run time")
    st.altair_chart(
        charts.band_chart(
            cum,
            x="step",
            color="method",
            x_title="query",
            y_title="cumulative run time (s)",
            height=220,
        ),
        width="stretch",
    )

    summary = summarize(sub)
    _budget_note(summary)
    st.dataframe(_bench_table(summary), hide_index=True, width="stretch")
    _methods_note(chosen)


tab_bench, tab_rho, tab_sushi, tab_run = ui.lazy_tabs(
    ["Benchmarks", "rho-regret", "Sushi", "Run a small benchmark"], key="cv_view"
)
# default grids compute in a worker process (a progress bar here); the tab fills in after
bench_ready = not tab_bench.open or ui.ensure_default_grids(root, ["bench"], "benchmark grid")
rho_ready = not tab_rho.open or ui.ensure_default_grids(
    root, ["rho-pmr-demo", "rho-train"], "rho-regret grids"
)
folders = svc.result_folders(root)
kinds = {f: svc.result_kind(svc.read_results(f)) for f in folders}
unreadable = [f"{f.name}/{name}" for f in folders for name in svc.unreadable_results(f)]
if unreadable:  # one corrupt cell file does not take the page down: skipped, named here
    st.warning(
        f"{len(unreadable)} result file{'s' if len(unreadable) != 1 else ''} could not be "
        f"read and {'were' if len(unreadable) != 1 else 'was'} skipped (corrupt or "
        f"truncated; run its grid again): {ui.md(', '.join(unreadable[:10]))}"
        + (f" and {len(unreadable) - 10} more" if len(unreadable) > 10 else "")
        + "."
    )

if tab_bench.open:
    with tab_bench:
        bench_folders = [f for f in folders if kinds[f] == "bench"]
        if not bench_folders and not bench_ready:
            pass  # the default grid's progress is drawn above
        elif not bench_folders:
            st.info(
                f"No benchmark results in {where}. Create some with\n\n"
                "`python -m pbo_core.bench --functions branin,levy --methods dt,gp --seeds 5 "
                "--iters 100 --out results/bench`\n\n"
                "(KappaSharp grids: `--functions levy10,ackley8 --init pool_n6_k15`), or use "
                "the **Run a small benchmark** tab."
            )
        else:
            folder = st.sidebar.selectbox(
                "Result folder", bench_folders, format_func=_rel, key="cv_folder"
            )
            rows = svc.read_results(folder)
            st.sidebar.caption(
                f"{len(rows):,} rows; {rows.groupby(['function', 'method', 'seed']).ngroups} runs."
            )
            bench_curves(rows, "cv_b", where=st.sidebar)

if tab_rho.open:
    with tab_rho:
        st.markdown(
            "**rho-regret** (DT-PBO App. G.1): how far the predicted top 3 is from the true "
            "top 3 after each question (0 = the three best items found and ranked "
            'correctly). *PMR demo triage* asks "which message is more urgent?" about '
            "the messages of one inbox and scores against the demo's ground-truth urgency "
            "model. *Simulated respondents* (train, electricity, swissmetro) are the "
            "standard simulation design of adaptive-conjoint research: each respondent's "
            "true utility is a per-respondent logit model fitted on that real respondent's "
            "answers, and the items are alternatives of that study; the curves measure query "
            "efficiency against this realistic population, not against the real people."
        )
        rho_folders = [f for f in folders if kinds[f] == "rho-regret"]
        if not rho_folders and not rho_ready:
            pass  # the default grids' progress is drawn above
        elif not rho_folders:
            st.info(
                f"No rho-regret results in {where}. Create some with "
                "`python -m pbo_core.experiments rho-regret --study pmr-demo --out "
                "results/rho-pmr` (studies: pmr-demo, train, electricity, swissmetro, sushi-a)."
            )
        else:
            folder = st.selectbox("Result folder", rho_folders, format_func=_rel, key="cv_rfolder")
            rows = svc.read_results(folder)
            study_name = ", ".join(sorted(rows["study"].astype(str).unique()))
            methods = list(dict.fromkeys(rows["method"]))
            chosen = st.multiselect("Methods", methods, default=methods, key=f"cv_rm::{folder}")
            sub = rows[rows["method"].isin(chosen)]
            if sub.empty:
                st.info("Choose at least one method.")
            else:
                runs = sub.groupby(["method", "unit", "seed"]).ngroups
                st.caption(f"{ui.md(study_name)}: {runs} runs ({sub['unit'].nunique()} units).")
                _chart_title(f"{study_name}: rho-regret (top 3) per question")
                st.altair_chart(
                    charts.band_chart(
                        svc.mean_se(sub, ["method", "question"], "rho_regret"),
                        x="question",
                        color="method",
                        x_title="question",
                        y_title="rho-regret (mean ± s.e.)",
                    ),
                    width="stretch",
                )
                summ = summarize_rho_regret(sub)["methods"]
                st.dataframe(
                    pd.DataFrame(
                        [
                            {
                                "method": _method_text(m),
                                "runs": d["runs"],
                                "questions": d["question"][-1],
                                "final rho-regret": labels.ci_text(
                                    d["rho_regret_mean"][-1], *d["rho_regret_ci95"][-1]
                                )[0],
                                "95 % CI": labels.ci_text(
                                    d["rho_regret_mean"][-1],
                                    max(d["rho_regret_ci95"][-1][0], 0.0),
                                    d["rho_regret_ci95"][-1][1],
                                )[1],
                                "favourite ranked first": f"{100 * d['final_top1_found']:.0f}%",
                            }
                            for m, d in summ.items()
                        ]
                    ),
                    hide_index=True,
                )
                _methods_note(chosen)

if tab_sushi.open:
    with tab_sushi:
        sushi_folders = [f for f in folders if kinds[f] == "sushi-pbo"]
        if sushi_folders:
            folder = st.selectbox(
                "Result folder", sushi_folders, format_func=_rel, key="cv_sfolder"
            )
            rows = svc.read_results(folder)
            c1, c2 = st.columns([1, 3])
            metric = c1.radio(
                "Metric",
                ["rho_regret", "top1_error"],
                format_func={"rho_regret": "rho-regret", "top1_error": "top-1 rank error"}.get,
                key="cv_smetric",
            )
            methods = list(dict.fromkeys(rows["method"]))
            chosen = c2.multiselect("Methods", methods, default=methods, key="cv_smethods")
            sub = rows[rows["method"].isin(chosen)]
            if sub.empty:
                st.info("Choose at least one method.")
            else:
                st.caption(f"{sub['user'].nunique():,} users.")
                _chart_title(f"Sushi set A: {metric.replace('_', ' ')} per question")
                st.altair_chart(
                    charts.band_chart(
                        svc.mean_se(sub, ["method", "question"], metric),
                        x="question",
                        color="method",
                        x_title="question",
                        y_title=metric.replace("_", " "),
                    ),
                    width="stretch",
                )
                t = sub.sort_values("question").copy()
                t["cum_time_s"] = t.groupby(["user", "method"])["time_s"].cumsum()
                _chart_title("cumulative run time")
                st.altair_chart(
                    charts.band_chart(
                        svc.mean_se(t, ["method", "question"], "cum_time_s"),
                        x="question",
                        color="method",
                        x_title="question",
                        y_title="cumulative run time (s)",
                        height=220,
                    ),
                    width="stretch",
                )
                summ = summarize_sushi_pbo(sub)["methods"]
                st.dataframe(
                    pd.DataFrame(
                        [
                            {
                                "method": m,
                                "users": d["users"],
                                "favourite found by question 9": d.get("share_found_by_question_9"),
                                "final rho-regret": d["rho_regret_mean"][-1],
                            }
                            for m, d in summ.items()
                        ]
                    ),
                    hide_index=True,
                )
        else:
            st.info(f"No Sushi results (`experiments sushi-pbo --out`) in {where}.")
            status = svc.study_status("sushi-a")
            if not status.usable:
                ui.unavailable("sushi-a", "The Sushi convergence curves")
            elif svc.shared_server():  # runs are the operator's (docs/shared-server.md)
                st.caption(
                    "On a shared server its administrator runs the experiment (`python -m "
                    "pbo_core.experiments sushi-pbo --out` into the server's results folder)."
                )
            else:
                st.markdown(
                    "Sushi is configured: run the experiment here on a few users (or on the "
                    "command line: `python -m pbo_core.experiments sushi-pbo --users 500 --jobs 4 "
                    "--out results/sushi-pbo`)."
                )
                c1, c2, c3 = st.columns(3)
                n_users = c1.number_input("Users", 5, 5000, 30, step=5, key="cv_s_users")
                iters = c2.number_input("Questions after the first", 1, 44, 20, key="cv_s_iters")
                meths = c3.multiselect(
                    "Methods",
                    names(role="sushi_pbo"),
                    default=["dt", "dt-random"],
                    key="cv_s_methods",
                )
                if st.button("Run sushi-pbo", key="cv_s_run", disabled=not meths):
                    # name the folder explicitly: the experiment caches studies per folder
                    data_dir = dict(status.options).get("data_dir") or os.environ.get(
                        "DTPBO_SUSHI_DIR"
                    )
                    base = {"version": __version__, "seed": 0}
                    if data_dir:
                        base["data_dir"] = data_dir
                    cells = [
                        dict(base, user=u, method=m, iters=int(iters), n_init=1)
                        for u in range(int(n_users))
                        for m in meths
                    ]
                    out = svc.output_folder(root, "sushi-pbo")  # below the data folder
                    st.session_state["cv_s_job"] = {"cells": cells, "out": str(out), "new": True}
                sushi_run = st.session_state.get("cv_s_job")
                if sushi_run is not None:  # a worker process runs it (a progress bar here)
                    job = svc.grid_job(
                        "sushi-pbo",
                        sushi_run["cells"],
                        partial(sushi_pbo_cell, load_study=load_study_cached),
                        sushi_run["out"],
                        f"Running sushi-pbo ({len(sushi_run['cells'])} runs)",
                        again=sushi_run.pop("new", False),
                    )
                    if waits.result(job, key="cv_s_wait") is not None:
                        del st.session_state["cv_s_job"]
                        st.rerun()  # the tab now finds the results

if tab_run.open:
    with tab_run:
        if svc.shared_server():  # benchmark runs are server configuration here
            st.info(
                "On a shared server benchmark runs are its administrator's: `python -m "
                "pbo_core.bench --out` into the server's results folder, whose curves the "
                "Benchmarks tab shows."
            )
            st.stop()  # the last part of the page
        st.markdown(
            "Run DT-PBO and baselines on a bundled benchmark function. Each run is stored in "
            "the chosen folder in the format of `python -m pbo_core.bench --out` (finished runs "
            "are skipped when you run again)."
        )
        functions = available_benchmarks()
        c1, c2 = st.columns(2)
        fn = c1.selectbox(
            "Function",
            functions,
            index=functions.index("branin"),
            format_func=_function_label,
            key="cv_r_fn",
        )
        methods = [m for m in names(pbo=True) if not m.startswith("botorch")]
        chosen = c2.multiselect("Methods", methods, default=["dt", "gp"], key="cv_r_methods")
        c1, c2, c3 = st.columns(3)
        seeds = c1.slider("Seeds", 1, 10, 3, key="cv_r_seeds")
        iters = c2.slider("Queries", 5, 200, 50, step=5, key="cv_r_iters")
        n_init = c3.slider("Initial pairs", 1, 40, 20, key="cv_r_ninit")
        out_dir = ui.path_input(  # written: below the data folder only
            "Write to",
            key=f"cv_r_out::{root}",
            default=svc.output_folder(root, "dashboard-bench"),
            what="output folder",
            folder=True,
            write=True,
        )
        if st.button("Run", key="cv_r_run", type="primary", disabled=not chosen):
            out = Path(out_dir).expanduser()
            cells = [
                {
                    "function": fn,
                    "method": m,
                    "seed": s,
                    "iters": int(iters),
                    "n_init": int(n_init),
                    "noise": 0.0,
                    "version": __version__,
                }
                for m in chosen
                for s in range(seeds)
            ]
            skipped = sum(cell_path(out, c).exists() for c in cells)
            st.session_state["cv_r_job"] = {
                "cells": cells,
                "out": str(out),
                "skipped": skipped,
                "new": True,
            }
        bench_run: dict[str, Any] | None = st.session_state.get("cv_r_job")
        if bench_run is not None:  # a worker process runs it (a progress bar here)
            n_cells, skipped = len(bench_run["cells"]), bench_run["skipped"]
            job = svc.grid_job(
                "bench-run",
                bench_run["cells"],
                run_cell,
                bench_run["out"],
                f"Running the benchmark ({n_cells} runs)",
                again=bench_run.pop("new", False),
                steps=int(bench_run["cells"][0]["iters"]) + 1,  # queries and the design
            )
            if waits.result(job, key="cv_r_wait") is not None:
                del st.session_state["cv_r_job"]
                st.success(
                    f"{n_cells - skipped} run(s) written to "
                    f"{ui.shown_path(bench_run['out'], 'output folder')}"
                    + (f"; {skipped} already there" if skipped else "")
                    + "."
                )
        out = Path(out_dir).expanduser()
        if out.is_dir() and any(out.glob("cell-*.parquet")):
            rows = svc.read_results(out)
            if len(rows) and svc.result_kind(rows) == "bench":
                st.markdown(f"#### Results in {ui.shown_path(out_dir, 'output folder')}")
                bench_curves(rows, "cv_out")
