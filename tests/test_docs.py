"""README.md, CONTRIBUTING.md and docs/: every relative link resolves, every quoted command parses.

Links: each ``[text](target)`` and ``![alt](target)`` that is not a URL must name an
existing file relative to the page, and an ``#anchor`` into a Markdown page must match
one of its headings (GitHub's slugs). Commands: each ``python -m <module> ...`` quoted in a
code span or a fenced block is parsed by that module's own command line (the argparse
parser of ``pbo_core.bench``, ``pbo_core.experiments`` and ``feature_extraction``,
Streamlit's for ``dashboard``) without running it; ``python <script>.py`` must name an
existing script. The README's Python example is run.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]

#: Modules documented as third-party servers: named, not parsed.
EXTERNAL = {"llama_cpp.server"}

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_SPAN = re.compile(r"`([^`]+)`")
_PY_M = re.compile(r"(?:^|\s|/)python3? -m (\S+)(.*)")
_PY_SCRIPT = re.compile(r"(?:^|\s|/)python3? ((?:\w|/|\.|-)+\.py)\b")
_SHELL_STOP = {"|", ">", ">>", "2>", "&&", "||", ";", "&", "2>&1"}


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def _links() -> Iterator[tuple[Path, str]]:
    for page in PAGES:
        # code blocks and code spans show text literally: a `[label](x)` there is no link
        text = _SPAN.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
        for m in _LINK.finditer(text):
            yield page, m.group(1)


def _commands() -> Iterator[tuple[Path, str]]:
    """``(page, command line)`` of every quoted shell command, continuations joined."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in _FENCE.finditer(text):
            if not block.group(0).startswith(("```bash", "```sh", "```console")):
                continue
            for line in block.group(1).replace("\\\n", " ").splitlines():
                yield page, line.strip()
        prose = _FENCE.sub("", text)
        for span in _SPAN.finditer(prose):
            yield page, " ".join(span.group(1).split())


def _words(rest: str) -> list[str] | None:
    """The arguments of a quoted command up to the first shell operator; None for a
    generic form with placeholders (``<command>``, ``...``)."""
    words = []
    for word in shlex.split(rest, comments=True):
        if word in _SHELL_STOP:
            break
        if word.startswith("<") or "..." in word:
            return None
        words.append(word)
    return words


def _argparse(build: Callable) -> Callable[[list[str]], str | None]:
    def check(argv: list[str]) -> str | None:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                build().parse_args(argv)
        except SystemExit as stop:
            if stop.code not in (0, None):
                return err.getvalue().strip().splitlines()[-1]
        return None

    return check


def _streamlit(argv: list[str]) -> str | None:
    import click
    from streamlit.web import cli

    try:
        cli.main_run.make_context("run", [str(ROOT / "dashboard" / "app.py"), *argv])
    except click.ClickException as exc:
        return exc.format_message()
    return None


def _parsers() -> dict[str, Callable[[list[str]], str | None]]:
    from data_loaders.cli import build_parser as import_parser
    from feature_extraction.cli import build_parser as feature_parser
    from pbo_core.experiments.bench import build_parser as bench_parser
    from pbo_core.experiments.cli import build_parser as experiments_parser

    return {
        "pbo_core.bench": _argparse(bench_parser),
        "pbo_core.experiments": _argparse(experiments_parser),
        "feature_extraction": _argparse(feature_parser),
        "data_loaders": _argparse(import_parser),
        "dashboard": _streamlit,
    }


def test_pages_found() -> None:
    names = {p.name for p in PAGES}
    assert {"README.md", "index.md", "method-and-benchmarks.md", "speed.md"} <= names


def test_relative_links_resolve() -> None:
    bad = []
    n = 0
    for page, target in _links():
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        n += 1
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{page.relative_to(ROOT)}: {target} (no heading #{anchor})")
    assert n > 20, "the link scan found almost no links"
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_quoted_commands_parse() -> None:
    parsers = _parsers()
    bad, checked = [], set()
    for page, line in _commands():
        where = page.relative_to(ROOT)
        for m in _PY_SCRIPT.finditer(line):
            if not (ROOT / m.group(1)).is_file():
                bad.append(f"{where}: python {m.group(1)} (no such script)")
        m = _PY_M.search(line)
        if m is None:
            continue
        module, words = m.group(1), _words(m.group(2))
        if module in EXTERNAL or "..." in module or words is None:
            continue
        if module not in parsers:
            bad.append(f"{where}: python -m {module} (no parser known to this test)")
            continue
        if not words or (module, tuple(words)) in checked:
            continue
        checked.add((module, tuple(words)))
        problem = parsers[module](words)
        mention = not any(w.startswith("-") for w in words)  # "`python -m X extract`"
        if problem and not (mention and "arguments are required" in problem):
            bad.append(f"{where}: python -m {module} {' '.join(words)}\n    {problem}")
    assert len(checked) > 30, "the command scan found almost no commands"
    assert not bad, "commands that do not parse:\n" + "\n".join(bad)


def test_command_check_rejects_unknown_flags() -> None:
    parsers = _parsers()
    assert parsers["pbo_core.bench"](["--functions", "branin", "--no-such-flag"])
    assert parsers["pbo_core.experiments"](["no-such-command"])
    assert parsers["dashboard"](["--server.noSuchOption=1"])
    assert parsers["pbo_core.bench"](["--functions", "branin", "--iters", "5"]) is None


def test_readme_python_example_runs(tmp_path, monkeypatch, capsys) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out.splitlines()
    n_leaves, dot = out[0].split(" ", 1)
    assert int(n_leaves) >= 2 and dot.startswith("digraph")
    assert 0.0 <= float(out[-1]) < 10.0  # Branin regret after 30 DT-PBO queries


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_has_a_title(page: Path) -> None:
    assert page.read_text(encoding="utf-8").startswith("# ")
