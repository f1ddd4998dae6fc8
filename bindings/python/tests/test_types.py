"""The type stubs: generated from the schemas (a regeneration must change nothing) and shipped
in the wheel with py.typed."""

import os
import subprocess
import sys
from pathlib import Path

import agent_memory

PACKAGE = Path(agent_memory.__file__).parent
WORKSPACE = Path(os.environ.get("AGENT_MEMORY_WORKSPACE", Path(__file__).resolve().parents[3]))
TOOLS = os.environ.get("AGENT_MEMORY_PYTHON_TOOLS", str(WORKSPACE / "target/python/tools"))


def test_the_committed_stubs_are_what_the_schemas_generate():
    tools_python = Path(TOOLS) / "bin" / "python"
    assert tools_python.exists(), f"no tools environment at {TOOLS}: run cargo xtask python"
    checked = subprocess.run([str(tools_python), str(WORKSPACE / "bindings/python/generate_types.py"), "--check"],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_the_wheel_ships_the_stubs():
    assert (PACKAGE / "py.typed").exists()
    for stub in ("_store.pyi", "_native.pyi", "types/trajectory_record_input.pyi"):
        assert (PACKAGE / stub).exists(), stub
    shipped = sorted(p.name for p in (PACKAGE / "types").glob("*.pyi"))
    schemas = [p.name[: -len(".json")].replace(".", "_") + ".pyi" for p in (WORKSPACE / "schemas").glob("*.json")]
    assert shipped == sorted(schemas + ["__init__.pyi"])
