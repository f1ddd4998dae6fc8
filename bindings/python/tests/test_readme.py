"""The README's Python examples run as written: each ```python block, and the popoto
migration's diff with its new lines (the old ones need popoto and Redis)."""

import os
import re
from pathlib import Path

import pytest

WORKSPACE = Path(os.environ.get("AGENT_MEMORY_WORKSPACE", Path(__file__).resolve().parents[3]))
README = (WORKSPACE / "README.md").read_text()
PYTHON = re.findall(r"```python\n(.*?)```", README, re.S)
DIFFS = re.findall(r"```diff\n(.*?)```", README, re.S)


def after(diff: str) -> str:
    """The file a diff leaves: its context and added lines."""
    return "\n".join(line[1:] for line in diff.splitlines() if line[:1] in (" ", "+"))


EXAMPLES = PYTHON + [after(d) for d in DIFFS if "agent_memory" in d]


def test_the_readme_has_python_examples():
    assert len(PYTHON) >= 2 and len(EXAMPLES) == len(PYTHON) + 1


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"example-{i}" for i in range(len(EXAMPLES))])
def test_a_readme_example_runs(example, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {"__name__": "__readme__"})
