"""The data model shared by every part of DT-PBO Explorer.

One data model crosses every boundary: loaders produce it, surrogates consume it and
the dashboard displays it. Nothing downstream knows which loader produced the data.

``Feature``
    One attribute of an item: numeric, ordinal, categorical, binary or multi-hot, with
    levels, bounds and a human label/unit for display.
``Schema``
    Ordered features. Encodes a table of items to the float matrix the surrogates use
    (one column per numeric/ordinal/categorical/binary feature, one binary column per
    value of a multi-hot feature) and decodes it back to an item table. Readable split
    rules ("test sensitivity >= 80%", "party in {Democrat}") and attribute tables come
    from :mod:`pbo_core.explain.labels`.
``ChoiceSituations``
    The unit of observation of a choice study: each situation's available
    alternatives (items), the chosen one, its respondent, task and weight. The pairs a
    situation gives (the chosen alternative beats each other one) are derived from it
    for the models that learn from pairs; choice models and the field's metrics read the
    situations themselves.
``PreferenceData``
    Items (encoded matrix ``X`` plus an optional display table) and pairwise
    comparisons ``pairs`` (winner index, loser index), optionally with the respondent
    and the choice task of every pair, a table of user features and the choice
    situations the pairs come from. Validated on construction; every selection keeps the
    respondents, tasks and situations of the kept pairs.
``Study``
    A named case study: schema, pooled preference data (per-respondent views), its kind,
    the description of its columns (:class:`ColumnRole`: what every column of its data
    means), and the provenance shown in the dashboard (description, source, citation,
    licence). With the schema (types, levels, units) and the analysis plan (money and time
    roles, alternatives and their constants) this is the one place a column's meaning
    lives: decided once, by the study's loader or at import, and read by everything else.

Encoding conventions
--------------------
* numeric: the value itself (float).
* ordinal: the level's integer code ``0 .. L-1`` in the given level order; trees split
  it by thresholds like a number and rules print level labels.
* categorical: the level's integer code; trees split it by category subsets.
* binary: 0 or 1 (``levels`` may label them, e.g. ``("no", "yes")``).
* multi_hot: one 0/1 column per value, named ``"<feature>=<value>"``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pandas as pd

from pbo_core.errors import DataValidationError
from pbo_core.text import fmt_number, humanize, with_unit

FeatureKind = Literal["numeric", "ordinal", "categorical", "binary", "multi_hot"]
FEATURE_KINDS: tuple[str, ...] = ("numeric", "ordinal", "categorical", "binary", "multi_hot")

#: Separator accepted for multi-hot values given as one string ("a;b;c").
MULTI_HOT_SEPARATOR = ";"


def split_multi_hot(value: Any) -> list[str]:
    """Values of one multi-hot cell: ``None``/NaN -> [], ``"a;b"`` -> ["a", "b"], lists as is."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        return [p.strip() for p in value.split(MULTI_HOT_SEPARATOR) if p.strip()]
    return [str(p) for p in value]


#: :attr:`Study.extras` key of the true utility per item id (as text), when a study knows it.
TRUE_UTILITY = "true_utility"


#: What a study is made of: ``conjoint`` (choices among profiles described by attributes),
#: ``items`` (a finite item set every respondent ranks or compares, e.g. Sushi) or
#: ``text`` (items described by text, features extracted by a language model).
StudyKind = Literal["conjoint", "items", "text"]
STUDY_KINDS: tuple[str, ...] = ("conjoint", "items", "text")

#: The roles a column of a study's data plays (:class:`ColumnRole`).
COLUMN_ROLES: tuple[str, ...] = (
    "choice",
    "alternative",
    "task",
    "respondent",
    "availability",
    "weight",
    "attribute",
    "respondent feature",
    "condition",
    "ignored",
)


