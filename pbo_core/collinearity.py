"""Attributes no model can tell apart: exact and near collinearity, constant attributes.

A choice model identifies an attribute's effect from how it *differs* between the
alternatives of a choice. When numeric attributes satisfy a linear relation in every
comparison (``total time = in-vehicle time + out-of-vehicle time``), their coefficients are
not identified: a logit then reports an arbitrary split of the effect, often with a
"significant" wrong sign. :func:`collinear_attributes` finds such relations on the
comparisons' attribute differences ``d = x_w - x_l`` (numeric and binary attributes,
each scaled to unit root mean square):

* **exact**: a singular value of the scaled difference matrix below ``exact_tol`` times
  the largest; the attributes with a non-negligible weight in its singular vector are
  named, with the relation in their own units (``"total_time = in_vehicle + out_vehicle"``);
* **near**: an attribute whose differences the others explain with ``R^2 >= near_r2``.

:func:`constant_attributes` names numeric attributes that never differ within a
comparison (their effect cannot be estimated at all). The import refuses an exact
relation and names the columns (leave one out); near relations and constant attributes
become notes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pbo_core.data import PreferenceData, Schema

__all__ = ["Collinearity", "collinear_attributes", "constant_attributes"]


@dataclass(frozen=True)
class Collinearity:
    """A linear relation among attributes (their names, exact or near, in words)."""

    attributes: tuple[str, ...]
    exact: bool
    relation: str
    r2: float

    def sentence(self) -> str:
        """One sentence for a message or a note."""
        names = ", ".join(self.attributes[:-1]) + f" and {self.attributes[-1]}"
        if self.exact:
            return (
                f"the attributes {names} are exactly collinear ({self.relation} in every "
                "comparison): no model can tell their effects apart; leave one of them out"
            )
        return (
            f"the attributes {names} are nearly collinear ({self.relation}, R² "
            f"{self.r2:.4f}): their separate effects are poorly determined; consider "
            "leaving one out"
        )


def _numeric_columns(schema: Schema) -> list[tuple[int, str]]:
    out = []
    for j, c in enumerate(schema.columns):
        f = schema.features[c.feature]
        if f.kind in ("numeric", "binary"):
            out.append((j, f.name))
    return out


def _coef_text(c: float) -> str:
    r = round(c)
    if abs(c - r) < 1e-6 * max(1.0, abs(c)):
        return "" if r == 1 else ("-" if r == -1 else f"{r:g}·")
    return f"{c:.4g}·"


def _relation(target: str, others: list[tuple[str, float]]) -> str:
    parts = []
    for k, (name, c) in enumerate(others):
        t = _coef_text(c)
        if k == 0:
            parts.append(f"{t}{name}")
        elif t.startswith("-"):
            parts.append(f"- {t[1:]}{name}")
        else:
            parts.append(f"+ {t}{name}")
    return f"{target} = " + " ".join(parts)


def collinear_attributes(
    schema: Schema,
    data: PreferenceData,
    *,
    exact_tol: float = 1e-8,
    near_r2: float = 0.999,
    weight_tol: float = 0.05,
) -> list[Collinearity]:
    """Exact and near linear relations among the numeric and binary attributes' differences
    in the comparisons of ``data`` (module doc), exact ones first."""
    cols = _numeric_columns(schema)
    if len(cols) < 2 or data.n_pairs == 0:
        return []
    idx = np.array([j for j, _ in cols])
    names = [n for _, n in cols]
    D = data.X[data.pairs[:, 0]][:, idx] - data.X[data.pairs[:, 1]][:, idx]
    rms = np.sqrt((D * D).mean(axis=0))
    live = rms > 1e-12 * max(1.0, float(np.abs(data.X[:, idx]).max(initial=0.0)))
    if live.sum() < 2:
        return []
    Ds = D[:, live] / rms[live]
    live_names = [n for n, ok in zip(names, live, strict=True) if ok]
    live_rms = rms[live]
    _, s, Vt = np.linalg.svd(Ds, full_matrices=False)
    out: list[Collinearity] = []
    seen: set[frozenset[str]] = set()
    for k in range(len(s)):
        if s[k] > exact_tol * s[0]:
            continue
        v = Vt[k]
        involved = np.flatnonzero(np.abs(v) > weight_tol * np.abs(v).max())
        if len(involved) < 2:
            continue
        c = int(involved[np.argmax(np.abs(v[involved]))])
        # sum_j v_j d_j / rms_j = 0  ->  d_c = -sum_{j != c} (v_j / rms_j) / (v_c / rms_c) d_j
        others = [
            (live_names[j], float(-(v[j] / live_rms[j]) / (v[c] / live_rms[c])))
            for j in involved
            if j != c
        ]
        key = frozenset(live_names[j] for j in involved)
        if key in seen:
            continue
        seen.add(key)
        out.append(
            Collinearity(
                tuple(live_names[j] for j in sorted(involved)),
                True,
                _relation(live_names[c], others),
                1.0,
            )
        )
    exact_names = {n for c in out for n in c.attributes}
    for c in range(Ds.shape[1]):
        name = live_names[c]
        if name in exact_names:
            continue
        rest = [j for j in range(Ds.shape[1]) if j != c and live_names[j] not in exact_names]
        if not rest:
            continue
        y = Ds[:, c]
        beta, *_ = np.linalg.lstsq(Ds[:, rest], y, rcond=None)
        resid = y - Ds[:, rest] @ beta
        r2 = 1.0 - float(resid @ resid) / float(y @ y)
        if r2 < near_r2:
            continue
        weights = np.abs(beta) * np.sqrt((Ds[:, rest] ** 2).mean(axis=0))
        keep = [rest[i] for i in np.flatnonzero(weights > weight_tol * weights.max())]
        key = frozenset([name, *(live_names[j] for j in keep)])
        if key in seen:
            continue
        seen.add(key)
        others = [
            (live_names[j], float(beta[rest.index(j)] * live_rms[c] / live_rms[j])) for j in keep
        ]
        out.append(
            Collinearity(
                tuple(sorted(key, key=live_names.index)), False, _relation(name, others), r2
            )
        )
    return out


def constant_attributes(schema: Schema, data: PreferenceData) -> list[str]:
    """Numeric and binary attributes that never differ between the two items of a
    comparison (no model can estimate their effect)."""
    cols = _numeric_columns(schema)
    if not cols or data.n_pairs == 0:
        return []
    idx = np.array([j for j, _ in cols])
    D = data.X[data.pairs[:, 0]][:, idx] - data.X[data.pairs[:, 1]][:, idx]
    return [n for (_, n), d in zip(cols, np.abs(D).max(axis=0), strict=True) if d == 0.0]
