"""Check the built documentation site in a real headless browser (Chromium).

Usage: ``python docs/check_browser.py SITE_DIR [--screenshots DIR] [--require]`` (``SITE_DIR`` is what
``sphinx-build -b html docs SITE_DIR`` wrote).

Static part (no browser): every page of the site is reachable from the landing page in at most two clicks, and
every page but the landing page carries a left sidebar with links (the section's navigation).

Browser part: a copy of the site gets a small probe script on a set of key pages (landing page, tutorial, user
guide, numerics with its plots, the runtimes, the API reference and one of its generated pages), and Chromium
renders each at a desktop width (1280 px) and a narrow one (800 px). The probe measures the laid-out page and the
check fails when

- the page scrolls sideways (something is wider than the window);
- a code block hides part of a line (scrolls or clips horizontally);
- on the landing page a code line wraps at the desktop width (its five-line example must read as written);
- an image did not load, or is shown at less than half its size at the desktop width (text on a plot would be
  unreadable) without a link to the full-size image;
- the visible text names a private object (``gradcodes._core...``), which a reader cannot import;
- the left sidebar is missing, hidden or empty at the desktop width (every page but the landing page);
- the landing page lacks its install line, its example, the decision guide ("Which code should I use?", a table
  of situations) or its links to the tutorial, the user guide, the API reference, the runtimes and the references.

With ``--screenshots DIR`` it also writes PNG screenshots of the landing page (which holds the decision guide),
an API page and the PyTorch page (for a person to look at; they are not committed).

The browser is ``$GRADCODES_BROWSER`` or the first of chromium, chromium-browser, google-chrome on ``PATH``. When
there is none the check says so and exits 0, unless ``--require`` is given or ``GRADCODES_REQUIRE_BROWSER=1`` (as
in CI, which installs Debian's ``chromium``): then it exits 2. Exit status 1 lists every failure, one per line.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

EXEMPT_DIRS = {"_sources", "_static", "_images", "_downloads"}
# utility pages Sphinx writes: reached through the search box and the index, not through links
UTILITY_PAGES = {"genindex.html", "py-modindex.html", "search.html"}
LANDING = "index.html"
# the pages a newcomer meets first, each rendered and measured
KEY_PAGES = ["index.html", "tutorial.html", "guide.html", "numerics.html", "ye_abbe.html", "coded_reduce.html",
             "distributed.html", "torch.html", "runtime.html", "api/index.html", "api/codes.html",
             "api/generated/gradcodes.verify.html"]
SCREENSHOTS = {"landing.png": ("index.html", 2600), "api.png": ("api/generated/gradcodes.verify.html", 1600),
               "torch.png": ("torch.html", 1600)}
WIDTHS = (1280, 800)
DESKTOP = WIDTHS[0]
PRIVATE = re.compile(r"\bgradcodes(?:\.[A-Za-z]\w*)*\._\w*")
# the landing page's links to these pages (the "Where next" cards)
LANDING_LINKS = {"tutorial.html": "tutorial", "guide.html": "user guide", "api/index.html": "API reference",
                 "distributed.html": "runtimes", "references.html": "references"}
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--allow-file-access-from-files"]

PROBE = r"""
(function () {
  function measure() {
    var r = {width: window.innerWidth, scrollWidth: document.documentElement.scrollWidth};
    var h1 = document.querySelector("h1");
    r.h1 = h1 ? h1.textContent.replace(/[\s\u00b6#]+$/, "").trim() : null;
    var sb = document.querySelector(".bd-sidebar-primary");
    if (sb) {
      var st = getComputedStyle(sb), box = sb.getBoundingClientRect();
      r.sidebar = {shown: st.display !== "none" && st.visibility !== "hidden" && box.width > 50,
                   links: sb.querySelectorAll(".bd-docs-nav a").length};
    } else { r.sidebar = null; }
    r.code = [];
    document.querySelectorAll("div.highlight pre").forEach(function (pre) {
      var st = getComputedStyle(pre);
      var lh = parseFloat(st.lineHeight);
      if (!(lh > 0)) { lh = 1.2 * parseFloat(st.fontSize); }
      var inner = pre.clientHeight - parseFloat(st.paddingTop) - parseFloat(st.paddingBottom);
      var text = pre.textContent.replace(/\n+$/, "");
      r.code.push({lines: text.split("\n").length, rendered: Math.round(inner / lh),
                   hidden: pre.scrollWidth > pre.clientWidth + 1, head: text.slice(0, 60)});
    });
    r.images = [];
    document.querySelectorAll(".bd-article img").forEach(function (img) {
      var a = img.closest("a");
      r.images.push({src: img.getAttribute("src"), natural: img.naturalWidth,
                     shown: img.getBoundingClientRect().width, loaded: img.complete && img.naturalWidth > 0,
                     linked: !!(a && a.getAttribute("href") && /\.(png|svg|jpe?g)$/i.test(a.getAttribute("href")))});
    });
    var article = document.querySelector(".bd-article") || document.body;
    r.text = article.innerText;
    r.headings = [];
    document.querySelectorAll(".bd-article h2").forEach(function (h) {
      r.headings.push(h.textContent.replace(/[\s\u00b6#]+$/, "").trim());
    });
    r.links = [];
    article.querySelectorAll("a[href]").forEach(function (a) {
      r.links.push([a.getAttribute("href"), a.textContent.trim()]);
    });
    r.tables = [];
    article.querySelectorAll("table").forEach(function (t) { r.tables.push(t.querySelectorAll("tbody tr").length); });
    var out = document.createElement("script");
    out.type = "application/json";
    out.id = "gc-probe";
    out.textContent = JSON.stringify(r).replace(/</g, "\\u003c");
    document.body.appendChild(out);
  }
  window.addEventListener("load", function () {
    var go = function () { setTimeout(measure, 50); };
    if (document.fonts && document.fonts.ready) { document.fonts.ready.then(go, go); } else { go(); }
  });
})();
"""


class _Links(HTMLParser):
    """The ``href`` of every link of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.links.append(href)


def sidebar_links(html: str) -> int:
    """How many links the page's left sidebar navigation holds (the theme's ``bd-docs-nav``; the copy of the
    top bar that the theme also puts in the sidebar for small screens does not count)."""
    m = re.search(r'<nav class="[^"]*\bbd-docs-nav\b[^>]*>(.*?)</nav>', html, re.S)
    return len(re.findall(r"<a\s[^>]*href=", m.group(1))) if m else 0


def site_pages(site: Path) -> set[str]:
    """The site's pages, as paths relative to ``site`` (``_static`` and the other copies left out)."""
    return {p.relative_to(site).as_posix() for p in site.rglob("*.html")
            if p.relative_to(site).parts[0] not in EXEMPT_DIRS}


def _read(site: Path, page: str) -> str:
    return (site / page).read_text(encoding="utf-8", errors="replace")


def _links(html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    return parser.links


def _targets(page: str, hrefs: Iterable[str], pages: set[str]) -> set[str]:
    out = set()
    for href in hrefs:
        if re.match(r"^[a-zA-Z][\w+.-]*:", href) or href.startswith("#"):
            continue
        href = href.split("#")[0].split("?")[0]
        if not href:
            continue
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), href))
        if href.endswith("/"):
            target += "/index.html"
        if target in pages:
            out.add(target)
    return out


def static_failures(site: Path) -> list[str]:
    """Pages more than two clicks from the landing page, and pages without a left sidebar with links."""
    pages = site_pages(site)
    html = {page: _read(site, page) for page in pages}
    links = {page: _links(text) for page, text in html.items()}
    depth = {LANDING: 0}
    frontier = [LANDING]
    for d in (1, 2):
        nxt = []
        for page in frontier:
            for target in _targets(page, links[page], pages):
                if target not in depth:
                    depth[target] = d
                    nxt.append(target)
        frontier = nxt
    failures = [f"{page}: more than two clicks from {LANDING}"
                for page in sorted(pages - set(depth) - UTILITY_PAGES)]
    failures += [f"{page}: no left sidebar with links" for page in sorted(pages - {LANDING} - UTILITY_PAGES)
                 if sidebar_links(html[page]) == 0]
    return failures


def find_browser() -> str | None:
    """``$GRADCODES_BROWSER``, or the first Chromium on ``PATH``; None when there is none."""
    env = os.environ.get("GRADCODES_BROWSER")
    if env:
        return env
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _browser(browser: str, profile: str, width: int, height: int, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def probe(browser: str, profile: str, url: str, width: int) -> dict[str, Any]:
    """Render ``url`` at ``width`` px and return what the probe measured (raises RuntimeError without it)."""
    done = _browser(browser, profile, width, 900, "--virtual-time-budget=8000", "--dump-dom", url)
    m = re.search(r'<script type="application/json" id="gc-probe">(.*?)</script>', done.stdout, re.S)
    if not m:
        raise RuntimeError(f"{url}: the browser returned no measurement (exit {done.returncode}): "
                           f"{done.stderr.strip()[-300:]}")
    result: dict[str, Any] = json.loads(m.group(1))
    return result


def page_failures(page: str, width: int, r: dict[str, Any]) -> list[str]:
    """What is wrong with one rendered page (``r``: the probe's measurement at ``width`` px)."""
    at = f"{page} @{width}px"
    out = []
    if r["scrollWidth"] > r["width"] + 1:
        out.append(f"{at}: the page scrolls sideways ({r['scrollWidth']} px wide in a {r['width']} px window)")
    for block in r["code"]:
        if block["hidden"]:
            out.append(f"{at}: a code block hides part of a line: {block['head']!r}")
        if page == LANDING and width == DESKTOP and block["rendered"] > block["lines"]:
            out.append(f"{at}: a code line wraps ({block['lines']} lines shown on {block['rendered']}): "
                       f"{block['head']!r}")
    for img in r["images"]:
        if not img["loaded"]:
            out.append(f"{at}: image {img['src']} did not load")
        elif width == DESKTOP and img["shown"] < 0.5 * img["natural"] and not img["linked"]:
            out.append(f"{at}: image {img['src']} shown at {img['shown']:.0f} of its {img['natural']} px "
                       "(unreadable) without a link to the full-size image")
    names = sorted(set(PRIVATE.findall(r["text"])))
    if names:
        out.append(f"{at}: the visible text names private objects: {', '.join(names)}")
    if not r["h1"]:
        out.append(f"{at}: no title (h1)")
    if page != LANDING and width == DESKTOP:
        sidebar = r["sidebar"]
        if not sidebar or not sidebar["shown"] or sidebar["links"] == 0:
            out.append(f"{at}: no left sidebar with links ({sidebar})")
    if page == LANDING:
        out += _landing_failures(at, r)
    return out


def _landing_failures(at: str, r: dict[str, Any]) -> list[str]:
    out = []
    if "pip install gradcodes" not in r["text"]:
        out.append(f"{at}: no install line (pip install gradcodes)")
    if not any("gc.recommend" in b["head"] or "import gradcodes" in b["head"] for b in r["code"]):
        out.append(f"{at}: no example using gradcodes")
    if "Which code should I use?" not in r["headings"]:
        out.append(f"{at}: no decision guide heading 'Which code should I use?'")
    if not r["tables"] or max(r["tables"]) < 6:
        out.append(f"{at}: no decision table (rows per table: {r['tables']})")
    linked = {posixpath.normpath(h.split("#")[0]) for h, _ in r["links"]}
    for target, what in LANDING_LINKS.items():
        if target not in linked:
            out.append(f"{at}: no link to the {what} ({target})")
    return out


def _prepared_copy(site: Path, dest: Path, pages: list[str]) -> None:
    """A copy of ``site`` (hard links where possible) whose ``pages`` load the probe."""
    try:
        shutil.copytree(site, dest, copy_function=os.link)
    except OSError:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(site, dest)
    (dest / "_static").mkdir(exist_ok=True)
    (dest / "_static" / "gc_probe.js").write_text(PROBE, encoding="utf-8")
    for page in pages:
        path = dest / page
        html = path.read_text(encoding="utf-8")
        rel = posixpath.relpath("_static/gc_probe.js", posixpath.dirname(page) or ".")
        path.unlink()  # a hard link: never write through to the original site
        path.write_text(html.replace("</body>", f'<script src="{rel}"></script>\n</body>', 1), encoding="utf-8")


def browser_failures(site: Path, browser: str, screenshots: Path | None = None,
                     pages: list[str] | None = None) -> list[str]:
    """Render ``pages`` (default: the key pages) in ``browser`` and return what is wrong; with ``screenshots``, the
    screenshots of :data:`SCREENSHOTS` go there."""
    pages = KEY_PAGES if pages is None else pages
    missing = [p for p in pages if not (site / p).is_file()]
    if missing:
        return [f"{p}: missing from the site" for p in missing]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "site"
        _prepared_copy(site, copy, pages)
        profile = str(Path(tmp) / "profile")
        for page in pages:
            for width in WIDTHS:
                failures += page_failures(page, width, probe(browser, profile, (copy / page).as_uri(), width))
        if screenshots is not None:
            screenshots.mkdir(parents=True, exist_ok=True)
            for name, (page, height) in SCREENSHOTS.items():
                shot = screenshots / name
                _browser(browser, profile, DESKTOP, height, f"--screenshot={shot}", (site / page).resolve().as_uri())
                if not shot.is_file() or shot.stat().st_size == 0:
                    failures.append(f"{page}: no screenshot written ({shot})")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the built HTML site (sphinx-build -b html docs SITE)")
    parser.add_argument("--screenshots", type=Path, default=None, help="write PNG screenshots here")
    parser.add_argument("--require", action="store_true",
                        help="fail (exit 2) when no browser is found (also GRADCODES_REQUIRE_BROWSER=1)")
    args = parser.parse_args(argv)
    site: Path = args.site
    if not (site / LANDING).is_file():
        print(f"{site}: no {LANDING}: not a built site", file=sys.stderr)
        return 2
    failures = static_failures(site)
    browser = find_browser()
    if browser is None:
        required = args.require or os.environ.get("GRADCODES_REQUIRE_BROWSER") == "1"
        print("no Chromium found (set GRADCODES_BROWSER, or install Debian's chromium): browser check "
              + ("required: failing" if required else "skipped"), file=sys.stderr)
        if required:
            return 2
    else:
        failures += browser_failures(site, browser, args.screenshots)
    for line in failures:
        print(line)
    pages = len(site_pages(site))
    if failures:
        print(f"{len(failures)} problem(s)", file=sys.stderr)
        return 1
    rendered = f"; {len(KEY_PAGES)} key pages rendered at {' and '.join(map(str, WIDTHS))} px" if browser else ""
    print(f"{pages} pages within two clicks of {LANDING}, each with its sidebar{rendered}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
