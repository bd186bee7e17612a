"""CITATION.cff parses, describes the software, and names every paper listed in docs/references.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent


def _papers() -> list[tuple[str, str]]:
    """(label, title) of every entry of docs/references.md: ``* **Label.** authors. *Title.* venue``."""
    text = (ROOT / "docs" / "references.md").read_text()
    entries = re.findall(r"^\* \*\*(.+?)\*\*.*?\*(.+?)\*", text, flags=re.MULTILINE | re.DOTALL)
    return [(label.strip().rstrip("."), " ".join(title.split()).rstrip(".")) for label, title in entries]


def _norm(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", title.lower()).strip()


def test_citation_file_describes_the_software() -> None:
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert data["cff-version"].startswith("1.2")
    assert data["type"] == "software"
    assert data["title"].startswith("gradcodes")
    assert data["authors"] and data["message"]
    for ref in data["references"]:
        assert {"type", "title", "authors", "year"} <= set(ref), ref
        assert isinstance(ref["year"], int)
        assert all("family-names" in a or "name" in a for a in ref["authors"])


def test_references_page_lists_the_papers() -> None:
    labels = [label for label, _ in _papers()]
    # the papers whose constructions are implemented, and the numerical analysis the rules rest on
    assert len(labels) == 19, labels


@pytest.mark.parametrize("label, title", _papers())
def test_citation_file_names_each_paper(label: str, title: str) -> None:
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    titles = {_norm(ref["title"]): ref for ref in data["references"]}
    assert _norm(title) in titles, f"{label}: {title!r} not among the references of CITATION.cff"
    year = re.search(r"(19|20)\d\d", label)
    if year:   # the label's year ("Tandon et al. 2017") is the cited year
        assert titles[_norm(title)]["year"] == int(year.group(0)), label
