"""The Anthropic Python SDK's own tests of its local filesystem memory tool, run against
agent_memory's handlers: the handlers answer as that tool does, text for text.

The tests are `tests/lib/tools/memory_tools/test_filesystem.py` of the `anthropic` sdist at
the version installed here (the one `cargo xtask python` pins), fetched from PyPI with
`pip download` and kept in a cache folder (`AGENT_MEMORY_SDK_CACHE`, else one under the
temporary folder). Without network the module is skipped on a developer's machine; under
`CI=true` a failed download is an error.

The adaptation, all of it in this file:

- the SDK's module is loaded as it is, and its two test classes are collected here;
- its fixtures `sync_local_filesystem_tool` and `async_local_filesystem_tool` are ours: a
  `NotesMemoryTool` and an `AsyncNotesMemoryTool` on a fresh store of each backend, with
  room for the test's file of a million lines (`max_note_bytes`), and the `base_path` and
  `memory_root` attributes the tests read (`memory_root` an empty folder, whose being there
  is all a test checks of it, after refusing to delete `/memories`; an `anyio.Path` for the
  async tool, as the SDK's);
- its `get_directory_snapshot`, which reads the tool's folder, reads the store's notes
  (through the `notes` operation) instead;
- the cases about files on a disk (file modes, symlinks, bytes written behind the tool's
  back) have no counterpart in a store and are skipped, each with its reason, in `SKIPPED`.
"""

import importlib.metadata
import os
import subprocess
import sys
import tarfile
import tempfile
import types
from pathlib import Path
from typing import Dict, Iterator

import pytest
from anyio import Path as AsyncPath

from agent_memory import Store, aio
from agent_memory.anthropic import AsyncNotesMemoryTool, NotesMemoryTool

VERSION = importlib.metadata.version("anthropic")
MEMBER = f"anthropic-{VERSION}/tests/lib/tools/memory_tools/test_filesystem.py"

#: The SDK's cases that test a file system, not the tool's answers, and why each is skipped.
_DISK = "tests the files on a disk, which notes in a store are not"
SKIPPED = {
    "test_mkdir_parents_not_world_writable_under_permissive_umask":
        f"{_DISK}: the permission bits of the directories it makes",
    "test_view_preserves_crlf_line_endings": f"{_DISK}: writes raw bytes into the folder behind the tool",
    "test_str_replace_preserves_crlf_line_endings": f"{_DISK}: writes and reads raw bytes in the folder",
    "test_insert_preserves_crlf_line_endings": f"{_DISK}: writes and reads raw bytes in the folder",
    "test_read_rejects_symlink_created_after_validation": f"{_DISK}: a symlink swapped in during a read",
    "test_read_rejects_file_replaced_with_symlink_before_open": f"{_DISK}: a symlink swapped in before open",
    "test_view_rejects_directory_symlink_created_after_validation": f"{_DISK}: a directory symlink",
    "test_symlink_validation_reject_symlink_pointing_outside_memories": f"{_DISK}: a symlink out of the folder",
    "test_view_lists_symlinks_only_when_they_stay_inside_memories": f"{_DISK}: symlinks in a listing",
    "test_symlink_validation_reject_creating_files_through_symlink_pointing_outside":
        f"{_DISK}: a symlink out of the folder",
    "test_symlink_validation_reject_parent_directory_that_is_symlink_pointing_outside":
        f"{_DISK}: a symlinked parent directory",
    "test_validate_path_returns_resolved_path_not_symlink_target":
        f"{_DISK}: the private _validate_path resolving a symlink",
}

#: Room for the SDK's file of a million lines (5 MB), past the 256 KiB default.
ROOM = 8 * 1024 * 1024
SCOPE = "sdk-tests"


def _cache() -> Path:
    given = os.environ.get("AGENT_MEMORY_SDK_CACHE")
    folder = Path(given) if given else Path(tempfile.gettempdir()) / "agent-memory-sdk-tests"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _sdk_tests() -> str:
    """The SDK's test module, from its sdist (downloaded once)."""
    folder = _cache()
    sdist = folder / f"anthropic-{VERSION}.tar.gz"
    if not sdist.exists():
        run = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             f"anthropic=={VERSION}", "--dest", str(folder)],
            capture_output=True, text=True)
        if run.returncode != 0 or not sdist.exists():
            raise RuntimeError(f"pip download of the anthropic {VERSION} sdist failed: {run.stderr.strip()[-2000:]}")
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(MEMBER)
        if member is None:
            raise RuntimeError(f"the anthropic {VERSION} sdist holds no {MEMBER}")
        return member.read().decode("utf-8")


