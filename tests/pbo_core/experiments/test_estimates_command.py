"""``python -m pbo_core.experiments estimates``: the published tables from the command's JSON
(Biogeme's SwissMetro ``01logit``, mlogit's Train MNL), its exports and its refusals."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pbo_core.experiments import cli
from pbo_core.experiments.estimates import write_estimates
from pbo_core.plan import plan_of


def sig4(x: float) -> str:
    return f"{x:.4g}"


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))


def _biogeme_01logit():
    """The bundled SwissMetro with Biogeme's 01logit selection (PURPOSE 1 or 3, CHOICE !=
    0), its two attributes (time and cost; GA holders' train and Swissmetro cost 0), the
    Swissmetro constant fixed at 0 and no respondent features in the utility."""
    from data_loaders.swissmetro import BIOGEME_PURPOSES, load_swissmetro
    from pbo_core.evaluation import drop_features

    study = load_swissmetro(purposes=BIOGEME_PURPOSES)
    data = drop_features(study.data, study.schema, ["headway", "airline_seats"])
    plan = dataclasses.replace(plan_of(study), case_specific=(), reference="Swissmetro")
    return dataclasses.replace(study, data=data, schema=data.get_schema(), plan=plan)


def test_01logit_printed_and_written_as_biogeme_publishes(tmp_path: Path, capsys) -> None:
    study = _biogeme_01logit()
    out = tmp_path / "01logit.json"
    args = cli.build_parser().parse_args(
        ["estimates", "--study", "swissmetro-01logit", "--json", str(out)]
    )
    args.columns = None

    def load(key, data_dir=None):
        assert key == "swissmetro-01logit"
        return study

    assert write_estimates(args, load_study=load, load_study_file=None) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["command"] == "estimates" and doc["model"] == "mnl"
    assert doc["plan"]["estimates"] == "mnl" and doc["plan"]["penalty"] == "none"
    s = doc["statistics"]
    assert f"{s['loglik']:.3f}" == "-5331.252" and f"{s['loglik_null']:.3f}" == "-6964.663"
    assert (s["n_choices"], s["n_respondents"], s["n_parameters"]) == (6768, 752, 4)
    assert s["penalty"] == 0 and doc["estimation"].startswith("Maximum likelihood")
    assert f"{s['rho2']:.3f}" == "0.235" and f"{s['aic']:.1f}" == "10670.5"
    assert f"{s['bic']:.2f}" == "10697.78"
    p = {r["parameter"]: r for r in doc["parameters"]}
    per100 = {"time": 100.0, "cost": 100.0, "ASC Train": 1.0, "ASC Car": 1.0}  # /100 in Biogeme
    assert {n: sig4(p[n]["estimate"] * k) for n, k in per100.items()} == {
        "time": "-1.278",
        "cost": "-1.084",
        "ASC Train": "-0.7012",
        "ASC Car": "-0.1546",
    }
    assert {n: sig4(p[n]["robust_std_err"] * k) for n, k in per100.items()} == {
        "time": "0.1043",
        "cost": "0.06823",  # Biogeme prints 0.0682
        "ASC Train": "0.08256",  # 0.0826
        "ASC Car": "0.05816",  # 0.0582
    }
    # the printed table: the same numbers, 4+ significant digits
    assert "-5331.252" in printed and "-6964.663" in printed
    for n in ("ASC Train", "ASC Car"):
        assert format(p[n]["estimate"], ".7g") in printed
        assert format(p[n]["robust_std_err"], ".5g") in printed
    assert "none (maximum likelihood)" in printed


def test_01logit_from_biogemes_dat_on_the_command_line(tmp_path: Path, capsys) -> None:
    """Biogeme's file as a tab-separated ``.dat``, imported with ``--where`` and the 01logit
    roles (GA holders' cost 0, Swissmetro the reference, units), then ``estimates``: the
    published LL, coefficients and robust errors to 4 significant digits."""
    import pandas as pd

    from data_loaders import cli as dl_cli
    from data_loaders.swissmetro import SWISSMETRO_FILE

    dat = tmp_path / "swissmetro.dat"
    pd.read_csv(SWISSMETRO_FILE).to_csv(dat, sep="\t", index=False)
    flags = [
        "--where",
        "PURPOSE in (1, 3) and CHOICE != 0",
        "--zero-when",
        "CO for TRAIN,SM when GA=1",
        "--constants",
        "yes",
        "--reference",
        "SM",
        "--units",
        "TT=min,CO=CHF",
        "--money-attribute",
        "CO",
        "--time-attribute",
        "TT",
    ]
    assert dl_cli.main(["import-study", str(dat), "--title", "01logit", *flags]) == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    out = tmp_path / "01logit.json"
    assert cli.main(["estimates", "--study", key, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    s = doc["statistics"]
    assert f"{s['loglik']:.3f}" == "-5331.252" and (s["n_choices"], s["n_respondents"]) == (
        6768,
        752,
    )
    p = {r["parameter"]: r for r in doc["parameters"]}
    per100 = {"TT": 100.0, "CO": 100.0, "ASC TRAIN": 1.0, "ASC CAR": 1.0}
    assert [sig4(p[n]["estimate"] * k) for n, k in per100.items()] == [
        "-1.278",
        "-1.084",
        "-0.7012",
        "-0.1546",
    ]
    assert [sig4(p[n]["robust_std_err"] * k) for n, k in per100.items()] == [
        "0.1043",
        "0.06823",
        "0.08256",
        "0.05816",
    ]
    assert "-5331.252" in printed and doc["value_of_time"]["unit"] == "CHF per hour"


def test_train_mnl_as_mlogit_publishes(tmp_path: Path, capsys) -> None:
    """mlogit's Train vignette (``choice ~ price + time + change + comfort | -1``, price in
    guilders x 2.20371, time in hours): the command's JSON on the bundled study."""
    out = tmp_path / "train.json"
    files = {k: tmp_path / f"train.{k}" for k in ("csv", "tex", "html")}
    assert (
        cli.main(
            [
                "estimates",
                "--study",
                "train",
                "--json",
                str(out),
                "--csv",
                str(files["csv"]),
                "--latex",
                str(files["tex"]),
                "--html",
                str(files["html"]),
            ]
        )
        == 0
    ), capsys.readouterr().err
    doc = json.loads(out.read_text())
    p = {r["parameter"]: r for r in doc["parameters"]}
    to_euro, per_hour = 1 / 2.20371, 60.0
    scale = {"price": to_euro, "time": per_hour, "changes": 1.0, "comfort": 1.0}
    assert [sig4(p[n]["estimate"] * k) for n, k in scale.items()] == [
        "-0.06736",
        "-1.721",
        "-0.3263",
        "-0.9457",
    ]
    # mlogit prints the classical (Hessian) errors
    assert [sig4(p[n]["std_err"] * k) for n, k in scale.items()] == [
        "0.003393",
        "0.1604",
        "0.05949",
        "0.06495",
    ]
    assert round(doc["statistics"]["loglik"], 1) == -1724.2
    assert doc["statistics"]["n_respondents"] == 235
    assert files["csv"].read_text().startswith("parameter,label,kind,estimate")
    assert "\\toprule" in files["tex"].read_text()
    assert "-1724.150" in files["html"].read_text()


def test_penalty_flag_and_refusals(tmp_path: Path, capsys) -> None:
    assert cli.main(["estimates", "--study", "train", "--penalty", "cv", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["plan"]["penalty"] == "cv"
    s = doc["statistics"]
    assert (s["penalty"] == 0) == (s["penalty_reason"] == "")
    assert cli.main(["estimates", "--study", "train", "--model", "logit-pooled"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no coefficient table" in err and "mnl" in err
    assert cli.main(["estimates", "--study", "train", "--penalty", "lots"]) == 2
    assert "penalty" in capsys.readouterr().err
