"""Sphinx configuration: numpydoc API reference from the docstrings, the Markdown topic pages via MyST.

Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (the ``docs`` extra installs the tools).
``api.rst`` is generated here from ``gradcodes.__all__`` at every build, so a new public name is documented (and
its docstring built with warnings as errors) without anyone editing a list.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import gradcodes  # noqa: E402

project = "gradcodes"
author = "gradcodes developers"
copyright = "gradcodes developers"  # noqa: A001
release = version = gradcodes.__version__ if hasattr(gradcodes, "__version__") else "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "generated/*.md"]
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
suppress_warnings = ["myst.xref_missing"]   # links to ../benchmarks/... files outside the site stay plain links

autosummary_generate = True
autodoc_typehints = "none"                  # numpydoc shows the types from the docstrings
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = "gradcodes"
html_static_path: list[str] = []
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}


def _write_api_page() -> None:
    classes, functions, other = [], [], []
    for name in sorted(gradcodes.__all__, key=str.lower):
        obj = getattr(gradcodes, name)
        (classes if inspect.isclass(obj) else functions if callable(obj) else other).append(name)
    parts = ["API reference", "=============", "",
             "Every public name of ``gradcodes`` (``import gradcodes as gc``), generated from its docstring.", ""]
    for title, names in (("Classes", classes), ("Functions", functions), ("Constants", other)):
        if not names:
            continue
        parts += [title, "-" * len(title), "", ".. currentmodule:: gradcodes", "", ".. autosummary::",
                  "   :toctree: generated", ""] + [f"   {n}" for n in names] + [""]
    import gradcodes.testing as gt

    parts += ["gradcodes.testing", "-----------------", "",
              "Hypothesis strategies and assertions for users' CI (:doc:`testing`); imports hypothesis.", "",
              ".. currentmodule:: gradcodes.testing", "", ".. autosummary::", "   :toctree: generated", ""]
    parts += [f"   {n}" for n in gt.__all__] + [""]
    text = "\n".join(parts)
    page = HERE / "api.rst"
    if not page.exists() or page.read_text() != text:
        page.write_text(text)


_write_api_page()
# numpydoc reports docstring problems (e.g. an unknown section) as Python warnings: make them fail the build too
warnings.filterwarnings("error", category=UserWarning, module="numpydoc")
