"""``report --money-attribute`` on a registry study: a numeric attribute, or a clear error."""

from __future__ import annotations

import pytest

from pbo_core.experiments import cli


def test_report_refuses_a_money_attribute_that_is_not_numeric(tmp_path) -> None:
    out = tmp_path / "report.html"
    argv = ["report", "--study", "train", "--model", "dt", "--out", str(out)]
    with pytest.raises(SystemExit, match=r"'comfort' is not a numeric attribute of train"):
        cli.main([*argv, "--money-attribute", "comfort"])
    assert not out.exists()


def test_hierarchy_takes_a_money_attribute() -> None:
    args = cli.build_parser().parse_args(["hierarchy", "--study", "swissmetro"])
    assert args.money_attribute is None  # the study's own (SwissMetro: cost)
    args = cli.build_parser().parse_args(
        ["hierarchy", "--study", "swissmetro", "--money-attribute", "cost"]
    )
    assert args.money_attribute == "cost"
