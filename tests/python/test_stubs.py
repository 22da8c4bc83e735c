"""The type stubs shipped next to the extension are generated from it and say what it
has: every public function, class and method of the module appears in them, and,
where nanobind's stub generator is installed, regenerating them gives the same text."""

import ast
import importlib
import inspect
import pathlib

import pytest

import devicearray as da

PACKAGE = pathlib.Path(da.__file__).parent


def stub_names(path):
    """Top-level names and, per class, member names declared in a .pyi file."""
    tree = ast.parse(path.read_text())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            top.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            top.update(a.asname or a.name for a in node.names)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {
                n.name if isinstance(n, (ast.FunctionDef, ast.ClassDef)) else getattr(
                    n.targets[0] if isinstance(n, ast.Assign) else n.target, "id", None)
                for n in node.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign))
            }
    return top, members


@pytest.mark.parametrize("module, stub", [("devicearray._devicearray", "_devicearray.pyi"),
                                          ("devicearray._testing", "_testing.pyi")])
def test_stub_declares_every_public_name(module, stub):
    path = PACKAGE / stub
    assert path.is_file(), f"{path} is missing: the build generates it"
    top, members = stub_names(path)
    mod = importlib.import_module(module)
    public = {n for n in dir(mod) if not n.startswith("_")}
    assert public - top == set(), "names of the module missing from its stub"
    for name in public:
        obj = getattr(mod, name)
        if inspect.isclass(obj):
            own = {n for n in vars(obj) if not n.startswith("_")}
            assert own - members.get(name, set()) == set(), f"members of {name} missing from the stub"


def test_regenerated_stub_is_identical(tmp_path):
    stubgen = pytest.importorskip("nanobind.stubgen")
    gen = stubgen.StubGen(importlib.import_module("devicearray._devicearray"))
    gen.put(importlib.import_module("devicearray._devicearray"))
    assert gen.get() == (PACKAGE / "_devicearray.pyi").read_text()
