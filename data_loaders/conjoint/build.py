"""Building a conjoint :class:`~pbo_core.data.Study` from long-format choice rows.

:func:`build_from_long` is the shared pipeline behind every conjoint reader (long, wide
and the presets): it checks the rows (chosen flags, duplicate alternatives, tasks
without a choice), applies the opt-out policy and the exclusion rules, parses the
attributes, deduplicates profiles into items and turns each choice into ``k - 1``
comparisons. :func:`user_table` collects respondent-level columns; :class:`StudyMeta`
is the provenance attached to the study. Errors name the file and line (or row).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from data_loaders._common import missing_columns_error, py, quoted, where
from data_loaders.conjoint.attributes import (
    Attribute,
    is_missing,
    normalize_value,
    parse_attribute,
)
from data_loaders.conjoint.exclusions import ExclusionRule, rule_reason
from pbo_core.data import ChoiceSituations, DataValidationError, PreferenceData, Schema, Study

__all__ = ["NoChoice", "StudyMeta", "build_from_long", "parse_flags", "user_table"]

NoChoice = Literal["error", "opt_out", "drop"]


@dataclass(frozen=True)
class StudyMeta:
    """Provenance attached to a loaded study."""

    key: str = "conjoint"
    title: str = "Conjoint study"
    description: str = ""
    source: str = ""
    citation: str = ""
    license: str = ""


#: Values of a chosen flag (normalised): chosen, and not chosen.
CHOSEN_TRUE = frozenset({"1", "true", "t", "yes", "y", "chosen"})
CHOSEN_FALSE = frozenset({"0", "false", "f", "no", "n", ""})


def parse_flags(col: pd.Series, name: str, from_file: bool, column: str) -> np.ndarray:
    """Chosen flags (1/0, true/false, yes/no; empty = not chosen) as booleans.

    Raises
    ------
    DataValidationError
        For another value, naming the file and line (or row) and the column.
    """
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    flags = np.zeros(len(uniques), dtype=bool)
    for k, u in enumerate(uniques):
        if is_missing(u):
            continue
        key = normalize_value(u)
        if key in CHOSEN_TRUE:
            flags[k] = True
        elif key not in CHOSEN_FALSE:
            label = col.index[int(np.flatnonzero(codes == k)[0])]
            raise DataValidationError(
                f"{where(name, label, from_file)}: column {column!r}: {quoted(u)} is not a "
                "chosen flag (1/0, true/false, yes/no)"
            )
    return flags[codes]


#: Most ordered pairs a file of rankings may give (the sum over tasks of k^2).
MAX_RANKED_PAIRS = 5_000_000


def _parse_ranks(col: pd.Series, name: str, from_file: bool, column: str) -> np.ndarray:
    """Ranks as floats (``inf`` for an empty cell: below every given rank)."""
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    vals = np.full(len(uniques), np.inf)
    for k, u in enumerate(uniques):
        if is_missing(u) or (isinstance(u, str) and not u.strip()):
            continue
        try:
            x = float(u)
        except (TypeError, ValueError):
            x = float("nan")
        if not np.isfinite(x):
            label = col.index[int(np.flatnonzero(codes == k)[0])]
            raise DataValidationError(
                f"{where(name, label, from_file)}: column {column!r}: {quoted(u)} is not a rank "
                "(a number, 1 = best)"
            )
        vals[k] = x
    return vals[codes]


def _ranked_pairs(
    task: np.ndarray, ranks: np.ndarray, item: np.ndarray, rows: np.ndarray, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """(winner, loser) items of every pair of a task with different ranks, and the loser's
    row; in task order, then the winner's row."""
    if len(task) == 0:
        return np.zeros((0, 2), dtype=np.int64), rows[:0]
    sizes = np.bincount(task)
    if int((sizes.astype(np.int64) ** 2).sum()) > MAX_RANKED_PAIRS:
        raise DataValidationError(
            f"{name}: the rankings give more than {MAX_RANKED_PAIRS:,} ordered pairs (a task "
            f"has up to {int(sizes.max())} alternatives); split the tasks"
        )
    df = pd.DataFrame(
        {"t": task, "r": ranks, "item": item, "row": rows, "pos": np.arange(len(task))}
    )
    m = df.merge(df, on="t", suffixes=("_w", "_l"))
    m = m[m["r_w"].to_numpy() < m["r_l"].to_numpy()].sort_values(["t", "pos_w", "pos_l"])
    pairs = m[["item_w", "item_l"]].to_numpy(dtype=np.int64)
    return pairs, m["row_l"].to_numpy()


