"""The READMEs' Python examples run as a newcomer runs them: each ```python block (and the
popoto migration's diff as the file it leaves: its context and added lines; the old ones
need popoto and Redis) saved as a script of its own in one fresh folder, all run there in
the README's order with this environment's Python, then all again in the same folder, where
the first run left its database."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

WORKSPACE = Path(os.environ.get("AGENT_MEMORY_WORKSPACE", Path(__file__).resolve().parents[3]))
# The package's README is what PyPI shows; it is a link to the project's, so one run covers
# both while they stay the same file.
READMES = [WORKSPACE / "README.md"]
if (WORKSPACE / "bindings/python/README.md").resolve() != READMES[0].resolve():
    READMES.append(WORKSPACE / "bindings/python/README.md")
FENCE = re.compile(r"^```(python|diff)\n(.*?)^```$", re.S | re.M)
# An example never reaches the Anthropic API, and none reads a database or clock set outside it.
ENVIRONMENT = {
    name: value
    for name, value in os.environ.items()
    if name not in ("ANTHROPIC_API_KEY", "AGENT_MEMORY_DB", "AGENT_MEMORY_NOW")
}


def after(diff: str) -> str:
    """The file a diff leaves: its context and added lines."""
    return "\n".join(line[1:] for line in diff.splitlines() if line[:1] in (" ", "+")) + "\n"


def examples(readme: Path) -> "list[tuple[str, str]]":
    """Each example of `readme` in order: where it is (its line and first line), and its code."""
    text = readme.read_text()
    found = []
    for match in FENCE.finditer(text):
        language, code = match.groups()
        if language == "diff":
            if "agent_memory" not in code:
                continue
            code = after(code)
        line = text.count("\n", 0, match.start()) + 1
        first = next(l for l in code.splitlines() if l.strip())
        found.append((f"line {line} (example {len(found) + 1}: {first!r})", code))
    return found


def test_the_readme_has_python_examples():
    codes = [code for _, code in examples(WORKSPACE / "README.md")]
    assert len(codes) >= 3 and sum("agent_memory.popoto" in code for code in codes) == 1


@pytest.mark.parametrize("readme", READMES, ids=[str(path.relative_to(WORKSPACE)) for path in READMES])
def test_the_python_examples_run_in_order_twice_in_one_fresh_folder(readme, tmp_path):
    scripts = []
    for number, (where, code) in enumerate(examples(readme), start=1):
        script = tmp_path / f"example_{number}.py"
        script.write_text(code)
        scripts.append((where, script.name))
    for run in ("first", "second"):
        for where, script in scripts:
            done = subprocess.run(
                [sys.executable, script], cwd=tmp_path, env=ENVIRONMENT, capture_output=True, text=True
            )
            assert done.returncode == 0, (
                f"{readme}, {where}, saved as {script}, failed on the {run} run "
                f"(exit status {done.returncode}):\n{done.stdout}{done.stderr}"
            )
