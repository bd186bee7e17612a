"""The README's example runs as written, and its two commands are the ones CI and users run."""

import contextlib
import io
import re
from pathlib import Path

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_readme_python_example_runs():
    block = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})
    first = out.getvalue().splitlines()[0].split()
    measured, estimate = float(first[0]), float(first[1])
    assert 0 < measured <= 4 * estimate            # the error estimate is honest for this float32 decode
    assert "RECOVERY" in out.getvalue()


def test_readme_shows_the_two_commands():
    assert "gradcodes tour" in README
    assert re.search(r"<!-- test-command -->\n```bash\n.*python -m pytest", README)
