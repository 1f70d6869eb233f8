"""``python -m data_loaders``: scripted import of an analyst's own study.

``import-study FILE --title T [--format long|wide] [--sep S] [--attributes A.json] [column flags]
[--dry-run] [--recipe R] [--write-recipe R]``
reads the file in any format of :mod:`data_loaders.readers` (CSV with any separator,
detected unless ``--sep`` names it; TSV, Biogeme's ``.dat``, Parquet, ``.xlsx``; gzip,
bz2 or a one-table zip of those), checks it and saves it into the per-user data folder
exactly as the Case studies page's Add-a-study form does
(:func:`data_loaders.user_studies.save_study`; ``$DTPBO_DATA_HOME`` overrides the folder).
How it was read (format, separator) and what was inferred (layout, alternatives, choice
column, attribute table, money attribute) is said on stderr, one line each; the study's
key is printed alone on the last line of stdout. Problems are one line each on
stderr, the exit status is 2 and nothing is saved. ``--dry-run`` prints the preview
(:func:`data_loaders.recipes.preview_lines`, what the form shows) and saves nothing;
``--recipe R`` replays a saved import's choices (:mod:`data_loaders.recipes`);
``--write-recipe R`` writes them.

On a shared server (``DTPBO_SHARED_SERVER=1``) a study is seen only by the visitor who
imported it; the operator decides what everyone sees:

``import-study FILE --title T --public``
    imports and publishes at once;
``publish-study KEY`` / ``publish-study KEY --withdraw``
    publishes a saved study to every visitor, or withdraws it (its owner, if a visitor
    imported it, keeps it);
``list-studies``
    lists the saved studies: key, published or whose (a visitor's hash, shortened), title;
``remove-study KEY``
    deletes a saved study, whoever imported it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from data_loaders import fields, limits, readers
from data_loaders.access import check_file
from data_loaders.flags import add_column_args
from data_loaders.plans import PLAN_KEYS, edit_plan, remove_plan, save_plan
from data_loaders.recipes import preview_lines, read_recipe, recipe_of
from data_loaders.registry import load_study
from data_loaders.user_studies import (
    attributes_from_json,
    check_upload,
    column_map,
    list_user_studies,
    remove_user_study,
    save_study,
    set_public,
    user_study,
)
from pbo_core.errors import DataValidationError
from pbo_core.plan import plan_of

__all__ = ["build_parser", "main"]


def build_parser(plan_keys: bool = True) -> argparse.ArgumentParser:
    """The ``python -m data_loaders`` parser (``plan_keys``: list the analysis plan's
    names in ``plan --help``, which loads the data model; :func:`main` does only for
    ``plan``, so ``import-study`` answers a refused file or flag before loading it)."""
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
    if plan_keys:
        names = " Names: " + "; ".join(f"{k}: {v}" for k, v in PLAN_KEYS.items())
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


def _say(line: str) -> None:
    print(" ".join(line.split()), file=sys.stderr)


def _count(n: int, plural: str) -> str:
    return f"{n:,} {plural if n != 1 else plural[:-1]}"


def import_study(args: argparse.Namespace) -> int:
    """Check and save; the exit status.

    The column flags (:func:`data_loaders.fields.flags_refusal`: every text bounded, the
    availability conditions and zero rules read), the encoding, a recipe's bytes
    (:func:`data_loaders.fields.recipe_refusal`) and the file's access and bounds (and a
    text file's separator, :func:`data_loaders.readers.refusal`) are checked first, with
    the standard library only; pandas and the data model are loaded after that.
    """
    path = Path(args.file)
    refusal = fields.flags_refusal(args)
    if refusal:
        _say(f"error: {refusal}")
        return 2
    if getattr(args, "recipe", None):
        try:
            refusal = fields.recipe_file_refusal(check_file(args.recipe, "recipe"))
        except OSError as exc:
            refusal = str(exc)
        if refusal:
            _say(f"error: {refusal}")
            return 2
    if not args.title and not args.dry_run:
        _say("error: --title is needed to save a study (or --dry-run to only preview it)")
        return 2
    try:
        check_file(path, "choice file")
    except OSError as exc:  # absent, refused by the access rules
        _say(f"error: {exc}")
        return 2
    try:
        sep = readers.parse_sep(getattr(args, "sep", None))
    except ValueError as exc:
        _say(f"error: --sep: {exc}")
        return 2
    encoding = getattr(args, "encoding", None)
    if encoding is not None:
        try:
            encoding = readers.encoding_name(encoding)
        except ValueError as exc:
            _say(f"error: {path}: --encoding {exc}")
            return 2
    refusal = readers.refusal(path, str(path), sep, encoding=encoding)  # standard library only
    if refusal:
        _say(f"error: {refusal}")
        return 2
    try:
        content = path.read_bytes()  # bounded by the refusal above; read by save_study
        attributes = None
        columns = column_map(args)
        if getattr(args, "recipe", None):
            recipe = read_recipe(check_file(args.recipe, "recipe"))
            columns = recipe.columns
            attributes = list(recipe.attributes) if recipe.attributes is not None else None
            if sep is None and recipe.sep is not None:
                sep = recipe.sep
            if encoding is None and recipe.encoding is not None:
                encoding = recipe.encoding  # --encoding wins, as --sep does
                refusal = readers.refusal(path, str(path), sep, encoding=encoding)
                if refusal:
                    _say(f"error: {refusal}")
                    return 2
            _say(f"recipe: {Path(args.recipe).name} (its column choices replace the flags)")
        if args.attributes:
            apath = check_file(args.attributes, "attribute table")
            blob = limits.file_bytes(apath, limits.MAX_JSON_BYTES, str(apath))
            attributes, problems = attributes_from_json(blob, str(apath))
            if problems:
                for p in problems:
                    _say(f"error: {p.one_line()}")
                return 2
        if args.dry_run or args.write_recipe:
            study, problems = check_upload(
                content, path.name, attributes, columns, sep=sep, encoding=encoding
            )
            if study is None:
                for p in problems:
                    _say(f"error: {p.one_line()}")
                return 2
            if args.write_recipe:
                Path(args.write_recipe).write_text(
                    recipe_of(study, sep, encoding).to_json(), encoding="utf-8"
                )
                _say(f"recipe written to {args.write_recipe}")
            if args.dry_run:
                for note in study.extras.get("import_notes", []):
                    _say(f"inferred: {note}")
                print("preview (nothing saved):")
                for line in preview_lines(study):
                    print(f"  {line}")
                return 0
        meta, problems = save_study(
            args.title,
            content,
            path.name,
            attributes,
            columns,
            public=bool(getattr(args, "public", False)),
            sep=sep,
            encoding=encoding,
        )
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
    if meta.public:
        _say("published: every visitor of a shared server sees it")
    print(meta.key)
    return 0


def _who(meta: object) -> str:
    if getattr(meta, "public", False):
        return "published"
    owner = str(getattr(meta, "owner", ""))
    return f"visitor {owner[:8]}" if owner else "operator (unpublished)"


def publish_study(args: argparse.Namespace) -> int:
    """Publish (or withdraw) a saved study; the exit status."""
    try:
        meta = set_public(args.key, not args.withdraw)
    except KeyError as exc:
        _say(f"error: {exc.args[0]}")
        return 2
    _say(f"{meta.key}: {_who(meta)}")
    return 0


def list_studies(args: argparse.Namespace) -> int:
    """One line per saved study: key, who sees it, title."""
    for meta in list_user_studies():
        print(f"{meta.key}\t{_who(meta)}\t{meta.title}")
    return 0


def remove_study(args: argparse.Namespace) -> int:
    """Delete a saved study; the exit status."""
    if user_study(args.key) is None:
        _say(f"error: no imported study {args.key!r}")
        return 2
    remove_user_study(args.key)
    _say(f"removed {args.key}")
    return 0


def plan(args: argparse.Namespace) -> int:
    """Show, edit or reset a study's analysis plan; the exit status."""
    try:
        if args.reset:
            _say("reset" if remove_plan(args.study) else "no saved edits")
        study = load_study(args.study)
        if args.set:
            changes = {}
            for item in args.set:
                name, eq, value = item.partition("=")
                if not eq:
                    _say(f"error: --set {item!r}: write NAME=VALUE")
                    return 2
                changes[name.strip()] = value
            new = edit_plan(study, changes)
            _say(f"saved {save_plan(args.study, new)}")
            study = load_study(args.study)
    except (KeyError, ValueError, OSError) as exc:  # DataValidationError is a ValueError
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        _say(f"error: {msg}")
        return 2
    p = plan_of(study)
    if args.json:
        print(json.dumps(p.to_dict(), indent=2))
    else:
        print(p.line())
        for note in p.notes:
            print(f"  note: {note}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(plan_keys=argv[:1] == ["plan"]).parse_args(argv)
    commands = {
        "import-study": import_study,
        "publish-study": publish_study,
        "list-studies": list_studies,
        "remove-study": remove_study,
        "plan": plan,
    }
    if args.command in commands:
        return commands[args.command](args)
    return 2  # pragma: no cover - argparse requires a command
