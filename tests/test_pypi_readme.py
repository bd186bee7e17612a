"""The description PyPI shows (README.pypi.md) is README.md with no relative link left (docs/pypi_readme.py).

On PyPI a relative link has no base and goes nowhere; the generated description writes each one as its text and
the path it names. These tests fail when README.pypi.md falls behind README.md, when a relative link or image
survives the conversion, or when the conversion changes anything it must not (absolute links, anchors, code).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("pypi_readme", ROOT / "docs" / "pypi_readme.py")
assert _spec is not None and _spec.loader is not None
pypi_readme = importlib.util.module_from_spec(_spec)
sys.modules["pypi_readme"] = pypi_readme
_spec.loader.exec_module(pypi_readme)


def test_committed_description_is_generated_from_readme():
    committed = (ROOT / "README.pypi.md").read_text(encoding="utf-8")
    assert committed == pypi_readme.generate(), "README.pypi.md is out of date: run `python docs/pypi_readme.py`"
    assert pypi_readme.main(["--check"]) == 0


def test_description_has_no_relative_link_and_readme_does():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert pypi_readme.relative_links(readme), "README.md has relative links: the conversion has work to do"
    described = pypi_readme.generate()
    assert pypi_readme.relative_links(described) == []
    # every file README.md links to is still named in the description, and exists in the project (the sdist)
    for target in pypi_readme.relative_links(readme):
        path = target.split("#", 1)[0]
        assert f"`{path}`" in described
        assert (ROOT / path).exists(), path


def test_pyproject_declares_the_generated_description():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^readme = \{ file = "README\.pypi\.md", content-type = "text/markdown" \}$', text, re.M)


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("see the [tutorial](docs/tutorial.md).\n", "see the tutorial (`docs/tutorial.md`).\n"),
        ("| [design.md](docs/design.md) | x |\n", "| `docs/design.md` | x |\n"),
        ("[CHANGELOG.md](CHANGELOG.md)\n", "`CHANGELOG.md`\n"),
        ("[the rule](docs/guide.md#acceptance)\n", "the rule (`docs/guide.md`)\n"),
        ('[guide](docs/guide.md "the guide")\n', "guide (`docs/guide.md`)\n"),
        ("![the plot](benchmarks/x.png)\n", "the plot (image: `benchmarks/x.png`)\n"),
        ("[`verify`](docs/guide.md)\n", "`verify` (`docs/guide.md`)\n"),
        ("[two](a.md) and [three](b.md)\n", "two (`a.md`) and three (`b.md`)\n"),
        # absolute addresses and anchors of the same page stay links
        ("[numpy](https://numpy.org/doc/)\n", "[numpy](https://numpy.org/doc/)\n"),
        ("[mail](mailto:a@b.c)\n", "[mail](mailto:a@b.c)\n"),
        ("[below](#install)\n", "[below](#install)\n"),
        # code is code: a fenced block and an inline span are copied as they are
        ("```python\nx = '[a](b.md)'\n```\n", "```python\nx = '[a](b.md)'\n```\n"),
        ("`[a](b.md)` and [c](d.md)\n", "`[a](b.md)` and c (`d.md`)\n"),
    ],
)
def test_convert(markdown, expected):
    assert pypi_readme.convert(markdown) == expected
    assert pypi_readme.relative_links(pypi_readme.convert(markdown)) == []


def test_relative_links_finds_what_convert_removes():
    text = "a [x](docs/x.md) b ![y](y.png) [z](https://z.org) [w](#w)\n```\n[c](c.md)\n```\n"
    assert pypi_readme.relative_links(text) == ["docs/x.md", "y.png"]


def test_readme_links_hold_no_nested_brackets():
    # the link pattern takes text without brackets: a README link like [a [b]](c) would survive the conversion
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not re.search(r"\[[^\]\n]*\[[^\]\n]*\]\([^)]*\)", readme)


def test_generate_rejects_a_readme_without_a_title(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("no title here\n\ntext\n", encoding="utf-8")
    with pytest.raises(ValueError, match="one-line '# title'"):
        pypi_readme.generate(path)
    path.write_text("# title\n\nsee [x](x.md)\n", encoding="utf-8")
    out = pypi_readme.generate(path)
    assert out.startswith(pypi_readme.HEADER + "# title\n\n" + pypi_readme.NOTE)
    assert out.endswith("see x (`x.md`)\n")


def test_check_fails_on_a_stale_description(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "README.pypi.md"
    stale.write_text("old\n", encoding="utf-8")
    monkeypatch.setattr(pypi_readme, "TARGET", stale)
    assert pypi_readme.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert pypi_readme.main([]) == 0
    assert pypi_readme.main(["--check"]) == 0
