"""Shared fixtures of the conjoint tests: four attributes, a small long-format table."""

from pathlib import Path

import pandas as pd

from data_loaders.conjoint import Attribute, load_conjoint_long

ATTRS = [
    Attribute("price", "numeric", label="Price", unit="EUR", values=(10, 20, 30)),
    Attribute("size", "ordinal", levels=("small", "medium", "large"), label="Size"),
    Attribute("colour", "categorical", levels=("red", "green", "blue")),
    Attribute("eco", "binary", label="Eco label"),
]


def long_frame() -> pd.DataFrame:
    # respondent 1: task 1 three profiles (a chosen), task 2 two profiles + opt-out chosen
    # respondent 2: task 1 shares profile (10, small, red, no) with respondent 1
    rows = [
        (1, 1, "a", 1, 10, "small", "red", "no"),
        (1, 1, "b", 0, 20, "medium", "green", "yes"),
        (1, 1, "c", 0, 30, "large", "blue", "no"),
        (1, 2, "a", 0, 10, "large", "red", "yes"),
        (1, 2, "b", 0, 20, "small", "blue", "no"),
        (1, 2, "none", 1, None, None, None, None),
        (2, 1, "a", 0, 10, "small", "red", "no"),
        (2, 1, "b", 1, 30, "small", "green", "yes"),
    ]
    cols = ["resp", "task", "alt", "chosen", "price", "size", "colour", "eco"]
    return pd.DataFrame(rows, columns=cols)


def load(frame: pd.DataFrame | Path, **kw):
    opts = dict(
        respondent="resp", task="task", alternative="alt", chosen="chosen",
        opt_out_alternatives=("none",),
    )  # fmt: skip
    opts.update(kw)
    return load_conjoint_long(frame, ATTRS, **opts)


def write(frame: pd.DataFrame, tmp_path: Path, name: str = "data.csv") -> Path:
    p = tmp_path / name
    frame.to_csv(p, index=False)
    return p
