"""``requirements.txt`` lists exactly the runtime dependencies of ``pyproject.toml``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _normalise(requirement: str) -> str:
    """``"Scikit_Learn >= 1.3"`` -> ``"scikit-learn>=1.3"`` (PEP 503 name, no spaces)."""
    name, rest = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(.*)", requirement).groups()
    return re.sub(r"[-_.]+", "-", name).lower() + rest.replace(" ", "")


def test_requirements_txt_matches_pyproject_dependencies() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [_normalise(r) for r in project["dependencies"]]
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    listed = [_normalise(s) for s in (ln.split("#")[0].strip() for ln in lines) if s]
    assert len(declared) > 5
    assert sorted(listed) == sorted(declared), (
        f"only in requirements.txt: {sorted(set(listed) - set(declared))}; "
        f"only in pyproject.toml: {sorted(set(declared) - set(listed))}"
    )
    assert len(listed) == len(set(listed)), "requirements.txt repeats a line"


def test_normalise_compares_names_as_pip_does() -> None:
    assert _normalise("Scikit_Learn >= 1.3") == "scikit-learn>=1.3"
    assert _normalise("vl.convert-python>=1.6") == "vl-convert-python>=1.6"
