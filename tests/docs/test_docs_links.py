"""The README and the guides link only to files that exist, and to headings those files have,
so moving a guide cannot leave a dead link; the README's screenshot is there."""

import re

import pytest

from pagetest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercased, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        assert path.exists(), f"{page.name}: {target}"
        assert not anchor or anchor in _anchors(path), f"{page.name}: {target}"


def test_the_slug_is_githubs():
    assert _slug("Models and the scoring engine") == "models-and-the-scoring-engine"
    assert _slug("Theory: the Bound Explorer") == "theory-the-bound-explorer"


def test_the_index_links_every_guide():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for guide in (ROOT / "docs").glob("*.md"):
        assert guide.name == "README.md" or f"]({guide.name})" in index, guide.name
