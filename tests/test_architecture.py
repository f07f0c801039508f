"""docs/architecture.md's "Direction of imports" table is the code's import graph, and imports flow one way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "mcpdeck"
DOC = ROOT / "docs" / "architecture.md"


def documented() -> list[tuple[list[str], set[str]]]:
    """The table's rows, lowest first: (the parts of the row, what they import)."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index("### Direction of imports")
    rows: list[tuple[list[str], set[str]]] = []
    in_table = False
    for line in lines[start + 1 :]:
        if not line.startswith("|"):
            if in_table:
                break
            continue
        in_table = True
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0] == "Part" or set(cells[0]) <= {"-"}:
            continue  # the header and its rule
        parts = re.findall(r"`([^`]+)`", cells[0])
        imports: set[str] = set() if cells[1] == "nothing" else set(re.findall(r"`([^`]+)`", cells[1]))
        assert parts, f"a row of the table names no part: {line}"
        rows.append((parts, imports))
    return rows


def part_of(path: Path) -> str:
    """The part a source file belongs to: its top-level module or package under mcpdeck."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported(path: Path) -> set[str]:
    """The parts of mcpdeck a file imports (type-checking-only imports included), its own left out."""
    relative = path.relative_to(PACKAGE)
    package = ["mcpdeck", *relative.parts[:-1]]
    modules: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if module == "mcpdeck":  # from mcpdeck import errors, Host, ...: the names are parts or re-exports
                modules.extend(f"mcpdeck.{alias.name}" for alias in node.names)
            else:
                modules.append(module)
    own = part_of(path)
    found: set[str] = set()
    for module in modules:
        bits = module.split(".")
        if bits[0] == "mcpdeck" and len(bits) > 1 and bits[1] != own:
            found.add(bits[1])
    return found


def actual() -> dict[str, set[str]]:
    """Every part of the package and the parts it imports."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        graph.setdefault(part_of(path), set()).update(imported(path))
    return graph


def test_every_part_of_the_package_has_one_row_in_the_table() -> None:
    named = [part for parts, _ in documented() for part in parts]
    assert sorted(set(named)) == sorted(named), "a part is named in more than one row"
    code = set(actual())
    assert code - set(named) == set(), "parts missing from docs/architecture.md's import table"
    assert set(named) - code == set(), "the import table names parts the code does not have"


def test_each_row_lists_exactly_what_its_parts_import() -> None:
    graph = actual()
    wrong: list[str] = []
    for parts, listed in documented():
        real = set[str]().union(*(graph.get(part, set()) for part in parts))
        if real - listed:
            wrong.append(f"{', '.join(parts)} also imports {sorted(real - listed)}: add it to the table")
        if listed - real:
            wrong.append(f"{', '.join(parts)} no longer imports {sorted(listed - real)}: take it out of the table")
    assert wrong == []


def test_no_part_imports_a_part_in_its_own_row_or_below() -> None:
    graph = actual()
    seen: set[str] = set()
    wrong: list[str] = []
    for parts, _ in documented():
        wrong.extend(
            f"{part} imports {sorted(graph.get(part, set()) - seen)}, which are not below it"
            for part in parts
            if graph.get(part, set()) - seen
        )
        seen.update(parts)
    assert wrong == []


def test_the_check_sees_relative_type_only_and_package_imports() -> None:
    # The import reader itself, on files whose imports are known, so a broken reader cannot pass the checks above.
    assert imported(PACKAGE / "_stdio.py") == {"_child_process", "_transports"}
    assert "history" in imported(PACKAGE / "__init__.py")
    assert imported(PACKAGE / "errors.py") == set()
    assert "host" in actual()["agent"]
