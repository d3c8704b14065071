"""The type stubs say what the modules have: hakopy.pyi (next to the built module) lists exactly
hakopy's names, each function with the arguments its docstring names; hako/_pdu.pyi lists
hako._pdu's; the hako package is marked typed. Argument: the build's python folder."""

import ast
import inspect
import os
import re
import sys
import unittest

import hakopy

import hako
import hako._pdu

PYTHON_DIR = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(hakopy.__file__)


def stub_names(path: str):
    """{name: FunctionDef or None} of the public names a stub defines at module level."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    names = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names[node.name] = node
        elif isinstance(node, ast.ClassDef):
            names[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = None
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names[t.id] = None
    return {k: v for k, v in names.items() if not k.startswith("_")}


def module_names(module):
    return {n for n in dir(module) if not n.startswith("_")}


def doc_arguments(fn) -> list:
    """The argument names of "name(a, b_or_None) -> ..." in a C function's docstring."""
    m = re.match(r"\w+\(([^)]*)\)", fn.__doc__ or "")
    assert m, f"{fn.__name__}: no signature in its docstring {fn.__doc__!r}"
    args = [a.split("=")[0].strip().replace("_or_None", "") for a in m.group(1).split(",")]
    return [a for a in args if a not in ("", "*", "/")]


class Stubs(unittest.TestCase):
    def test_hakopy_stub_lists_exactly_the_module(self) -> None:
        path = os.path.join(os.path.dirname(hakopy.__file__), "hakopy.pyi")
        self.assertTrue(os.path.exists(path), "hakopy.pyi next to the module")
        self.assertEqual(os.path.dirname(os.path.abspath(path)), os.path.abspath(PYTHON_DIR))
        stub = stub_names(path)
        self.assertEqual(set(stub), module_names(hakopy))
        functions = [n for n, node in stub.items() if node is not None]
        constants = [n for n, node in stub.items() if node is None]
        self.assertEqual((len(functions), len(constants)), (39, 30))

    def test_hakopy_stub_arguments(self) -> None:
        path = os.path.join(os.path.dirname(hakopy.__file__), "hakopy.pyi")
        for name, node in stub_names(path).items():
            if node is None:
                self.assertIsInstance(getattr(hakopy, name), int, name)
                continue
            with self.subTest(function=name):
                args = node.args
                self.assertEqual(args.args, [], "positional-only, as the C function parses")
                self.assertEqual([a.arg for a in args.posonlyargs],
                                 doc_arguments(getattr(hakopy, name)))
                self.assertTrue(all(a.annotation is not None for a in args.posonlyargs))
                self.assertIsNotNone(node.returns)

    def test_pdu_stub_lists_exactly_the_module(self) -> None:
        path = os.path.join(os.path.dirname(hako._pdu.__file__), "_pdu.pyi")
        stub = stub_names(path)
        self.assertEqual(set(stub), module_names(hako._pdu))
        for name, node in stub.items():
            if node is not None:
                with self.subTest(function=name):
                    a = node.args
                    self.assertEqual([x.arg for x in a.posonlyargs + a.args + a.kwonlyargs],
                                     doc_arguments(getattr(hako._pdu, name)))

    def test_hako_is_typed(self) -> None:
        here = os.path.dirname(hako.__file__)
        self.assertTrue(os.path.exists(os.path.join(here, "py.typed")))
        self.assertEqual(os.path.abspath(os.path.dirname(here)), os.path.abspath(PYTHON_DIR))
        for name in hako.__all__:
            obj = getattr(hako, name)
            if inspect.isfunction(obj):
                hints = obj.__annotations__
                self.assertIn("return", hints, name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
