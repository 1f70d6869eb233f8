"""The command line of ``python -m data_loaders`` before any data is read: its parser and
the checks of an import that need neither pandas nor the data model.

``python -m data_loaders import-study`` runs :func:`first_checks` before it loads the
rest of the command (:mod:`data_loaders.cli`), so a hostile flag, recipe or file is
answered in one sentence at the cost of the interpreter's start: the column flags
(:func:`data_loaders.fields.flags_refusal`: every text bounded, the availability
conditions and zero rules read), a recipe's bytes
(:func:`data_loaders.fields.recipe_file_refusal`), the title, the file's access and
bounds, the separator and the encoding (:func:`data_loaders.readers.refusal`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

from data_loaders import fields, readers
from data_loaders.access import check_file
from data_loaders.flags import add_column_args

__all__ = ["build_parser", "first_checks", "refused_early"]


def build_parser(plan_names: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """The ``python -m data_loaders`` parser (``plan_names``: the analysis plan's names
    and what each sets, listed in ``plan --help``; :data:`data_loaders.plans.PLAN_KEYS`)."""
    p = argparse.ArgumentParser(
        prog="python -m data_loaders",
        description="Import an analyst's own choice data into the per-user data folder.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    imp = sub.add_parser(
        "import-study",
        help="check a choice file and save it as a study (as the Add-a-study form does)",
        description=f"Check a choice file (long or wide; {readers.accepted_text()}) and save "
        "it as a study in $DTPBO_DATA_HOME/studies. Prints the study's key on the last line of "
        "stdout; what was inferred and any problem go to stderr (exit status 2, nothing "
        "saved, on a problem).",
    )
    imp.add_argument(
        "file",
        help=f"the choice data ({readers.accepted_text()}); a zip must hold one table",
    )
    imp.add_argument(
        "--sep",
        default=None,
        help="the separator of a text file: ',' ';' '\\t' (or tab) '|' or spaces "
        "(default: detected from the first lines; the detected one is said on stderr)",
    )
    imp.add_argument(
        "--encoding",
        default=None,
        help=f"the encoding of a text file, one of {', '.join(readers.ENCODINGS)} "
        "(default: a recipe's, else detected: UTF-8, UTF-16 with its mark, else cp1252, "
        "else latin-1)",
    )
    imp.add_argument("--title", default=None, help="the study's title (needed unless --dry-run)")
    imp.add_argument(
        "--public",
        action="store_true",
        help="publish it to every visitor of a shared server (default: seen by no visitor "
        "until publish-study)",
    )
    imp.add_argument(
        "--dry-run",
        action="store_true",
        help="print what the import understood (layout, alternatives and their attributes, "
        "availability, respondents, choice situations, rows dropped by reason) and save nothing",
    )
    imp.add_argument(
        "--recipe",
        default=None,
        help="a recipe (JSON) of an earlier import (recipe.json of a saved study, or the "
        "form's download) replayed exactly; its column choices replace the column flags",
    )
    imp.add_argument(
        "--write-recipe",
        default=None,
        metavar="PATH",
        help="also write the import's recipe to PATH (with --dry-run too)",
    )
    add_column_args(imp)
    pub = sub.add_parser(
        "publish-study",
        help="publish a saved study to every visitor of a shared server",
        description="Publish a saved study (its key, as import-study printed it) to every "
        "visitor of a shared server, or withdraw it with --withdraw.",
    )
    pub.add_argument("key", help="the study's key (my-...)")
    pub.add_argument("--withdraw", action="store_true", help="withdraw a published study")
    sub.add_parser("list-studies", help="list the saved studies and who sees them")
    rm = sub.add_parser("remove-study", help="delete a saved study, whoever imported it")
    rm.add_argument("key", help="the study's key (my-...)")
    names = ""
    if plan_names:
        names = " Names: " + "; ".join(f"{k}: {v}" for k, v in plan_names.items())
    pl = sub.add_parser(
        "plan",
        help="show or edit a study's analysis plan (split, sample, roles, baseline)",
        description="Show a study's analysis plan, the one set of choices every page, "
        "command and the report read; --set NAME=VALUE edits it (saved in "
        "$DTPBO_DATA_HOME/plans), --reset goes back to the loader's or import's." + names,
    )
    pl.add_argument("--study", required=True, help="the study's key (train, my-...)")
    pl.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE", help="edits")
    pl.add_argument("--reset", action="store_true", help="remove the saved edits")
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    return p


def first_checks(args: argparse.Namespace) -> tuple[str | None, str | None, str | None]:
    """The checks of ``import-study`` that read no data: ``(refusal, sep, encoding)``, the
    refusal one line (``None``: passed), the separator and encoding as the readers take
    them."""
    path = Path(args.file)
    refusal = fields.flags_refusal(args)
    if refusal:
        return refusal, None, None
    if getattr(args, "recipe", None):
        try:
            refusal = fields.recipe_file_refusal(check_file(args.recipe, "recipe"))
        except OSError as exc:
            refusal = str(exc)
        if refusal:
            return refusal, None, None
    if not args.title and not args.dry_run:
        return "--title is needed to save a study (or --dry-run to only preview it)", None, None
    try:
        check_file(path, "choice file")
    except OSError as exc:  # absent, refused by the access rules
        return str(exc), None, None
    try:
        sep = readers.parse_sep(getattr(args, "sep", None))
    except ValueError as exc:
        return f"--sep: {exc}", None, None
    encoding = getattr(args, "encoding", None)
    if encoding is not None:
        try:
            encoding = readers.encoding_name(encoding)
        except ValueError as exc:
            return f"{path}: --encoding {exc}", None, None
    refusal = readers.refusal(path, str(path), sep, encoding=encoding)  # standard library only
    return refusal or None, sep, encoding


def refused_early(argv: Sequence[str]) -> str | None:
    """The one-line refusal of an ``import-study`` command line by :func:`first_checks`
    (``None`` for every other command, and for one that passes)."""
    if list(argv[:1]) != ["import-study"]:
        return None
    refusal, _, _ = first_checks(build_parser().parse_args(list(argv)))
    return refusal
