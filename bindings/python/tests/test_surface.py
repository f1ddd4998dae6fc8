"""The package's surface is the contract's operation table: every operation is a method of
agent_memory.Store and agent_memory.aio.Store under the table's Python name, with the
generated signature, docstring and typed stub, running that operation; every kind of error
has its exception class."""

import ast
import inspect
from pathlib import Path

import pytest

import agent_memory
import agent_memory.aio
from agent_memory import _native
from agent_memory.errors import from_contract

TABLE = _native.operations()
PACKAGE = Path(agent_memory.__file__).parent
STORES = {"sync": agent_memory.Store, "aio": agent_memory.aio.Store}
INPUT = {"given": "as is"}


def test_operations_are_the_table():
    assert agent_memory.OPERATIONS == [operation["name"] for operation in TABLE]
    assert len({operation["python"] for operation in TABLE}) == len(TABLE) > 20


@pytest.mark.parametrize("kind", STORES)
def test_every_operation_is_a_method_with_the_generated_signature(kind):
    store = STORES[kind]
    for operation in TABLE:
        method = getattr(store, operation["python"], None)
        assert method is not None, operation["name"]
        expected = ["self", "input"] if operation["takes_input"] else ["self"]
        assert list(inspect.signature(method).parameters) == expected, operation["name"]
        assert inspect.iscoroutinefunction(method) == (kind == "aio"), operation["name"]
        assert " ".join((method.__doc__ or "").split()) == operation["description"]


def test_every_method_runs_its_own_operation():
    class Sync(agent_memory.Store):
        def call(self, operation, input=None):
            return (operation, input)

    class Async(agent_memory.aio.Store):
        async def call(self, operation, input=None):
            return (operation, input)

    sync, aio = Sync(":memory:"), Async(":memory:")
    for operation in TABLE:
        given = [INPUT] if operation["takes_input"] else []
        expected = (operation["name"], INPUT if given else None)
        assert getattr(sync, operation["python"])(*given) == expected
        coroutine = getattr(aio, operation["python"])(*given)
        with pytest.raises(StopIteration) as done:
            coroutine.send(None)
        assert done.value.value == expected


def _stub_classes():
    """The classes of `_store.pyi`, each as its methods by name."""
    tree = ast.parse((PACKAGE / "_store.pyi").read_text())
    return {
        node.name: {f.name: f for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for node in tree.body if isinstance(node, ast.ClassDef)
    }


def _types_of(module):
    """The types `agent_memory.types.<module>` defines: its TypedDicts and type aliases."""
    tree = ast.parse((PACKAGE / "types" / f"{module}.pyi").read_text())
    aliases = {node.target.id for node in tree.body
               if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
    return aliases | {node.name for node in tree.body if isinstance(node, ast.ClassDef)}


def test_every_operation_is_typed_in_and_out_by_its_schemas():
    classes = _stub_classes()
    assert set(classes) == {"StoreOperations", "AsyncStoreOperations"}
    for name, methods in classes.items():
        for operation in TABLE:
            stub = methods[operation["python"]]
            assert isinstance(stub, ast.AsyncFunctionDef) == (name == "AsyncStoreOperations")
            modules = [f"{operation['name']}_input"] if operation["takes_input"] else []
            assert [a.arg for a in stub.args.args] == ["self"] + (["input"] if modules else [])
            annotations = [a.annotation for a in stub.args.args[1:]] + [stub.returns]
            modules.append(f"{operation['output']}_output")
            for module, annotation in zip(modules, annotations):
                assert isinstance(annotation, ast.Attribute), ast.dump(annotation)
                assert ast.unparse(annotation.value) == module, operation["name"]
                assert annotation.attr in _types_of(module), (module, annotation.attr)


def test_every_error_kind_has_its_class():
    kinds = _native.error_kinds()
    assert "error" in kinds and len(kinds) == len(set(kinds))
    for kind in kinds:
        cls = type(from_contract(kind, "m"))
        assert cls.kind == kind and issubclass(cls, agent_memory.Error)
        assert (cls is agent_memory.Error) == (kind == "error")
        assert cls.__name__ in agent_memory.__all__ and getattr(agent_memory, cls.__name__) is cls
        assert cls.__doc__, kind  # the kind's documentation
