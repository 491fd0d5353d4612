"""The package itself: Python 3.9 grammar, typed, documented, standard library only."""

from __future__ import annotations

import ast
import inspect
import sys
import unittest
from pathlib import Path

import sandglass_client

PACKAGE = Path(sandglass_client.__file__).resolve().parent
SOURCES = sorted(PACKAGE.glob("*.py"))


class Package(unittest.TestCase):
    def test_sources_parse_as_python_3_9(self) -> None:
        for path in SOURCES:
            with self.subTest(path.name):
                # No `match`, no parenthesized context managers, ...: the grammar of 3.9.
                ast.parse(path.read_text("utf-8"), filename=str(path), feature_version=(3, 9))

    def test_no_union_operator_in_annotations(self) -> None:
        # `X | Y` in an annotation breaks typing.get_type_hints() on 3.9 even under `from __future__ import annotations`.
        for path in SOURCES:
            tree = ast.parse(path.read_text("utf-8"))
            for node in ast.walk(tree):
                annotations = []
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    annotations = [arg.annotation for arg in node.args.args + node.args.kwonlyargs] + [node.returns]
                elif isinstance(node, ast.AnnAssign):
                    annotations = [node.annotation]
                for annotation in annotations:
                    if annotation is not None:
                        for part in ast.walk(annotation):
                            self.assertFalse(isinstance(part, ast.BinOp) and isinstance(part.op, ast.BitOr), f"{path.name}:{getattr(part, 'lineno', '?')} uses X | Y")

    def test_only_the_standard_library_is_imported(self) -> None:
        stdlib = getattr(sys, "stdlib_module_names", None)
        if stdlib is None:  # Python 3.9: no list to check against
            return
        for path in SOURCES:
            tree = ast.parse(path.read_text("utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    self.assertIn(name.split(".")[0], set(stdlib) | {"__future__"}, f"{path.name} imports {name}")

    def test_every_public_name_has_a_docstring_and_hints(self) -> None:
        for name in sandglass_client.__all__:
            value = getattr(sandglass_client, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                with self.subTest(name):
                    self.assertTrue(inspect.getdoc(value), f"{name} has no docstring")
                    members = inspect.getmembers(value, inspect.isfunction) if inspect.isclass(value) else [(name, value)]
                    for member_name, member in members:
                        if member_name.startswith("_") or member.__module__ != value.__module__:
                            continue
                        self.assertTrue(inspect.getdoc(member), f"{name}.{member_name} has no docstring")
                        self.assertIn("return", member.__annotations__, f"{name}.{member_name} has no return hint")

    def test_it_is_marked_typed(self) -> None:
        self.assertTrue((PACKAGE / "py.typed").exists())


if __name__ == "__main__":
    unittest.main()
