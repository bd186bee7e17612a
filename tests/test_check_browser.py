"""docs/check_browser.py, the headless-browser check of the built documentation site, on tiny fake sites.

The static part (two clicks, sidebars) and the verdicts on measurements run everywhere; the probe itself is run in
a real Chromium when one is installed (CI installs Debian's ``chromium``), on pages built to break each rule.
"""

from __future__ import annotations

import copy
import importlib.util
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_browser", ROOT / "docs" / "check_browser.py")
assert _spec is not None and _spec.loader is not None
check_browser = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_browser)

STYLE = "<style>div.highlight pre { white-space: pre-wrap; }</style>"


def _page(body: str, sidebar: list[str] | None = None, title: str = "A page") -> str:
    """A page shaped like the theme's: the left sidebar's section navigation, then the article."""
    nav = "" if sidebar is None else (
        '<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar"><nav class="bd-docs-nav bd-links">'
        + "".join(f'<a class="reference internal" href="{h}">{h}</a>' for h in sidebar) + "</nav></div>")
    return (f"<html><head>{STYLE}</head><body>{nav}<main id=\"main-content\" class=\"bd-main\">"
            f'<article class="bd-article"><h1>{title}</h1>{body}</article></main></body></html>')


def _write(site: Path, pages: dict[str, str | bytes]) -> Path:
    for name, text in pages.items():
        path = site / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    return site


LANDING_BODY = (
    "<h2>Install</h2><div class=\"highlight\"><pre>pip install gradcodes</pre></div>"
    "<h2>Five lines</h2><div class=\"highlight\"><pre>import gradcodes as gc\ncode = gc.recommend(12, 3)</pre></div>"
    "<h2>Which code should I use?</h2><table><tbody>" + "<tr><td>a</td><td>b</td></tr>" * 6 + "</tbody></table>"
    "<h2>Where next</h2>" + "".join(f'<a href="{t}">{t}</a>' for t in check_browser.LANDING_LINKS))


# ---- static part: two clicks and a sidebar on every page ----

def test_static_two_clicks_and_sidebars(tmp_path: Path) -> None:
    site = _write(tmp_path, {
        "index.html": _page('<a href="a.html">a</a>'),
        "a.html": _page("", sidebar=["b.html"]),
        "b.html": _page('<a href="c.html">c</a>', sidebar=["a.html"]),
        "c.html": _page("", sidebar=["a.html"]),                       # three clicks away
        "api/d.html": _page(""),                                          # no sidebar at all
        "genindex.html": _page(""),                                       # a utility page: exempt
        "_static/x.html": "<html></html>",                                # a copy: not a page
    })
    failures = check_browser.static_failures(site)
    assert failures == ["api/d.html: more than two clicks from index.html", "c.html: more than two clicks from "
                        "index.html", "api/d.html: no left sidebar with links"]
    _write(tmp_path, {"a.html": _page("", sidebar=["b.html", "c.html", "api/d.html"]),
                      "api/d.html": _page("", sidebar=["../a.html"])})
    assert check_browser.static_failures(site) == []


def test_sidebar_links_counts_the_section_navigation_only() -> None:
    # the theme also copies the top bar into the sidebar for small screens: those links do not count
    html = ('<div class="bd-sidebar-primary"><nav><ul class="navbar-nav"><a href="x.html">x</a></ul></nav>'
            '<nav class="bd-docs-nav bd-links"><div class="bd-toc-item navbar-nav"></div></nav></div>')
    assert check_browser.sidebar_links(html) == 0
    assert check_browser.sidebar_links(html.replace("<div class=\"bd-toc-item navbar-nav\"></div>",
                                                    '<a class="r" href="y.html">y</a>')) == 1
    assert check_browser.sidebar_links("<main>no sidebar</main>") == 0


# ---- verdicts on a measurement ----

GOOD: dict[str, Any] = {
    "width": 1280, "scrollWidth": 1280, "h1": "gradcodes", "sidebar": {"shown": True, "links": 4},
    "code": [{"lines": 1, "rendered": 1, "hidden": False, "head": "pip install gradcodes"},
             {"lines": 9, "rendered": 9, "hidden": False, "head": "import numpy as np\nimport gradcodes as gc"}],
    "images": [{"src": "_images/p.png", "natural": 700, "shown": 620, "loaded": True, "linked": False}],
    "text": "pip install gradcodes ... gradcodes.GradientCode", "headings": ["Install", "Which code should I use?"],
    "links": [[t, t] for t in check_browser.LANDING_LINKS], "tables": [10],
}


def _with(change: dict[str, Any]) -> dict[str, Any]:
    r = copy.deepcopy(GOOD)
    for key, value in change.items():
        if isinstance(value, tuple):                                    # (index, field, value) inside a list
            i, field, v = value
            r[key][i][field] = v
        else:
            r[key] = value
    return r


def test_a_good_measurement_passes_on_every_page_kind() -> None:
    assert check_browser.page_failures("index.html", 1280, GOOD) == []
    assert check_browser.page_failures("guide.html", 1280, GOOD) == []
    assert check_browser.page_failures("guide.html", 800, _with({"sidebar": None})) == []   # drawer on narrow


