"""The composition root is the only place that wires a node: no adapter imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import alarmhub

PACKAGE = Path(alarmhub.__file__).parent
ADAPTERS = ("rx", "xm", "console", "dc09")
ROOT_MODULES = frozenset({"alarmhub.node.app", "alarmhub.node.server"})


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, by its full name (``from alarmhub import app`` included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_adapter_imports_the_composition_root() -> None:
    offending = {
        str(path.relative_to(PACKAGE)): sorted(imported(path) & ROOT_MODULES)
        for adapter in ADAPTERS
        for path in sorted((PACKAGE / adapter).rglob("*.py"))
        if imported(path) & ROOT_MODULES
    }
    assert offending == {}