@dataclass(frozen=True)
class ColumnRole:
    """What one column of a study's data means, decided once (loader or import).

    Attributes
    ----------
    column
        The column's name in the data (a wide file's ``TRAIN_TT``).
    role
        One of :data:`COLUMN_ROLES`: the chosen alternative or flag (``choice``), the
        alternative a row is (``alternative``), ``task``, ``respondent``,
        ``availability``, ``weight``, an alternative's ``attribute``, a ``respondent
        feature``, a column only read by a condition (a row selection, an availability
        or a zero rule: ``condition``) or ``ignored``.
    kind
        The type it is read as: a :data:`FEATURE_KINDS` kind for attributes and
        respondent features (``numeric``, ``categorical`` with levels, ``ordinal``,
        ``binary``), ``id`` for respondent and task ids, ``flag`` for 0/1 flags,
        ``code`` for values naming alternatives, ``""`` otherwise.
    unit
        Its unit (stated, never assumed; ``""``: none stated).
    attribute
        The attribute it feeds (a wide file's ``TRAIN_TT`` feeds ``TT``).
    alternative
        The alternative it belongs to (a wide file's ``TRAIN_TT``: ``TRAIN``).
    how
        How the meaning was decided, in words (``"given"``, ``"by its name"``, ...).
    """

    column: str
    role: str
    kind: str = ""
    unit: str = ""
    attribute: str = ""
    alternative: str = ""
    how: str = ""

    def __post_init__(self) -> None:
        if self.role not in COLUMN_ROLES:
            raise DataValidationError(
                f"column {self.column!r}: role {self.role!r} is not one of {COLUMN_ROLES}"
            )

    def to_dict(self) -> dict[str, str]:
        """JSON-ready."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ColumnRole:
        """Inverse of :meth:`to_dict`."""
        return cls(**{k: str(d.get(k, "")) for k in cls.__dataclass_fields__})


def schema_columns(
    schema: Schema, user_schema: Schema | None = None, how: str = ""
) -> tuple[ColumnRole, ...]:
    """The description of a study whose loader reads no table of named columns (items
    and respondents described by features): one ``attribute`` per item feature and one
    ``respondent feature`` per respondent feature, with their kinds and units."""
    out = [
        ColumnRole(f.name, "attribute", f.kind, f.unit, f.name, how=how) for f in schema.features
    ]
    if user_schema is not None:
        out += [ColumnRole(f.name, "respondent feature", f.kind, f.unit, how=how)
                for f in user_schema.features]  # fmt: skip
    return tuple(out)


def columns_table(columns: Sequence[ColumnRole]) -> pd.DataFrame:
    """The column description as a table (column, role, type, unit, attribute,
    alternative, how decided), as the import preview and the Case studies page show it."""
    return pd.DataFrame(
        [
            {
                "column": c.column,
                "role": c.role,
                "type": c.kind,
                "unit": c.unit,
                "attribute": c.attribute,
                "alternative": c.alternative,
                "how decided": c.how,
            }
            for c in columns
        ],
        columns=["column", "role", "type", "unit", "attribute", "alternative", "how decided"],
    )


@dataclass(frozen=True)
class Feature:
    """One attribute of the items.

    Parameters
    ----------
    name
        Column name in item tables (unique within a schema).
    kind
        ``"numeric"``, ``"ordinal"``, ``"categorical"``, ``"binary"`` or ``"multi_hot"``.
    levels
        Ordered level labels (ordinal, categorical), the value list (multi-hot), or
        optional labels of 0 and 1 (binary). Unused for numeric features.
    bounds
        ``(low, high)`` of a numeric feature. Used to sample points inside tree leaves
        and to format thresholds. ``None``: the schema's encoding takes ``(0, 1)``.
    label
        Human-readable name for display (defaults to ``name``).
    unit
        Unit appended to numeric thresholds ("%", "min", "BRB").
    description
        Longer explanation shown in attribute tables.
    special
        Numeric codes with a meaning of their own, as ``((value, meaning), ...)``: e.g.
        ``((0.0, "variable rate"),)`` for a fixed price of 0 that means "no fixed price".
        Displays print the meaning instead of the number, and rules mention it.
    """

    name: str
    kind: FeatureKind
    levels: tuple[str, ...] = ()
    bounds: tuple[float, float] | None = None
    label: str = ""
    unit: str = ""
    description: str = ""
    special: tuple[tuple[float, str], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DataValidationError(f"feature name must be a non-empty string, got {self.name!r}")
        if self.kind not in FEATURE_KINDS:
            raise DataValidationError(
                f"feature {self.name!r}: kind {self.kind!r} is not one of {FEATURE_KINDS}"
            )
        object.__setattr__(self, "levels", tuple(str(v) for v in self.levels))
        if len(set(self.levels)) != len(self.levels):
            raise DataValidationError(f"feature {self.name!r}: levels are not unique")
        if self.kind in ("ordinal", "categorical", "multi_hot") and len(self.levels) < 1:
            raise DataValidationError(f"feature {self.name!r}: kind {self.kind} needs levels")
        if self.kind == "binary" and len(self.levels) not in (0, 2):
            raise DataValidationError(
                f"feature {self.name!r}: a binary feature takes 0 or 2 level labels"
            )
        if self.bounds is not None:
            lo, hi = (float(b) for b in self.bounds)
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
                raise DataValidationError(f"feature {self.name!r}: invalid bounds {self.bounds}")
            object.__setattr__(self, "bounds", (lo, hi))
        object.__setattr__(
            self, "special", tuple((float(v), str(m)) for v, m in dict(self.special).items())
        )

    @property
    def display(self) -> str:
        """The label shown to people (``label``, else the name in words)."""
        if self.label:
            return self.label
        if "_" not in self.name:
            return self.name
        words = humanize(self.name)
        return words[:1].upper() + words[1:]

    def level_label(self, k: int) -> str:
        """The displayed label of level ``k`` (snake_case codes read as words)."""
        labels = self.levels if self.kind != "binary" else (self.levels or ("no", "yes"))
        return humanize(labels[int(k)])

    def format_value(self, value: Any) -> str:
        """One value as people read it: level label, number with unit, or special code."""
        if self.kind == "multi_hot":
            vals = [humanize(str(v)) for v in (value or [])]
            return ", ".join(vals) if vals else "none"
        if self.kind != "numeric":
            if isinstance(value, str):
                return humanize(value)
            return self.level_label(round(float(value)))
        x = float(value)
        for v, meaning in self.special:
            if x == v:
                return meaning
        return with_unit(fmt_number(x), self.unit)

    @property
    def n_columns(self) -> int:
        """Number of encoded columns this feature occupies."""
        return len(self.levels) if self.kind == "multi_hot" else 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready representation."""
        return {
            "name": self.name,
            "kind": self.kind,
            "levels": list(self.levels),
            "bounds": list(self.bounds) if self.bounds is not None else None,
            "label": self.label,
            "unit": self.unit,
            "description": self.description,
            **({"special": [list(p) for p in self.special]} if self.special else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Feature:
        """Inverse of :meth:`to_dict`."""
        bounds = d.get("bounds")
        return cls(
            name=d["name"],
            kind=d["kind"],
            levels=tuple(d.get("levels") or ()),
            bounds=tuple(bounds) if bounds is not None else None,
            label=d.get("label", ""),
            unit=d.get("unit", ""),
            description=d.get("description", ""),
            special=tuple((float(v), str(m)) for v, m in d.get("special") or ()),
        )


@dataclass(frozen=True)
class Column:
    """One column of the encoded item matrix.

    Attributes
    ----------
    name
        ``feature.name`` or ``"<feature>=<value>"`` for multi-hot columns.
    feature
        Index of the owning feature in the schema.
    categorical
        True when trees split this column by category subsets (categorical features);
        False when they split it by a threshold (everything else).
    n_categories
        Number of codes of a categorical column (0 otherwise).
    bounds
        ``(low, high)`` range of the encoded values.
    value
        The multi-hot value this column stands for (``None`` otherwise).
    """

    name: str
    feature: int
    categorical: bool
    n_categories: int
    bounds: tuple[float, float]
    value: str | None = None


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Schema:
    """Ordered features and the encoding between item tables and the float matrix.

    Parameters
    ----------
    features
        The features, in column order.
    """

    features: tuple[Feature, ...]
    columns: tuple[Column, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        feats = tuple(self.features)
        object.__setattr__(self, "features", feats)
        names = [f.name for f in feats]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise DataValidationError(f"schema: duplicate feature names {sorted(dup)}")
        cols: list[Column] = []
        for j, f in enumerate(feats):
            if f.kind == "numeric":
                b = f.bounds if f.bounds is not None else (0.0, 1.0)
                cols.append(Column(f.name, j, False, 0, b))
            elif f.kind == "ordinal":
                cols.append(Column(f.name, j, False, 0, (0.0, float(len(f.levels) - 1))))
            elif f.kind == "categorical":
                n = len(f.levels)
                cols.append(Column(f.name, j, True, n, (0.0, float(n - 1))))
            elif f.kind == "binary":
                cols.append(Column(f.name, j, False, 0, (0.0, 1.0)))
            else:  # multi_hot
                for v in f.levels:
                    cols.append(Column(f"{f.name}={v}", j, False, 0, (0.0, 1.0), value=v))
        object.__setattr__(self, "columns", tuple(cols))

    # ------------------------------------------------------------------ basic views
    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, name: str) -> Feature:
        for f in self.features:
            if f.name == name:
                return f
        raise KeyError(f"no feature {name!r} in schema; features are {self.names}")

    @property
    def names(self) -> list[str]:
        """Feature names in order."""
        return [f.name for f in self.features]

    @property
    def n_columns(self) -> int:
        """Width of the encoded matrix."""
        return len(self.columns)

    @property
    def column_names(self) -> list[str]:
        """Names of the encoded columns."""
        return [c.name for c in self.columns]

    @cached_property
    def is_categorical(self) -> np.ndarray:
        """Boolean mask over encoded columns: split by category subsets."""
        return _frozen(np.array([c.categorical for c in self.columns], dtype=bool))

    @cached_property
    def is_integer(self) -> np.ndarray:
        """Boolean mask over encoded columns holding integer codes (all but numeric)."""
        kinds = [self.features[c.feature].kind for c in self.columns]
        return _frozen(np.array([k != "numeric" for k in kinds], dtype=bool))

    @cached_property
    def n_categories(self) -> np.ndarray:
        """Number of categories per encoded column (0 for threshold columns)."""
        return _frozen(np.array([c.n_categories for c in self.columns], dtype=np.int64))

    @cached_property
    def bounds(self) -> np.ndarray:
        """``(n_columns, 2)`` array of encoded column ranges."""
        return _frozen(np.array([c.bounds for c in self.columns], dtype=float).reshape(-1, 2))

    def without(self, names: Iterable[str]) -> Schema:
        """Schema without the named features (for leave-one-out analyses)."""
        drop = set(names)
        unknown = drop - set(self.names)
        if unknown:
            raise KeyError(f"no features {sorted(unknown)} in schema; features are {self.names}")
        return Schema(tuple(f for f in self.features if f.name not in drop))

    def column_indices(self, names: Iterable[str]) -> np.ndarray:
        """Encoded column indices that belong to the named features."""
        wanted = {self.names.index(n) for n in names}
        return np.array([i for i, c in enumerate(self.columns) if c.feature in wanted], dtype=int)

    # ------------------------------------------------------------------ construction
    @classmethod
    def numeric(
        cls, bounds: np.ndarray | Sequence[Sequence[float]], names: Sequence[str] | None = None
    ) -> Schema:
        """All-numeric schema for a box-bounded continuous space (benchmarks)."""
        b = np.asarray(bounds, dtype=float).reshape(-1, 2)
        names = list(names) if names is not None else [f"x{i + 1}" for i in range(len(b))]
        return cls(
            tuple(
                Feature(n, "numeric", bounds=(lo, hi)) for n, (lo, hi) in zip(names, b, strict=True)
            )
        )

    @classmethod
    def infer(cls, items: pd.DataFrame, max_categories: int = 50) -> Schema:
        """Guess a schema from a table: numbers are numeric, booleans binary, text categorical.

        Numeric columns with only the values 0 and 1 become binary. Bounds are the observed
        ranges. Text columns with more than ``max_categories`` distinct values are rejected.
        """
        feats: list[Feature] = []
        for name in items.columns:
            s = items[name]
            if pd.api.types.is_bool_dtype(s):
                feats.append(Feature(str(name), "binary"))
            elif pd.api.types.is_numeric_dtype(s):
                vals = pd.unique(s.dropna())
                if len(vals) and set(np.asarray(vals, dtype=float)) <= {0.0, 1.0}:
                    feats.append(Feature(str(name), "binary"))
                else:
                    lo, hi = float(s.min()), float(s.max())
                    feats.append(Feature(str(name), "numeric", bounds=(lo, hi)))
            else:
                levels = sorted(str(v) for v in pd.unique(s.dropna()))
                if len(levels) > max_categories:
                    raise DataValidationError(
                        f"column {name!r}: {len(levels)} distinct text values; give a schema"
                    )
                feats.append(Feature(str(name), "categorical", levels=tuple(levels)))
        return cls(tuple(feats))

    # ------------------------------------------------------------------ encoding
    def encode(self, items: pd.DataFrame, *, source: str = "items") -> np.ndarray:
        """Encode an item table to the ``(n_items, n_columns)`` float matrix.

        Ordinal, categorical and binary values may be given as level labels or as integer
        codes. Multi-hot values may be lists/sets/tuples of values or one string with the
        values separated by ``;`` (empty string or NaN = none).

        Raises
        ------
        DataValidationError
            Naming ``source``, the row label and the field of the first bad value.
        """
        missing = [f.name for f in self.features if f.name not in items.columns]
        if missing:
            raise DataValidationError(
                f"{source}: missing field(s) {missing}; columns present: {list(items.columns)}"
            )
        out = np.empty((len(items), self.n_columns), dtype=float)
        col = 0
        index = list(items.index)
        for f in self.features:
            values = items[f.name].to_numpy(dtype=object)
            if f.kind == "multi_hot":
                out[:, col : col + len(f.levels)] = self._encode_multi_hot(f, values, index, source)
                col += len(f.levels)
                continue
            out[:, col] = self._encode_scalar(f, values, index, source)
            col += 1
        return out

    @staticmethod
    def _bad(source: str, row: Any, f: Feature, value: Any, why: str) -> DataValidationError:
        return DataValidationError(f"{source}: row {row!r}, field {f.name!r}: {value!r} {why}")

    def _encode_scalar(
        self, f: Feature, values: np.ndarray, index: list[Any], source: str
    ) -> np.ndarray:
        fast = self._encode_scalar_fast(f, values)
        if fast is not None:
            return fast
        # slow path: find and name the first bad value
        res = np.empty(len(values), dtype=float)
        if f.kind == "numeric":
            for i, v in enumerate(values):
                try:
                    x = float(v)
                except (TypeError, ValueError):
                    raise self._bad(source, index[i], f, v, "is not a number") from None
                if not math.isfinite(x):
                    raise self._bad(source, index[i], f, v, "is not a finite number")
                res[i] = x
            return res
        labels = f.levels if f.kind != "binary" else (f.levels or ("0", "1"))
        lookup = {lab: k for k, lab in enumerate(labels)}
        n = len(labels)
        for i, v in enumerate(values):
            code = self._to_code(v, lookup, n, f.kind == "binary")
            if code is None:
                raise self._bad(
                    source,
                    index[i],
                    f,
                    v,
                    f"is not one of the levels {list(labels)} (or 0..{n - 1})",
                )
            res[i] = code
        return res

    @staticmethod
    def _encode_scalar_fast(f: Feature, values: np.ndarray) -> np.ndarray | None:
        """Vectorised encoding; ``None`` when any value needs the checked slow path."""
        if any(isinstance(v, (bool, np.bool_)) for v in values[:1]):
            return None
        if f.kind == "numeric":
            try:
                x = values.astype(float)
            except (TypeError, ValueError):
                return None
            return x if np.isfinite(x).all() else None
        labels = f.levels if f.kind != "binary" else (f.levels or ("0", "1"))
        series = pd.Series(values, dtype=object)
        codes = series.map({lab: k for k, lab in enumerate(labels)})
        missing = codes.isna().to_numpy()
        if missing.any():
            try:
                num = series[missing].astype(float).to_numpy()
            except (TypeError, ValueError):
                return None
            ok = np.isfinite(num) & (num == np.round(num)) & (num >= 0) & (num < len(labels))
            if not ok.all():
                return None
            codes[missing] = num
        return codes.to_numpy(dtype=float)

    @staticmethod
    def _to_code(v: Any, lookup: dict[str, int], n: int, binary: bool) -> int | None:
        if isinstance(v, (bool, np.bool_)):
            return int(v) if binary else None
        if isinstance(v, str):
            if v in lookup:
                return lookup[v]
            try:
                v = float(v)
            except ValueError:
                return None
        if isinstance(v, (int, float, np.integer, np.floating)):
            x = float(v)
            if math.isfinite(x) and x == int(x) and 0 <= int(x) < n:
                return int(x)
        return None

    def _encode_multi_hot(
        self, f: Feature, values: np.ndarray, index: list[Any], source: str
    ) -> np.ndarray:
        lookup = {lab: k for k, lab in enumerate(f.levels)}
        res = np.zeros((len(values), len(f.levels)), dtype=float)
        for i, v in enumerate(values):
            if not (
                v is None
                or isinstance(v, (str, float, list, tuple, set, frozenset))
                or isinstance(v, np.ndarray)
            ):
                raise self._bad(source, index[i], f, v, "is not a list of values")
            if isinstance(v, float) and not math.isnan(v):
                raise self._bad(source, index[i], f, v, "is not a list of values")
            parts = split_multi_hot(v)
            for p in parts:
                if p not in lookup:
                    raise self._bad(
                        source, index[i], f, p, f"is not one of the values {list(f.levels)}"
                    )
                res[i, lookup[p]] = 1.0
        return res

    def decode(self, X: np.ndarray) -> pd.DataFrame:
        """Readable item table from an encoded matrix (labels for coded features)."""
        X = np.asarray(X, dtype=float).reshape(-1, self.n_columns)
        data: dict[str, list[Any]] = {}
        col = 0
        for f in self.features:
            if f.kind == "multi_hot":
                block = X[:, col : col + len(f.levels)] > 0.5
                data[f.name] = [[f.levels[k] for k in np.flatnonzero(row)] for row in block]
                col += len(f.levels)
                continue
            x = X[:, col]
            if f.kind == "numeric":
                data[f.name] = list(x)
            else:
                labels = f.levels if f.kind != "binary" else (f.levels or ("0", "1"))
                data[f.name] = [labels[round(v)] for v in x]
            col += 1
        return pd.DataFrame(data)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready representation."""
        return {"features": [f.to_dict() for f in self.features]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Schema:
        """Inverse of :meth:`to_dict`."""
        return cls(tuple(Feature.from_dict(f) for f in d["features"]))


@dataclass(frozen=True)
class ChoiceSituations:
    """Choice situations: each one's available alternatives and the chosen one.

    Attributes
    ----------
    item : ndarray, shape (m,)
        Item index of every alternative row (rows grouped by situation; one item may
        appear twice in a situation: two alternatives with identical attributes).
    start : ndarray, shape (S + 1,)
        Rows ``start[s] .. start[s+1]-1`` are situation ``s``.
    chosen : ndarray, shape (S,)
        Row of the chosen alternative of every situation.
    respondent, task : ndarray, shape (S,), or None
        Who answered it and which of their tasks it is.
    weight : ndarray, shape (S,)
        The situation's weight (1 unless the study gives weights).
    pair : ndarray, shape (n_pairs,)
        The situation of every comparison of the data it belongs to (the chosen
        alternative beats each other one of its situation).
    """

    item: np.ndarray
    start: np.ndarray
    chosen: np.ndarray
    respondent: np.ndarray | None
    task: np.ndarray | None
    weight: np.ndarray
    pair: np.ndarray

    @property
    def n_situations(self) -> int:
        """Number of situations ``S``."""
        return len(self.chosen)

    @property
    def sizes(self) -> np.ndarray:
        """``(S,)`` alternatives per situation."""
        return np.diff(self.start)

    @property
    def situation(self) -> np.ndarray:
        """``(m,)`` situation of every row."""
        return np.repeat(np.arange(self.n_situations), self.sizes)

    def check(self, n_items: int, n_pairs: int, source: str) -> None:
        """Raise :class:`DataValidationError` naming the first inconsistency."""
        S = self.n_situations
        if len(self.start) != S + 1 or self.start[0] != 0 or self.start[-1] != len(self.item):
            raise DataValidationError(f"{source} situations: start offsets do not cover the rows")
        if (np.diff(self.start) < 2).any():
            s = int(np.argmax(np.diff(self.start) < 2))
            raise DataValidationError(f"{source} situations: situation {s} has fewer than 2 rows")
        if len(self.item) and (self.item.min() < 0 or self.item.max() >= n_items):
            raise DataValidationError(f"{source} situations: an item index is out of range")
        lo, hi = self.start[:-1], self.start[1:]
        if ((self.chosen < lo) | (self.chosen >= hi)).any():
            s = int(np.argmax((self.chosen < lo) | (self.chosen >= hi)))
            raise DataValidationError(f"{source} situations: situation {s}'s choice is not its")
        for name, v in (("respondent", self.respondent), ("task", self.task),
                        ("weight", self.weight)):  # fmt: skip
            if v is not None and len(v) != S:
                raise DataValidationError(f"{source} situations: {len(v)} {name} values for {S}")
        if len(self.pair) != n_pairs:
            raise DataValidationError(
                f"{source} situations: {len(self.pair)} comparisons mapped for {n_pairs}"
            )
        if len(self.pair) and (self.pair.min() < 0 or self.pair.max() >= S):
            raise DataValidationError(f"{source} situations: a comparison maps to no situation")

    def select(self, keep: np.ndarray, pair: np.ndarray) -> ChoiceSituations:
        """The situations ``keep`` (boolean ``(S,)``) with ``pair`` the situation of each
        kept comparison (indices before selection), renumbered."""
        new = np.full(self.n_situations, -1, dtype=np.int64)
        new[keep] = np.arange(int(keep.sum()))
        rows = keep[self.situation]
        sizes = self.sizes[keep]
        start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        offset = self.chosen[keep] - self.start[:-1][keep]
        return ChoiceSituations(
            item=self.item[rows],
            start=start,
            chosen=start[:-1] + offset,
            respondent=None if self.respondent is None else self.respondent[keep],
            task=None if self.task is None else self.task[keep],
            weight=self.weight[keep],
            pair=new[pair],
        )

    def with_items(self, remap: np.ndarray) -> ChoiceSituations:
        """The situations with item ``i`` renumbered ``remap[i]``."""
        return replace(self, item=remap[self.item])


def _check_matrix(X: np.ndarray, source: str) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise DataValidationError(f"{source}: expected a 2-D item matrix, got shape {X.shape}")
    if not np.isfinite(X).all():
        r, c = np.argwhere(~np.isfinite(X))[0]
        raise DataValidationError(f"{source}: row {r}, column {c}: value {X[r, c]} is not finite")
    return X


@dataclass
class PreferenceData:
    """Items and pairwise comparisons between them.

    Parameters
    ----------
    X
        ``(n_items, n_columns)`` encoded item matrix (one row per item).
    pairs
        ``(n_pairs, 2)`` integer array; row ``(w, l)`` says item ``w`` was preferred to
        item ``l``.
    schema
        Schema of the columns of ``X``. ``None`` means all-numeric with bounds taken from
        the data.
    items
        Optional display table of the items (same row order as ``X``).
    item_ids
        Optional labels of the items (e.g. profile ids); defaults to ``0..n_items-1``.
    respondent
        Optional respondent id of every pair (pooled multi-respondent data).
    task
        Optional choice-task id of every pair: the comparisons one choice produced (the
        chosen alternative beats each other one) share a task. Ids need only be unique
        within a respondent (task ``1`` of respondent ``a`` and task ``1`` of respondent
        ``b`` are two tasks; :meth:`task_keys` numbers them apart). ``None``: every
        comparison is a task of its own.
    users
        Optional table of respondent features indexed by respondent id.
    source
        Name used in error messages (file name or study name).
    situations
        Optional choice situations the pairs come from (:class:`ChoiceSituations`):
        the available alternatives and the choice of every situation, exactly as
        observed (two alternatives with identical attributes included). ``None``: the
        pairs are the observations (choice models rebuild each task's situation from
        them).

    Raises
    ------
    DataValidationError
        If indices are out of range, a pair compares an item with itself, values are not
        finite, or shapes disagree. The message names the offending row.
    """

    X: np.ndarray
    pairs: np.ndarray
    schema: Schema | None = None
    items: pd.DataFrame | None = None
    item_ids: np.ndarray | None = None
    respondent: np.ndarray | None = None
    users: pd.DataFrame | None = None
    source: str = "data"
    task: np.ndarray | None = None
    situations: ChoiceSituations | None = None

    def __post_init__(self) -> None:
        self.X = _check_matrix(self.X, f"{self.source} items")
        n = self.X.shape[0]
        p = np.asarray(self.pairs)
        if p.size == 0:
            p = np.zeros((0, 2), dtype=np.int64)
        if p.ndim != 2 or p.shape[1] != 2:
            raise DataValidationError(
                f"{self.source} pairs: expected shape (n_pairs, 2), got {p.shape}"
            )
        if not np.issubdtype(p.dtype, np.integer):
            if not np.all(np.isfinite(p)) or not np.all(p == np.round(p)):
                bad = int(np.argwhere(~(np.isfinite(p) & (p == np.round(p))))[0, 0])
                raise DataValidationError(
                    f"{self.source} pairs: row {bad}: {p[bad].tolist()} are not integer indices"
                )
            p = p.astype(np.int64)
        p = p.astype(np.int64, copy=False)
        out = (p < 0) | (p >= n)
        if out.any():
            r, c = np.argwhere(out)[0]
            who = "winner" if c == 0 else "loser"
            raise DataValidationError(
                f"{self.source} pairs: row {r}: {who} index {p[r, c]} out of range [0, {n})"
            )
        same = p[:, 0] == p[:, 1]
        if same.any():
            r = int(np.flatnonzero(same)[0])
            raise DataValidationError(
                f"{self.source} pairs: row {r}: item {p[r, 0]} is compared with itself"
            )
        self.pairs = p
        if self.schema is not None and self.schema.n_columns != self.X.shape[1]:
            raise DataValidationError(
                f"{self.source}: item matrix has {self.X.shape[1]} columns but the schema "
                f"encodes {self.schema.n_columns} ({self.schema.column_names})"
            )
        if self.items is not None and len(self.items) != n:
            raise DataValidationError(
                f"{self.source}: items table has {len(self.items)} rows but X has {n}"
            )
        if self.item_ids is not None:
            self.item_ids = np.asarray(self.item_ids)
            if len(self.item_ids) != n:
                raise DataValidationError(
                    f"{self.source}: {len(self.item_ids)} item ids for {n} items"
                )
        if self.respondent is not None:
            self.respondent = np.asarray(self.respondent)
            if len(self.respondent) != len(p):
                raise DataValidationError(
                    f"{self.source}: {len(self.respondent)} respondent ids for {len(p)} pairs"
                )
        if self.task is not None:
            self.task = np.asarray(self.task)
            if len(self.task) != len(p):
                raise DataValidationError(
                    f"{self.source}: {len(self.task)} task ids for {len(p)} pairs"
                )
        if self.situations is not None:
            self.situations.check(n, len(p), self.source)

    @classmethod
    def from_validated_arrays(
        cls, X: np.ndarray, pairs: np.ndarray, schema: Schema | None = None
    ) -> PreferenceData:
        """Wrap arrays the caller built and checked itself, skipping ``__post_init__``.

        For internal hot loops only (the PBO loop builds a new view of its own buffers
        after every query): ``X`` must be a finite 2-D float array, ``pairs`` an
        ``(n_pairs, 2)`` int64 array of distinct in-range indices and ``schema`` match
        ``X``'s columns. User input goes through the normal constructor, which validates.
        """
        obj = cls.__new__(cls)
        obj.X = X
        obj.pairs = pairs
        obj.schema = schema
        obj.items = None
        obj.item_ids = None
        obj.respondent = None
        obj.users = None
        obj.source = "data"
        obj.task = None
        obj.situations = None
        return obj

    # ------------------------------------------------------------------ views
    @property
    def n_items(self) -> int:
        """Number of items."""
        return int(self.X.shape[0])

    @property
    def n_pairs(self) -> int:
        """Number of comparisons."""
        return int(self.pairs.shape[0])

    @property
    def winners(self) -> np.ndarray:
        """Winner item index of every pair."""
        return self.pairs[:, 0]

    @property
    def losers(self) -> np.ndarray:
        """Loser item index of every pair."""
        return self.pairs[:, 1]

    def get_schema(self) -> Schema:
        """The schema, or an all-numeric one bounded by the data when none was given."""
        if self.schema is not None:
            return self.schema
        if self.n_items:
            lo, hi = self.X.min(axis=0), self.X.max(axis=0)
        else:
            lo = hi = np.zeros(self.X.shape[1])
        return Schema.numeric(np.column_stack([lo, hi]))

    def ids(self) -> np.ndarray:
        """Item labels (``item_ids`` or ``0..n_items-1``)."""
        return self.item_ids if self.item_ids is not None else np.arange(self.n_items)

    def respondents(self) -> np.ndarray:
        """Distinct respondent ids in order of first appearance."""
        if self.respondent is None:
            return np.array([0])
        _, first = np.unique(self.respondent, return_index=True)
        return self.respondent[np.sort(first)]

    def task_keys(self) -> np.ndarray:
        """An integer per comparison, equal exactly for comparisons of one choice task.

        Tasks are told apart by respondent and task id; without task ids every comparison
        is its own task (``0 .. n_pairs-1``).
        """
        if self.task is None:
            return np.arange(self.n_pairs, dtype=np.int64)
        if self.respondent is None:
            return np.unique(self.task, return_inverse=True)[1].astype(np.int64).reshape(-1)
        frame = pd.DataFrame({"r": self.respondent, "t": self.task})
        return frame.groupby(["r", "t"], sort=False).ngroup().to_numpy(dtype=np.int64)

    def n_tasks(self) -> int:
        """Number of distinct choice tasks (comparisons when there are no task ids)."""
        return len(np.unique(self.task_keys()))

    def select_pairs(
        self, mask_or_index: np.ndarray, *, drop_unused_items: bool = False
    ) -> PreferenceData:
        """A view with a subset of the pairs (boolean mask or integer index).

        The kept pairs keep their respondents and tasks. With ``drop_unused_items`` only
        items that appear in the kept pairs remain (and indices are renumbered).
        """
        sel = np.asarray(mask_or_index)
        pairs = self.pairs[sel]
        resp = self.respondent[sel] if self.respondent is not None else None
        task = self.task[sel] if self.task is not None else None
        sits = self._kept_situations(sel)
        if not drop_unused_items:
            return replace(self, pairs=pairs, respondent=resp, task=task, situations=sits)
        used = np.unique(pairs) if sits is None else np.union1d(np.unique(pairs), sits.item)
        remap = np.full(self.n_items, -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        return replace(
            self,
            X=self.X[used],
            pairs=remap[pairs] if len(pairs) else pairs.reshape(0, 2),
            items=self.items.iloc[used].reset_index(drop=True) if self.items is not None else None,
            item_ids=self.ids()[used],
            respondent=resp,
            task=task,
            situations=None if sits is None else sits.with_items(remap),
        )

    def _kept_situations(self, sel: np.ndarray) -> ChoiceSituations | None:
        """The situations of a pair selection: those whose every comparison is kept (a
        selection of whole tasks); ``None`` when a situation is kept in part (then the
        kept pairs are the observations) or there are none."""
        sits = self.situations
        if sits is None:
            return None
        mask = np.zeros(self.n_pairs, dtype=bool)
        mask[sel] = True
        kept = np.bincount(sits.pair[mask], minlength=sits.n_situations)
        total = np.bincount(sits.pair, minlength=sits.n_situations)
        if ((kept > 0) & (kept < total)).any():
            return None
        return sits.select(kept > 0, sits.pair[sel])

    def for_respondent(self, respondent: Any) -> PreferenceData:
        """Pairs of one respondent, keeping only the items they saw."""
        if self.respondent is None:
            raise DataValidationError(f"{self.source}: no respondent ids, data are pooled")
        mask = self.respondent == respondent
        if not mask.any():
            raise KeyError(f"{self.source}: no pairs for respondent {respondent!r}")
        return self.select_pairs(mask, drop_unused_items=True)

    @classmethod
    def from_frame(
        cls,
        items: pd.DataFrame,
        pairs: np.ndarray | Sequence[Sequence[int]],
        schema: Schema | None = None,
        **kwargs: Any,
    ) -> PreferenceData:
        """Encode an item table with ``schema`` (inferred if ``None``) and attach pairs."""
        if schema is None:
            schema = Schema.infer(items)
        source = kwargs.get("source", "data")
        X = schema.encode(items, source=f"{source} items")
        return cls(X=X, pairs=np.asarray(pairs), schema=schema, items=items, **kwargs)


@dataclass
class Study:
    """A named case study with provenance, as listed by the registry and the dashboard.

    Attributes
    ----------
    key
        Registry key (``"train"``, ``"sushi-a"``...).
    title
        Display title.
    schema
        Item schema.
    data
        Pooled preference data; ``data.respondent`` identifies respondents.
    description, source, citation, license
        Provenance shown with every view of the study.
    users
        Optional respondent feature table (index = respondent id).
    user_schema
        Optional schema of ``users``.
    extras
        Loader-specific extras (e.g. the true ranking of each Sushi user). One key is
        read by the core: ``extras[TRUE_UTILITY]`` (``"true_utility"``), a mapping from
        item id (as text) to the item's true utility, when the study knows it (the PMR
        demo's urgency); live sessions on the study's items then report regret against
        it (:func:`pbo_core.session.study_item_set`).
    plan
        The study's analysis plan (:class:`pbo_core.plan.AnalysisPlan`): split, sample,
        baseline, attribute roles, alternatives, case-specific variables. ``None``: the
        default plan (:func:`pbo_core.plan.plan_of`).
    kind
        What the study is made of (:data:`StudyKind`): ``conjoint``, ``items`` or
        ``text``; models that need one (:func:`pbo_core.registry.not_applicable`) read it.
    columns
        What every column of the study's data means (:class:`ColumnRole`), as its loader
        or the import decided; ``()`` for a study built in code.
    """

    key: str
    title: str
    schema: Schema
    data: PreferenceData
    description: str = ""
    source: str = ""
    citation: str = ""
    license: str = ""
    users: pd.DataFrame | None = None
    user_schema: Schema | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    plan: Any = None  # pbo_core.plan.AnalysisPlan (that module builds on this one)
    kind: StudyKind = "conjoint"
    columns: tuple[ColumnRole, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in STUDY_KINDS:
            raise DataValidationError(
                f"study {self.key!r}: kind {self.kind!r} is not one of {STUDY_KINDS}"
            )
        self.columns = tuple(self.columns)

    def respondents(self) -> np.ndarray:
        """Respondent ids in order of appearance."""
        return self.data.respondents()

    def for_respondent(self, respondent: Any) -> PreferenceData:
        """The preference data of one respondent."""
        return self.data.for_respondent(respondent)

    def counts(self) -> dict[str, int]:
        """Numbers of respondents, items and comparisons."""
        return {
            "respondents": len(self.respondents()),
            "items": self.data.n_items,
            "comparisons": self.data.n_pairs,
        }
