"""DT-PBO Explorer dashboard (Streamlit entry point).

Run with ``make run`` (or ``streamlit run dashboard/app.py``). The page modules grow as
their back ends land; this home page already fits a DT-PBO tree live on a benchmark.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from pbo_core.benchmarks import PAPER_FUNCTIONS, get_benchmark
from pbo_core.loop import Problem, run_pbo
from pbo_core.strategies import METHODS, make_strategy


@st.cache_data(show_spinner="Running DT-PBO...")
def _run(function: str, method: str, seed: int, iters: int) -> tuple[np.ndarray, np.ndarray, int]:
    res = run_pbo(
        Problem.from_benchmark(get_benchmark(function)),
        make_strategy(method),
        n_iter=iters,
        seed=seed,
    )
    return res.regret, np.cumsum(res.time), int(res.n_leaves[-1])


def main() -> None:
    """Home page."""
    st.set_page_config(page_title="DT-PBO Explorer", layout="wide")
    st.title("DT-PBO Explorer")
    st.write(
        "Interpretable preferential Bayesian optimisation: a decision tree learned directly "
        "from pairwise comparisons, with Laplace-approximated Gaussian leaves and qEUBO."
    )
    c1, c2, c3, c4 = st.columns(4)
    function = c1.selectbox("Benchmark", PAPER_FUNCTIONS, index=PAPER_FUNCTIONS.index("branin"))
    method = c2.selectbox("Method", list(METHODS), index=0)
    seed = int(c3.number_input("Seed", min_value=0, value=0, step=1))
    iters = int(c4.slider("Queries", 10, 200, 100, step=10))
    regret, cum_time, leaves = _run(function, method, seed, iters)
    st.metric(
        "Final regret", f"{regret[-1]:.4g}", help="optimum minus utility of the recommendation"
    )
    st.caption(f"{leaves} leaves after {iters} queries; run time {cum_time[-1]:.2f} s")
    st.line_chart({"regret": regret}, x_label="query", y_label="regret")


main()
