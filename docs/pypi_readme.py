"""The package's long description (what PyPI shows): ``README.pypi.md``, generated from ``README.md``.

A link in README.md to a file of the project (``[tutorial](docs/tutorial.md)``) works in a checkout and on a code
host, but on PyPI it points nowhere: PyPI renders the description on its own page, where a relative address has no
base. gradcodes has no public address to make such links absolute, so the description PyPI shows writes each
relative link as its text followed by the path it names, in code font (``tutorial (`docs/tutorial.md`)``), and a
relative image as its alternative text and path; links to absolute addresses (``https://``, ``mailto:``) and to
anchors of the same page stay links. The files named are in the source distribution (``pip download --no-binary
:all: --no-deps gradcodes``), which says the description's first paragraph.

    python docs/pypi_readme.py            # rewrite README.pypi.md
    python docs/pypi_readme.py --check    # exit 1 when README.pypi.md differs from what this script generates

``tests/test_pypi_readme.py`` runs the check and tests the rewriting; ``.ci/package-check`` checks that the built
wheel's metadata carries this description and renders (``twine check``).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "README.md"
TARGET = ROOT / "README.pypi.md"

HEADER = "<!-- Generated from README.md by docs/pypi_readme.py: edit README.md, then run that script. -->\n"
NOTE = (
    "*This is the project's README.md as PyPI shows it: the files it names (`docs/...`, `benchmarks/...`,\n"
    "`CHANGELOG.md`) are in the source distribution (`pip download --no-binary :all: --no-deps gradcodes`),\n"
    "and the documentation builds from it (`sphinx-build -b html docs html`).*\n"
    "\n"
)

# [text](target) or ![alt](target), target without spaces or parentheses, optionally with a "title"; the text may
# hold inline code but no brackets (README.md has none: tests/test_pypi_readme.py checks)
_LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\[\]]*)\]\((?P<target>[^()\s]+)(?:\s+\"[^\"]*\")?\)")
_ABSOLUTE = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|#|//)")


def is_relative(target: str) -> bool:
    """True for a link target that names a file of the project (no scheme, not an anchor, not ``//host``)."""
    return not _ABSOLUTE.match(target)


def _plain(match: re.Match[str]) -> str:
    text, target = match.group("text"), match.group("target")
    if not is_relative(target):
        return match.group(0)
    path = target.split("#", 1)[0] or target
    if text.strip("`") in (path, path.rsplit("/", 1)[-1]):  # [guide.md](docs/guide.md) -> `docs/guide.md`
        return f"`{path}`"
    if match.group("bang"):
        return f"{text} (image: `{path}`)" if text else f"(image: `{path}`)"
    return f"{text} (`{path}`)"


def convert(markdown: str) -> str:
    """README.md's text with every relative link or image written as text and path (see the module docstring).

    Fenced code blocks are copied unchanged (a ``[x](y)`` inside one is code, not a link).
    """
    out: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines(keepends=True):
        stripped = line.lstrip()
        if fence is None and (stripped.startswith("```") or stripped.startswith("~~~")):
            fence = stripped[:3]
            out.append(line)
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            out.append(line)
            continue
        out.append(_convert_line(line))
    return "".join(out)


def _convert_line(line: str) -> str:
    spans = _code_spans(line)
    return _LINK.sub(lambda m: m.group(0) if _inside(m.start(), spans) else _plain(m), line)


_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def _code_spans(line: str) -> list[tuple[int, int]]:
    """The [start, end) ranges of the inline code spans of one line (a link that starts in one is code)."""
    return [m.span() for m in _CODE.finditer(line)]


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in spans)


def relative_links(markdown: str) -> list[str]:
    """The relative link and image targets left in ``markdown`` outside code (empty for a good description)."""
    found: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines():
        stripped = line.lstrip()
        if fence is None and (stripped.startswith("```") or stripped.startswith("~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        spans = _code_spans(line)
        found += [
            m.group("target")
            for m in _LINK.finditer(line)
            if is_relative(m.group("target")) and not _inside(m.start(), spans)
        ]
    return found


def generate(source: Path = SOURCE) -> str:
    """The text of ``README.pypi.md`` for ``source``: the converted README with the note after its title."""
    text = convert(source.read_text(encoding="utf-8"))
    title, sep, rest = text.partition("\n\n")
    if not title.startswith("# ") or "\n" in title:
        raise ValueError(f"{source.name} must open with a one-line '# title' and a blank line")
    return HEADER + title + sep + NOTE + rest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when README.pypi.md differs from the generated text")
    args = ap.parse_args(argv)
    text = generate()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET.name} is out of date: run `python docs/pypi_readme.py`", file=sys.stderr)
            return 1
        print(f"{TARGET.name} is up to date")
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
