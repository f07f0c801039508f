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
    assert imported(PACKAGE / "traffic.py") == {"_sdk"}
    assert "history" in imported(PACKAGE / "__init__.py")
    assert imported(PACKAGE / "errors.py") == set()
    assert "host" in actual()["agent"]


KNOWN_CYCLES: list[set[str]] = []
"""The import cycles inside a package that exist today (none: issue 28 item 7 removed the gateway's). This list
must only shrink: a module may leave a cycle, none may join one, and no new cycle may start."""


def module_of(path: Path) -> str:
    """The dotted name of a source file (a package's ``__init__.py`` is the package)."""
    parts = ["mcpdeck", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(path: Path, modules: set[str]) -> set[str]:
    """The mcpdeck modules a file imports (type-checking-only imports included): ``from p import m`` is the
    module ``p.m`` when that is a module, else ``p``."""
    own = module_of(path)
    package = own.split(".") if path.name == "__init__.py" else own.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.update(f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names)
    return {module for module in found if module.split(".")[0] == "mcpdeck"}


def package_graphs() -> dict[str, dict[str, set[str]]]:
    """For each package, its members (modules and subpackages, the package's ``__init__`` as the package
    itself) and which of them import which, through any file inside them."""
    paths = {module_of(path): path for path in sorted(PACKAGE.rglob("*.py"))}
    packages = {name for name, path in paths.items() if path.name == "__init__.py"}
    graphs: dict[str, dict[str, set[str]]] = {}
    for name, path in paths.items():
        for target in module_imports(path, set(paths)):
            mine, theirs = name.split("."), target.split(".")
            common = 0
            while common < min(len(mine), len(theirs)) and mine[common] == theirs[common]:
                common += 1
            package = ".".join(mine[:common])
            if package not in packages:
                continue
            source, sink = (".".join(bits[: common + 1]) for bits in (mine, theirs))
            if source != sink:
                graphs.setdefault(package, {}).setdefault(source, set()).add(sink)
    return graphs


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected parts of ``graph`` with more than one member (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, set())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part: set[str] = set()
            while not part or node not in part:
                part.add(stack.pop())
            if len(part) > 1:
                found.append(part)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_inside_a_package_but_the_known_ones_which_only_shrink() -> None:
    found = [part for graph in package_graphs().values() for part in cycles(graph)]
    new = [sorted(part) for part in found if not any(part <= known for known in KNOWN_CYCLES)]
    assert new == [], f"import cycles inside a package: {new}; break them (see docs/architecture.md)"
    shrunk = [sorted(known) for known in KNOWN_CYCLES if known not in found]
    assert shrunk == [], f"these known cycles shrank or are gone: {shrunk}; update KNOWN_CYCLES to what is left"


def test_the_cycle_check_finds_a_cycle_and_resolves_imports_to_modules() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []
    modules = {module_of(path) for path in PACKAGE.rglob("*.py")}
    assert "mcpdeck._sdk.streamable_server" in module_imports(PACKAGE / "gateway" / "_http.py", modules)
    assert "mcpdeck.errors" in module_imports(PACKAGE / "gateway" / "_http.py", modules)


def test_the_test_module_check_sees_both_forms_of_import(tmp_path: Path) -> None:
    (tmp_path / "test_b.py").write_text(
        "import os\nfrom tests.a.test_x import f\nimport tests.test_y\nfrom tests import z\n"
    )
    assert imported_test_modules(tmp_path / "test_b.py") == ["tests.a.test_x", "tests.test_y"]


def imported_test_modules(path: Path) -> list[str]:
    """The test modules (``tests/**/test_*.py``) that ``path`` imports."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            module = [node.module] if node.module.split(".")[-1].startswith("test_") else []
            names = module or [f"{node.module}.{alias.name}" for alias in node.names]
        found += [name for name in names if name.startswith("tests.") and name.split(".")[-1].startswith("test_")]
    return found


def test_no_test_or_benchmark_imports_a_test_module() -> None:
    """Helpers shared by test files live in ``tests/helpers.py``, ``tests/support/`` or a folder's own helper
    modules (CONTRIBUTING.md): a test module is collected by pytest, and one that imports another runs its
    module-level set-up twice and ties two unrelated files together."""
    files = [*(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]
    files = [path for path in files if not any(part.startswith(".") for part in path.relative_to(ROOT).parts)]
    found = {str(path.relative_to(ROOT)): imported_test_modules(path) for path in sorted(files)}
    assert {path: modules for path, modules in found.items() if modules} == {}
