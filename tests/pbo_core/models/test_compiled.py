"""The compiled kernels: one argument type each, and a warm-up that compiles them all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from pbo_core.models.compiled import kernel_array

ROOT = Path(__file__).resolve().parents[3]

#: In a fresh interpreter: the registry's warm-up, then real fits on read-only arrays (a
#: pandas copy-on-write view is one); prints every kernel's number of compiled signatures.
_SCRIPT = """
import json
import numpy as np
from pbo_core import registry
from pbo_core.data import PreferenceData
from pbo_core.models import linear_leaves, mixed_logit, probit, solver
from pbo_core.models.tree import kernels

def counts():
    out = {}
    for mod in (kernels, solver, linear_leaves, probit, mixed_logit):
        for name in dir(mod):
            f = getattr(mod, name)
            if hasattr(f, "py_func") and f.__module__ == mod.__name__:
                out[f"{mod.__name__}.{name}"] = len(f.signatures)
    return out

registry.warm_up()
after_warm_up = counts()
rng = np.random.default_rng(1)
X = rng.uniform(size=(30, 2))
u = X @ np.array([1.0, -1.0])
ab = rng.integers(0, 30, (200, 2))
ab = ab[ab[:, 0] != ab[:, 1]]
pairs = np.where((u[ab[:, 0]] > u[ab[:, 1]])[:, None], ab, ab[:, ::-1]).astype(np.int32)
resp = np.arange(len(pairs)) % 4
for a in (X, pairs, resp):
    a.setflags(write=False)
data = PreferenceData(X, pairs, respondent=resp, task=np.arange(len(pairs)))
for name in ("dt", "dt-linear", "dt-keep"):
    m = registry.make_model(name).fit(data)
    m.predict(X)
registry.make_model("mixed-logit", n_draws=3).fit(data).predict(X)
print(json.dumps({"warm_up": after_warm_up, "after": counts()}))
"""

#: The kernels Python calls (the others are called only by these).
ENTRY = (
    "pbo_core.models.tree.kernels.grow",
    "pbo_core.models.tree.kernels.apply",
    "pbo_core.models.solver._newton_probit_pairs_kernel",
    "pbo_core.models.solver._newton_probit_items_kernel",
    "pbo_core.models.mixed_logit._panel_kernel",
)


def test_kernel_array_copies_only_when_needed() -> None:
    a = np.arange(6, dtype=np.float64)
    assert kernel_array(a, np.float64) is a
    ro = a.copy()
    ro.setflags(write=False)
    out = kernel_array(ro, np.float64)
    assert out.flags.writeable and out.flags.c_contiguous
    np.testing.assert_array_equal(out, ro)
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]
    assert kernel_array(strided, np.float64).flags.c_contiguous
    assert kernel_array(np.arange(3, dtype=np.int32), np.int64).dtype == np.int64


def test_warm_up_compiles_every_kernel_and_readonly_input_adds_no_signature() -> None:
    r = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    warm, after = got["warm_up"], got["after"]
    assert all(warm[k] == 1 for k in ENTRY), warm  # every kernel a fit calls: compiled, once
    # the kernels only other kernels call are compiled with them (and counted on a cold
    # compile only, when not loaded from numba's disk cache)
    assert all(n <= 1 for n in warm.values()), warm
    assert after == warm  # fits on read-only int32 input compiled nothing new