@pytest.mark.parametrize(("page", "width", "change", "message"), [
    ("guide.html", 1280, {"scrollWidth": 1500}, "scrolls sideways"),
    ("guide.html", 800, {"code": (0, "hidden", True)}, "hides part of a line"),
    ("index.html", 1280, {"code": (1, "rendered", 10)}, "a code line wraps"),
    ("guide.html", 1280, {"images": (0, "loaded", False)}, "did not load"),
    ("guide.html", 1280, {"images": (0, "natural", 1650)}, "unreadable"),
    ("guide.html", 1280, {"text": "see gradcodes._core.code.GradientCode"}, "gradcodes._core"),
    ("guide.html", 1280, {"h1": None}, "no title"),
    ("guide.html", 1280, {"sidebar": None}, "no left sidebar"),
    ("guide.html", 1280, {"sidebar": {"shown": False, "links": 4}}, "no left sidebar"),
    ("guide.html", 1280, {"sidebar": {"shown": True, "links": 0}}, "no left sidebar"),
    ("index.html", 1280, {"text": "pip install numpy"}, "no install line"),
    ("index.html", 1280, {"code": [{"lines": 1, "rendered": 1, "hidden": False, "head": "ls"}]}, "no example"),
    ("index.html", 1280, {"headings": ["Install"]}, "no decision guide"),
    ("index.html", 1280, {"tables": [2]}, "no decision table"),
    ("index.html", 1280, {"links": [["tutorial.html", "t"]]}, "no link to the API reference"),
])
def test_each_rule_fails_a_measurement_that_breaks_it(page: str, width: int, change: dict[str, Any],
                                                      message: str) -> None:
    failures = check_browser.page_failures(page, width, _with(change))
    assert any(message in f for f in failures), failures


def test_wrapping_is_allowed_off_the_landing_page_and_a_linked_plot_passes() -> None:
    assert check_browser.page_failures("guide.html", 1280, _with({"code": (1, "rendered", 12)})) == []
    assert check_browser.page_failures("index.html", 800, _with({"code": (1, "rendered", 12)})) == []
    linked = _with({"images": (0, "natural", 1650)})
    linked["images"][0]["linked"] = True
    assert check_browser.page_failures("guide.html", 1280, linked) == []


# ---- the command ----

def test_main_refuses_a_directory_without_a_site(tmp_path: Path) -> None:
    assert check_browser.main([str(tmp_path)]) == 2


def test_main_without_a_browser_skips_or_fails_when_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    site = _write(tmp_path, {"index.html": _page('<a href="a.html">a</a>'), "a.html": _page("", sidebar=["x"])})
    monkeypatch.setattr(check_browser, "find_browser", lambda: None)
    monkeypatch.delenv("GRADCODES_REQUIRE_BROWSER", raising=False)
    assert check_browser.main([str(site)]) == 0
    assert "skipped" in capsys.readouterr().err
    assert check_browser.main([str(site), "--require"]) == 2
    monkeypatch.setenv("GRADCODES_REQUIRE_BROWSER", "1")
    assert check_browser.main([str(site)]) == 2
    assert "required" in capsys.readouterr().err
    # the static part still runs without a browser
    _write(tmp_path, {"a.html": _page("")})
    monkeypatch.delenv("GRADCODES_REQUIRE_BROWSER")
    assert check_browser.main([str(site)]) == 1
    assert "a.html: no left sidebar with links" in capsys.readouterr().out


# ---- the probe in a real browser ----

def _png(width: int, height: int) -> bytes:
    """A grey PNG image of the given size (no imaging library needed)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


BROWSER = check_browser.find_browser()


@pytest.mark.skipif(BROWSER is None, reason="no Chromium (CI installs Debian's chromium)")
def test_the_probe_measures_real_pages(tmp_path: Path) -> None:
    assert BROWSER is not None
    long_line = "x = 1  # " + "a long comment " * 30
    bad = _page(
        '<div class="highlight"><pre style="white-space: pre; overflow-x: auto">' + long_line + "</pre></div>"
        '<div style="width: 3000px">wide</div>'
        '<p>see gradcodes._core.code.GradientCode</p>'
        '<img src="big.png" style="width: 300px"><img src="missing.png">')
    site = _write(tmp_path / "site", {
        "index.html": _page(LANDING_BODY + '<div class="highlight"><pre>' + long_line + "</pre></div>",
                            title="gradcodes"),
        "bad.html": bad, "big.png": _png(2000, 20),
        "good.html": _page('<div class="highlight"><pre>short</pre></div><img src="small.png">',
                           sidebar=["index.html"]),
        "small.png": _png(400, 20),
    })
    failures = check_browser.browser_failures(site, BROWSER, pages=["index.html", "bad.html", "good.html"])
    desktop = [f for f in failures if "@1280px" in f]
    assert any(f.startswith("index.html @1280px: a code line wraps") for f in desktop)   # its long line
    assert not any(f.startswith("index.html") and "wraps" not in f for f in desktop), desktop
    for message in ("scrolls sideways", "hides part of a line", "big.png shown at 300 of its 2000 px",
                    "missing.png did not load", "gradcodes._core", "no left sidebar"):
        assert any(f.startswith("bad.html @1280px: ") and message in f for f in desktop), (message, desktop)
    assert not any(f.startswith("good.html") for f in failures), failures
