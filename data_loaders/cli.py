"""``python -m data_loaders``: scripted import of an analyst's own study.

``import-study FILE --title T [--format long|wide] [--attributes A.json] [column flags]``
checks the file and saves it into the per-user data folder exactly as the Case studies
page's Add-a-study form does (:func:`data_loaders.user_studies.save_study`;
``$DTPBO_DATA_HOME`` overrides the folder). What was inferred (layout, alternatives,
choice column, attribute table, money attribute) is said on stderr, one line each; the
study's key is printed alone on the last line of stdout. Problems are one line each on
stderr, the exit status is 2 and nothing is saved.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from data_loaders import limits
from data_loaders.access import check_file
from data_loaders.flags import add_column_args

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m data_loaders`` parser."""
    p = argparse.ArgumentParser(
        prog="python -m data_loaders",
        description="Import an analyst's own choice data into the per-user data folder.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    imp = sub.add_parser(
        "import-study",
        help="check a choice file and save it as a study (as the Add-a-study form does)",
        description="Check a choice file (CSV, long or wide; .gz allowed) and save it as a "
        "study in $DTPBO_DATA_HOME/studies. Prints the study's key on the last line of "
        "stdout; what was inferred and any problem go to stderr (exit status 2, nothing "
        "saved, on a problem).",
    )
    imp.add_argument("file", help="the choice data (CSV)")
    imp.add_argument("--title", required=True, help="the study's title")
    add_column_args(imp)
    return p


def _say(line: str) -> None:
    print(" ".join(line.split()), file=sys.stderr)


def _count(n: int, plural: str) -> str:
    return f"{n:,} {plural if n != 1 else plural[:-1]}"


def import_study(args: argparse.Namespace) -> int:
    """Check and save; the exit status.

    The file's access and bounds are checked first, with the standard library only
    (:func:`data_loaders.limits.csv_file_refusal`); pandas and the data model are loaded
    after that.
    """
    path = Path(args.file)
    try:
        check_file(path, "choice file")
    except OSError as exc:  # absent, refused by the access rules
        _say(f"error: {exc}")
        return 2
    refusal = limits.csv_file_refusal(path, str(path))
    if refusal:
        _say(f"error: {refusal}")
        return 2
    from data_loaders.user_studies import attributes_from_json, column_map, save_study
    from pbo_core.data import DataValidationError

    try:
        content = limits.read_csv_bytes(path, str(path))
        attributes = None
        if args.attributes:
            apath = check_file(args.attributes, "attribute table")
            blob = limits.file_bytes(apath, limits.MAX_JSON_BYTES, str(apath))
            attributes, problems = attributes_from_json(blob, str(apath))
            if problems:
                for p in problems:
                    _say(f"error: {p.one_line()}")
                return 2
        meta, problems = save_study(args.title, content, path.name, attributes, column_map(args))
    except (DataValidationError, OSError) as exc:  # limits, access refusals, absent files
        _say(f"error: {exc}")
        return 2
    if meta is None:
        for p in problems:
            _say(f"error: {p.one_line()}")
        return 2
    for note in meta.notes:
        _say(f"inferred: {note}")
    counts = ", ".join(
        _count(meta.counts.get(k, 0), k) for k in ("respondents", "items", "comparisons")
    )
    _say(f"saved {meta.title!r} ({meta.format}; {counts}) in {meta.folder}")
    print(meta.key)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = build_parser().parse_args(argv)
    if args.command == "import-study":
        return import_study(args)
    return 2  # pragma: no cover - argparse requires a command