def _lines(labels: np.ndarray, k: int = 5) -> str:
    shown = ", ".join(str(py(x)) for x in labels[:k])
    return shown + (", ..." if len(labels) > k else "")


def build_from_long(
    frame: pd.DataFrame,
    attrs: list[Attribute],
    *,
    name: str,
    from_file: bool,
    respondent: str,
    task: str,
    alternative: str,
    chosen: str,
    opt_out_alternatives: Collection[Any],
    no_choice: NoChoice,
    exclude: Sequence[ExclusionRule],
    user_columns: Sequence[str],
    user_schema: Schema | None,
    meta: StudyMeta,
    attribute_columns: Mapping[str, str] | None = None,
    hint: str = "",
    rank: str | None = None,
) -> Study:
    """The shared long-format pipeline (also used by the wide reader and the presets).

    Parameters
    ----------
    frame
        Long-format rows; the index holds file lines (or row labels) for error messages.
    attrs
        The attributes (see :func:`~data_loaders.conjoint.attributes.resolve_attributes`).
    name, from_file
        File (or table) name, and whether the index holds file lines or row labels.
    respondent, task, alternative, chosen
        Column names.
    opt_out_alternatives, no_choice, exclude, user_columns, user_schema, meta
        As in :func:`data_loaders.conjoint.formats.load_conjoint_long`.
    attribute_columns
        Attribute name -> source column (default: each attribute's ``source_column``).
    hint
        Appended to the error message for missing columns.
    rank
        A rank column (1 = best; numbers, lower is better) read instead of ``chosen``:
        every pair of real alternatives of a task is ordered by rank, equal ranks give no
        comparison and an empty rank is below every given one (two empty ranks: no
        comparison). A task whose best rank is an opt-out row is an opt-out task.

    Returns
    -------
    Study
        See :func:`data_loaders.conjoint.formats.load_conjoint_long`.

    Raises
    ------
    DataValidationError
        For malformed data, naming the file and line (or the row of a DataFrame).
    """
    if no_choice not in ("error", "opt_out", "drop"):
        raise ValueError(f"no_choice must be 'error', 'opt_out' or 'drop', got {no_choice!r}")
    acol = dict(attribute_columns or {a.name: a.source_column for a in attrs})
    flag = [rank] if rank else [chosen]
    needed = [respondent, task, alternative, *flag, *acol.values(), *user_columns]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise missing_columns_error(name, missing, frame.columns, from_file, hint, needed=needed)
    if len(frame) == 0:
        raise DataValidationError(f"{name}: no data rows")
    t = _tasks(frame, name, from_file, respondent, task, alternative)
    is_chosen, ranks = _chosen_rows(frame, t, chosen, rank)
    opt_keys = {normalize_value(v) for v in opt_out_alternatives}
    alt_codes, alt_uniques = pd.factorize(frame[alternative])
    alt_is_opt = np.array([normalize_value(u) in opt_keys for u in alt_uniques], dtype=bool)
    real = ~(alt_is_opt[alt_codes] if len(alt_uniques) else np.zeros(len(frame), dtype=bool))
    _check_duplicates(frame, t, name, from_file, respondent, task, alternative)
    answered, opted_out, dropped = _outcomes(t, name, from_file, real, is_chosen, ranks, no_choice)
    summary, excluded = _respondent_summary(t, answered, opted_out, dropped, exclude)

    rows, parsed_frame = _kept_profiles(
        frame, attrs, acol, t, real & ~dropped[t.key], answered, excluded
    )
    schema, items, item_of_row = _items(attrs, parsed_frame)
    pairs, pair_rows, n_identical, situations = _comparisons(
        t, rows, item_of_row, is_chosen, ranks, name
    )
    users = None
    if user_columns:
        users = user_table(frame, respondent, list(user_columns), excluded, name, from_file)
        if user_schema is None:
            user_schema = Schema.infer(users)
    data = PreferenceData(
        X=_encode(schema, items),
        pairs=pairs.astype(np.int64),
        schema=schema,
        items=items,
        item_ids=np.arange(len(items)),
        respondent=t.respondent[pair_rows],
        users=users,
        source=meta.key,
        task=t.task[pair_rows],
        situations=situations,
    )
    extras: dict[str, Any] = {
        "pair_line": t.labels[pair_rows],
        "respondent_summary": summary,
        "excluded": excluded,
        "n_identical_skipped": n_identical,
        "attributes": attrs,
        "file": name,
    }
    return Study(
        key=meta.key,
        title=meta.title,
        schema=schema,
        data=data,
        description=meta.description,
        source=meta.source,
        citation=meta.citation,
        license=meta.license,
        users=users,
        user_schema=user_schema if users is not None else None,
        extras=extras,
    )


