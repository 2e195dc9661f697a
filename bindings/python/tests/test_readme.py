"""The README's Python example runs as written and prints what its comments say."""

import contextlib
import io
import re

import pytest

from conftest import REPO


def readme_example():
    readme = REPO / "README.md"
    if not readme.exists():
        pytest.skip("not run from a checkout: no README.md")
    text = readme.read_text()
    section = text.split("## Using it from Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the Python section has one example"
    return blocks[0]


def test_readme_example():
    code = readme_example()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md (Python example)", "exec"), {})
    printed = out.getvalue()
    # Every `print(...)  # what` line says what it prints.
    expected = re.findall(r"^[ \t]*print\(.*\)[ \t]*#[ \t]*(.+)$", code, re.M)
    assert len(expected) >= 5
    for what in expected:
        assert what.strip() in printed, f"{what!r} not printed; got:\n{printed}"
