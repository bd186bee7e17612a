"""docs/check_site.py, the check that no page of the built site names a private object, on tiny fake sites."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_site", ROOT / "docs" / "check_site.py")
assert _spec is not None and _spec.loader is not None
check_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_site)


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, text in pages.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<html><body>{text}</body></html>")
    return tmp_path


def test_clean_site_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = _site(tmp_path, {"index.html": "<code>gradcodes.GradientCode</code>, gc.verify, gradcodes.torch.train",
                            "api/generated/gradcodes.Decoder.html": '<a title="gradcodes.Decoder">Decoder</a>'})
    assert check_site.main([str(site)]) == 0
    assert "2 pages, no private name" in capsys.readouterr().out


def test_private_names_fail_with_page_and_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = _site(tmp_path, {
        "index.html": "fine",
        "api/generated/gradcodes.NullSpaceDecoder.html":
            'Bases: <a title="gradcodes._core.decoders.Decoder">Decoder</a> and again gradcodes._core.decoders.Decoder',
        "torch.html": "<pre>from gradcodes.torch._job import run</pre>",
        "acceptance.html": "the rule (gradcodes._core.numerics.judge())",
    })
    assert check_site.main([str(site)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == ["acceptance.html: gradcodes._core.numerics.judge",
                   "api/generated/gradcodes.NullSpaceDecoder.html: gradcodes._core.decoders.Decoder",
                   "torch.html: gradcodes.torch._job"]


def test_design_page_and_sources_are_exempt(tmp_path: Path) -> None:
    site = _site(tmp_path, {"design.html": "gradcodes._core.code holds the code types",
                            "_sources/acceptance.md.txt": "gradcodes._core.numerics",
                            "_static/x.html": "gradcodes._verify", "index.html": "public"})
    assert check_site.main([str(site)]) == 0
    pages, found = check_site.private_names(site)
    assert (pages, found) == (1, [])


def test_a_nested_design_page_is_not_exempt(tmp_path: Path) -> None:
    site = _site(tmp_path, {"api/design.html": "gradcodes._core.code"})
    assert check_site.main([str(site)]) == 1


def test_empty_or_missing_site_is_an_error(tmp_path: Path) -> None:
    assert check_site.main([str(tmp_path)]) == 2            # no page: a wrong directory must not pass
    assert check_site.main([str(tmp_path / "missing")]) == 2
    assert check_site.main([]) == 2
