"""Every loader against the malformed-input corpus (``tests/fixtures/malformed``)."""

from __future__ import annotations

import warnings

import pytest

from data_loaders._common import DataNotAvailableError
from pbo_core.data import DataValidationError
from tests.fixtures.malformed.corpus import Accept, Error, Gap, all_cases

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.loader}-{c.kind}" for c in CASES])
def test_malformed_input(case, tmp_path) -> None:
    path = case.write(tmp_path / "case")
    if isinstance(case.expect, Gap):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case.load(path)  # still accepted: the gap is open
        pytest.xfail(case.expect.reason)
    if isinstance(case.expect, Accept):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case.load(path)
        return
    assert isinstance(case.expect, Error)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(DataValidationError) as e:
            case.load(path)
    msg = str(e.value)
    assert path.name in msg, msg
    if case.expect.place:
        assert (
            f"{case.expect.place}," in msg
            or f"{case.expect.place}:" in msg
            or (f"{case.expect.place} " in msg)
        ), msg
    if case.expect.field:
        assert case.expect.field in msg, msg
    if case.expect.why:
        assert case.expect.why in msg, msg
    assert not isinstance(e.value, DataNotAvailableError)
