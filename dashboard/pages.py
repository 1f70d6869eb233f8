"""The dashboard's pages, in sidebar order: one table for the app and its browser tests."""

from __future__ import annotations

from pathlib import Path

__all__ = ["PAGES", "url_titles"]

#: ``(script in dashboard/views, title, icon)``; the first is the default page.
PAGES: tuple[tuple[str, str, str], ...] = (
    ("case_studies.py", "Case studies", ":material/library_books:"),
    ("tree_explorer.py", "Tree explorer", ":material/account_tree:"),
    ("sensitivity.py", "Feature sensitivity", ":material/tune:"),
    ("convergence.py", "Convergence", ":material/show_chart:"),
    ("hierarchy.py", "User/item hierarchy", ":material/groups:"),
    ("elicitation.py", "Live elicitation", ":material/touch_app:"),
    ("pmr.py", "PMR features", ":material/inbox:"),
)


def url_titles() -> dict[str, str]:
    """Each page's URL path -> title, as Streamlit serves them (the default page at ``""``,
    the others at their script's name)."""
    return {("" if i == 0 else Path(f).stem): title for i, (f, title, _) in enumerate(PAGES)}