@dataclass(frozen=True)
class _Tasks:
    """The rows' tasks: ``key`` numbers each row's (respondent, task) in order of first
    appearance; ``labels`` are the rows' file lines (or labels)."""

    key: np.ndarray
    n: int
    first_row: np.ndarray
    labels: np.ndarray
    respondent: np.ndarray
    task: np.ndarray
    name: str
    from_file: bool

    def error(self, t: int, msg: str) -> DataValidationError:
        """An error on task ``t``, naming its respondent, task and lines."""
        rows = np.flatnonzero(self.key == t)
        i = int(rows[0])
        return DataValidationError(
            f"{where(self.name, self.labels[i], self.from_file)}: respondent "
            f"{quoted(self.respondent[i])}, task {quoted(self.task[i])} (lines/rows "
            f"{_lines(self.labels[rows])}): {msg}"
        )


def _tasks(
    frame: pd.DataFrame, name: str, from_file: bool, respondent: str, task: str, alternative: str
) -> _Tasks:
    """The tasks of the rows (respondent, task and alternative must not be empty)."""
    labels = frame.index.to_numpy()
    for c in (respondent, task, alternative):
        na = frame[c].isna().to_numpy()
        if na.any():
            raise DataValidationError(
                f"{where(name, labels[np.argmax(na)], from_file)}: column {c!r} is empty"
            )
    tkey = frame.groupby([respondent, task], sort=False).ngroup().to_numpy()
    _, first_row = np.unique(tkey, return_index=True)
    return _Tasks(
        tkey,
        int(tkey.max()) + 1,
        first_row,
        labels,
        frame[respondent].to_numpy(),
        frame[task].to_numpy(),
        name,
        from_file,
    )