try:
    _SOURCE = _sdk_tests()
except Exception as error:  # pragma: no cover - depends on the network
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"CI runs the Anthropic SDK's memory tool tests, and they could not be had: {error}")
    pytest.skip(f"the Anthropic SDK's memory tool tests could not be had: {error}", allow_module_level=True)

sdk = types.ModuleType("anthropic_sdk_test_filesystem")
sdk.__file__ = f"<anthropic {VERSION} sdist>/{MEMBER}"
sys.modules[sdk.__name__] = sdk
exec(compile(_SOURCE, sdk.__file__, "exec"), sdk.__dict__)

#: The store of each test's tool, by the `base_path` the SDK's tests name it with.
_STORES: Dict[str, Store] = {}


def _files(store: Store, directory: str) -> Iterator[str]:
    """Every note below `directory`, from its listings (two levels each)."""
    listing = store.notes({"command": "view", "path": directory, "scope": SCOPE})["text"]
    depth = directory.count("/")
    for line in listing.split("\n")[2:]:
        path = line.split("\t", 1)[1]
        if not path.endswith("/"):
            yield path
        elif path.count("/") - depth == 3:  # a second level directory, listed no deeper
            yield from _files(store, path[:-1])


def _notes_snapshot(base_path: str) -> Dict[str, str]:
    """`get_directory_snapshot` on the store: each note's text by `memories/<path>`."""
    store = _STORES[base_path]
    snapshot = {}
    for path in _files(store, "/memories"):
        shown = store.notes({"command": "view", "path": path, "scope": SCOPE})["text"]
        lines = shown.split("\n")[1:]
        snapshot[path.lstrip("/")] = "\n".join(line.split("\t", 1)[1] for line in lines)
    return snapshot


sdk.get_directory_snapshot = _notes_snapshot


def _as_the_sdks(tool, base: str, path_type=Path):
    """`tool` with the attributes of the SDK's tool that its tests read."""
    root = Path(base) / "memories"
    root.mkdir(exist_ok=True)
    tool.base_path = path_type(base)
    tool.memory_root = path_type(root)
    return tool


@pytest.fixture
def temp_directory(tmp_path) -> str:
    base = tmp_path / "base"
    base.mkdir()
    return str(base)


@pytest.fixture
def notes_store(temp_directory, location) -> Iterator[Store]:
    store = Store(location)
    _STORES[temp_directory] = store
    yield store
    del _STORES[temp_directory]


@pytest.fixture
def sync_local_filesystem_tool(temp_directory, notes_store):
    return _as_the_sdks(NotesMemoryTool(notes_store, scope=SCOPE, max_note_bytes=ROOM), temp_directory)


@pytest.fixture
def async_local_filesystem_tool(temp_directory, notes_store):
    tool = AsyncNotesMemoryTool(aio.Store(notes_store), scope=SCOPE, max_note_bytes=ROOM)
    return _as_the_sdks(tool, temp_directory, AsyncPath)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


TestBetaLocalFilesystemMemoryTool = sdk.TestBetaLocalFilesystemMemoryTool
TestBetaAsyncLocalFilesystemMemoryTool = sdk.TestBetaAsyncLocalFilesystemMemoryTool
# The SDK runs its async cases with pytest-asyncio's auto mode; anyio's plugin (anyio comes
# with the SDK) runs them here.
TestBetaAsyncLocalFilesystemMemoryTool.pytestmark = [pytest.mark.anyio]
for _case in (TestBetaLocalFilesystemMemoryTool, TestBetaAsyncLocalFilesystemMemoryTool):
    for _name, _reason in SKIPPED.items():
        if hasattr(_case, _name):
            setattr(_case, _name, pytest.mark.skip(reason=_reason)(getattr(_case, _name)))


def test_every_skipped_case_is_one_of_the_sdks():
    """A skip that names no case of the SDK's module (renamed upstream) is stale."""
    cases = set(dir(TestBetaLocalFilesystemMemoryTool)) | set(dir(TestBetaAsyncLocalFilesystemMemoryTool))
    assert set(SKIPPED) <= cases, set(SKIPPED) - cases
