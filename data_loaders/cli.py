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

from data_loaders import command_args, limits, readers
from data_loaders.access import check_file
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
    """The ``python -m data_loaders`` parser (:func:`data_loaders.command_args.build_parser`;
    ``plan_keys``: list the analysis plan's names in ``plan --help``)."""
    return command_args.build_parser(PLAN_KEYS if plan_keys else None)


def _say(line: str) -> None:
    print(" ".join(line.split()), file=sys.stderr)


def _count(n: int, plural: str) -> str:
    return f"{n:,} {plural if n != 1 else plural[:-1]}"


def import_study(args: argparse.Namespace) -> int:
    """Check and save; the exit status.

    What needs no data is checked first (:func:`data_loaders.command_args.first_checks`:
    the column flags, a recipe's bytes, the title, the file's access and bounds, the
    separator and the encoding); then the file is read and the study built.
    """
    path = Path(args.file)
    refusal, sep, encoding = command_args.first_checks(args)
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