def _chosen_rows(
    frame: pd.DataFrame, t: _Tasks, chosen: str, rank: str | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Each row's chosen flag (with ranks: a best-ranked row of its task) and the ranks."""
    if not rank:
        return parse_flags(frame[chosen], t.name, t.from_file, chosen), None
    ranks = _parse_ranks(frame[rank], t.name, t.from_file, rank)
    best = np.full(t.n, np.inf)
    np.minimum.at(best, t.key, ranks)
    return np.isfinite(ranks) & (ranks == best[t.key]), ranks


def _check_duplicates(
    frame: pd.DataFrame,
    t: _Tasks,
    name: str,
    from_file: bool,
    respondent: str,
    task: str,
    alternative: str,
) -> None:
    """No alternative twice in a task."""
    dup = frame.duplicated([respondent, task, alternative]).to_numpy()
    if not dup.any():
        return
    i = int(np.argmax(dup))
    r, k, a = (py(frame[c].iloc[i]) for c in (respondent, task, alternative))
    same = ((frame[respondent] == r) & (frame[task] == k) & (frame[alternative] == a)).to_numpy()
    raise DataValidationError(
        f"{where(name, t.labels[i], from_file)}: respondent {quoted(r)}, task {quoted(k)}: "
        f"alternative {quoted(a)} appears more than once (lines/rows {_lines(t.labels[same])})"
    )


def _outcomes(
    t: _Tasks,
    name: str,
    from_file: bool,
    real: np.ndarray,
    is_chosen: np.ndarray,
    ranks: np.ndarray | None,
    no_choice: NoChoice,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per task: answered (a real alternative chosen), opted out, dropped (no choice,
    ``no_choice="drop"``); a task with two chosen rows, fewer than two profiles or (by
    default) no choice is an error."""
    n_real = np.bincount(t.key, weights=real, minlength=t.n)
    n_chosen = np.bincount(t.key, weights=is_chosen, minlength=t.n)
    n_chosen_real = np.bincount(t.key, weights=is_chosen & real, minlength=t.n)
    bad = np.flatnonzero(n_chosen > 1) if ranks is None else np.zeros(0, dtype=np.int64)
    if len(bad):
        raise t.error(int(bad[0]), f"{int(n_chosen[bad[0]])} alternatives are chosen")
    bad = np.flatnonzero(n_real < 2)
    if len(bad):
        raise t.error(int(bad[0]), "fewer than two profiles (besides the opt-out)")
    if ranks is None:
        answered = n_chosen_real == 1
        opted_out = (n_chosen == 1) & ~answered
    else:  # ranks: the best-ranked row decides; an opt-out among the best makes it an opt-out
        opted_out = n_chosen > n_chosen_real
        answered = (n_chosen_real >= 1) & ~opted_out
    none = n_chosen == 0
    if none.any() and no_choice == "error":
        raise t.error(
            int(np.argmax(none)),
            "no alternative is chosen (pass no_choice='opt_out' or 'drop' to accept this)",
        )
    if no_choice == "opt_out":
        opted_out |= none
    return answered, opted_out, none & (no_choice == "drop")


def _respondent_summary(
    t: _Tasks,
    answered: np.ndarray,
    opted_out: np.ndarray,
    dropped: np.ndarray,
    exclude: Sequence[ExclusionRule],
) -> tuple[pd.DataFrame, dict[Any, str]]:
    """Tasks, answers, opt-outs and drops per respondent, and the respondents the
    exclusion rules leave out (with the first rule's reason)."""
    per_task = pd.DataFrame(
        {
            "respondent": t.respondent[t.first_row],
            "n_tasks": 1,
            "n_answered": answered.astype(int),
            "n_opt_out": opted_out.astype(int),
            "n_dropped": dropped.astype(int),
        }
    )
    summary = per_task.groupby("respondent", sort=False).sum()
    responded = summary["n_answered"] + summary["n_opt_out"]
    summary["opt_out_share"] = (summary["n_opt_out"] / responded.where(responded > 0)).fillna(0)
    excluded: dict[Any, str] = {}
    for rule in exclude:
        mask = pd.Series(rule(summary), index=summary.index).fillna(False).astype(bool)
        for r in summary.index[mask.to_numpy()]:
            excluded.setdefault(r, rule_reason(rule))
    summary["excluded"] = summary.index.isin(list(excluded))
    return summary, excluded


def _kept_profiles(
    frame: pd.DataFrame,
    attrs: Sequence[Attribute],
    acol: Mapping[str, str],
    t: _Tasks,
    parse_rows: np.ndarray,
    answered: np.ndarray,
    excluded: Mapping[Any, str],
) -> tuple[np.ndarray, pd.DataFrame]:
    """The rows of the profiles kept (answered tasks of respondents not excluded) and
    their parsed attributes; every real profile of a task that is not dropped is parsed
    (``parse_rows``), so a bad cell is an error wherever it is."""
    sub = frame[parse_rows]
    parsed = {
        a.name: parse_attribute(sub[acol[a.name]], a, t.name, t.from_file, acol[a.name])
        for a in attrs
    }
    parsed_frame = pd.DataFrame(parsed)
    rows = np.flatnonzero(parse_rows)
    keep_resp = ~pd.Series(t.respondent[rows]).isin(list(excluded)).to_numpy()
    keep = answered[t.key[rows]] & keep_resp
    return rows[keep], parsed_frame.loc[keep].reset_index(drop=True)


def _comparisons(
    t: _Tasks,
    rows: np.ndarray,
    item_of_row: np.ndarray,
    is_chosen: np.ndarray,
    ranks: np.ndarray | None,
    name: str,
) -> tuple[np.ndarray, np.ndarray, int, ChoiceSituations | None]:
    """The comparisons of the kept rows (``rows``: real alternatives of answered tasks):
    (winner, loser) items, each one's row (the loser's), how many compared identical
    profiles (skipped) and the choice situations (``None`` for rankings)."""
    if ranks is None:
        win = is_chosen[rows]
        winner_item = np.full(t.n, -1, dtype=np.int64)
        winner_item[t.key[rows[win]]] = item_of_row[win]
        lose = ~win
        pairs = np.column_stack([winner_item[t.key[rows[lose]]], item_of_row[lose]])
        pair_rows = rows[lose]
    else:
        pairs, pair_rows = _ranked_pairs(t.key[rows], ranks[rows], item_of_row, rows, name)
    same = pairs[:, 0] == pairs[:, 1]
    pairs, pair_rows = pairs[~same], pair_rows[~same]
    situations = (
        _situations(t.key, rows, item_of_row, is_chosen[rows], t.respondent, t.task, pair_rows)
        if ranks is None
        else None  # a ranking: its successive choices are rebuilt from its pairs
    )
    return pairs, pair_rows, int(same.sum()), situations


def _items(
    attrs: Sequence[Attribute], parsed_frame: pd.DataFrame
) -> tuple[Schema, pd.DataFrame, np.ndarray]:
    """The schema, the distinct profiles (items) of the parsed rows and each row's item."""
    schema = Schema(
        tuple(
            a.to_feature(parsed_frame[a.name].to_numpy(dtype=float))
            if a.kind == "numeric"
            else a.to_feature()
            for a in attrs
        )
    )
    if len(parsed_frame):
        item_of_row = parsed_frame.groupby(list(parsed_frame.columns), sort=False, dropna=False)
        item_of_row = item_of_row.ngroup().to_numpy()
        first = np.unique(item_of_row, return_index=True)[1]
        items = parsed_frame.iloc[first].reset_index(drop=True)
    else:
        item_of_row = np.zeros(0, dtype=np.int64)
        items = parsed_frame.iloc[:0]
    for a in attrs:
        if a.kind == "numeric":
            items[a.name] = items[a.name].astype(float)
    return schema, items, item_of_row


def _encode(schema: Schema, items: pd.DataFrame) -> np.ndarray:
    """Vectorised :meth:`Schema.encode` for parsed items (labels already validated).

    The generic encoder converts value by value, which takes seconds for 10^5 items; here
    each column maps its distinct labels once. Tests check both agree.
    """
    X = np.empty((len(items), schema.n_columns), dtype=float)
    for j, f in enumerate(schema.features):
        col = items[f.name]
        if f.kind == "numeric":
            X[:, j] = col.to_numpy(dtype=float)
            continue
        codes, uniques = pd.factorize(col)
        index = {lv: k for k, lv in enumerate(f.levels)}
        X[:, j] = np.array([index[str(u)] for u in uniques], dtype=float)[codes]
    return X


def user_table(
    frame: pd.DataFrame,
    respondent: str,
    columns: list[str],
    excluded: Mapping[Any, str],
    name: str,
    from_file: bool,
) -> pd.DataFrame:
    """One row per respondent; the values must not change within a respondent.

    Parameters
    ----------
    frame
        Rows with the ``respondent`` column and ``columns``.
    respondent
        Respondent column.
    columns
        Respondent-level columns to keep.
    excluded
        Excluded respondents (left out of the table).
    name, from_file
        File (or table) name and whether the index holds file lines, for errors.

    Raises
    ------
    DataValidationError
        When a respondent's values change between rows (naming the file and line).
    """
    sub = frame[[respondent, *columns]]
    distinct = sub.drop_duplicates()
    clash = distinct[respondent].duplicated().to_numpy()
    if clash.any():
        label = distinct.index[int(np.argmax(clash))]
        r = py(distinct[respondent].iloc[int(np.argmax(clash))])
        raise DataValidationError(
            f"{where(name, label, from_file)}: respondent {quoted(r)}: respondent columns "
            f"{columns} differ from the respondent's earlier rows"
        )
    users = distinct.set_index(respondent)
    users = users.loc[~users.index.isin(list(excluded))]
    users.index.name = "respondent"
    return users


def _situations(
    tkey: np.ndarray,
    rows: np.ndarray,
    item_of_row: np.ndarray,
    chosen: np.ndarray,
    respondent: np.ndarray,
    task: np.ndarray,
    pair_rows: np.ndarray,
) -> ChoiceSituations:
    """The choice situations of the kept rows (``rows``: file rows of real alternatives
    of answered tasks, in file order; ``chosen``: their flags): every task's
    alternatives as observed, identical profiles included, and the situation of every
    comparison (``pair_rows``: the loser's row of each)."""
    order = np.argsort(tkey[rows], kind="stable")
    rows_s, item_s, chosen_s = rows[order], item_of_row[order], chosen[order]
    keys, first, sizes = np.unique(tkey[rows_s], return_index=True, return_counts=True)
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pick = np.flatnonzero(chosen_s)
    chosen_row = np.full(len(keys), -1, dtype=np.int64)
    chosen_row[np.searchsorted(keys, tkey[rows_s[pick]])] = pick
    pair = np.searchsorted(keys, tkey[pair_rows]).astype(np.int64)
    firsts = rows_s[first]
    return ChoiceSituations(
        item=item_s.astype(np.int64),
        start=start,
        chosen=chosen_row,
        respondent=respondent[firsts],
        task=task[firsts],
        weight=np.ones(len(keys)),
        pair=pair,
    )
