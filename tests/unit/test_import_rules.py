"""The layers' import rules, read from the source (imports inside functions included): the core
imports only itself, the Contact ID table and the standard library; only the composition root
imports the app; the store imports no adapter."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path

import alarmhub

PACKAGE = Path(alarmhub.__file__).parent
ADAPTERS = ("rx", "xm", "console", "dc09", "cli", "app")
CONTACT_ID = "alarmhub.contactid"
COMPOSITION_ROOT = frozenset(
    {"alarmhub.node.app", "alarmhub.node.server", "alarmhub.node.workers",
     "alarmhub.node.worker_process", "alarmhub.__main__"}
)  # fmt: skip


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports anywhere in it, by its full name: ``from a import b`` gives
    ``a`` and ``a.b`` (``b`` may be a module), relative imports resolved."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(f"{package}.")


def modules(under: str = "") -> list[Path]:
    return sorted((PACKAGE / under).rglob("*.py"))


def offending(paths: list[Path], allowed: Callable[[str], bool]) -> dict[str, list[str]]:
    """The modules among ``paths`` that import what is not ``allowed``, and what."""
    found = {
        module_name(path): sorted(name for name in imported(path) if not allowed(name))
        for path in paths
    }
    return {module: names for module, names in found.items() if names}


def test_the_core_imports_only_the_core_the_contact_id_table_and_the_standard_library() -> None:
    def allowed(name: str) -> bool:
        if within(name, "alarmhub"):
            return within(name, "alarmhub.core") or within(name, CONTACT_ID)
        return name.split(".")[0] in sys.stdlib_module_names

    assert offending(modules("core"), allowed) == {}


def test_only_the_composition_root_imports_the_app() -> None:
    others = [path for path in modules() if module_name(path) not in COMPOSITION_ROOT]
    assert offending(others, lambda name: not within(name, "alarmhub.node.app")) == {}


def test_the_store_imports_no_adapter() -> None:
    def allowed(name: str) -> bool:
        return not any(within(name, f"alarmhub.{adapter}") for adapter in ADAPTERS)

    assert offending(modules("store"), allowed) == {}
