"""Fail when a page of the built documentation site names a private object of gradcodes.

Usage: ``python docs/check_site.py SITE_DIR`` (the directory ``sphinx-build -b html docs SITE_DIR`` wrote).

Every ``*.html`` page under ``SITE_DIR`` is searched, text and attributes alike (a link's title, a signature),
for a dotted name with a private component, ``gradcodes._core.code.GradientCode`` or
``gradcodes.torch._job``: a reader cannot import it, so the public path (``gradcodes.GradientCode``) or a docs page
must stand there instead. ``design.html`` (the developers' map of the private modules, which names them on
purpose) and the ``_sources`` / ``_static`` copies are exempt. Exit status 1 with one ``page: name`` line per
distinct name and page, 0 when no page names one; 2 when ``SITE_DIR`` holds no HTML page at all (a wrong
directory must not pass).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PRIVATE = re.compile(r"\bgradcodes(?:\.[A-Za-z]\w*)*\._\w*(?:\.\w+)*")
EXEMPT_PAGES = {"design.html"}
EXEMPT_DIRS = {"_sources", "_static", "_images", "_downloads"}


def private_names(site: Path) -> tuple[int, list[tuple[str, str]]]:
    """``(pages searched, sorted distinct (page, name) pairs)`` of the private names on the site's pages."""
    pages = 0
    found: set[tuple[str, str]] = set()
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site)
        if rel.parts[0] in EXEMPT_DIRS or rel.as_posix() in EXEMPT_PAGES:
            continue
        pages += 1
        for m in PRIVATE.finditer(page.read_text(encoding="utf-8", errors="replace")):
            found.add((rel.as_posix(), m.group(0)))
    return pages, sorted(found)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python docs/check_site.py SITE_DIR (a built HTML site)", file=sys.stderr)
        return 2
    pages, found = private_names(Path(args[0]))
    if pages == 0:
        print(f"{args[0]}: no HTML page to check", file=sys.stderr)
        return 2
    for page, name in found:
        print(f"{page}: {name}")
    if found:
        print(f"{len(found)} private name(s) on {len({p for p, _ in found})} of {pages} pages "
              "(cite the public object or a docs page instead)", file=sys.stderr)
        return 1
    print(f"{pages} pages, no private name")
    return 0


if __name__ == "__main__":
    sys.exit(main())
