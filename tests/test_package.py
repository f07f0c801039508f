"""The package as users get it: a wheel built from this tree, installed in a fresh virtual
environment, used from outside the source tree.

A file missing from the package (``py.typed``, the licence, ``__main__``) or a dependency
that only the development environment happens to have fails here instead of for a user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcpdeck import __version__

ROOT = Path(__file__).resolve().parent.parent
PYRIGHT = ROOT / "node_modules" / ".bin" / "pyright"
PUBLIC_PACKAGES = [
    "mcpdeck",
    "mcpdeck.agent",
    "mcpdeck.auth",
    "mcpdeck.cli",
    "mcpdeck.config",
    "mcpdeck.history",
    "mcpdeck.permissions",
    "mcpdeck.providers",
]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    sdist: Path
    venv: Path
    home: Path
    """A folder outside the source tree, used as the working directory and HOME."""

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def run(self, *args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": f"{self.venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "LANG": "C.UTF-8",
        }
        return subprocess.run(
            [str(a) for a in args],
            cwd=self.home,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    """Build the wheel and sdist, then install the wheel (and only it) in a new venv."""
    base = tmp_path_factory.mktemp("package")
    dist = base / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = dist.glob("mcpdeck-*.whl")
    (sdist,) = dist.glob("mcpdeck-*.tar.gz")
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    pip = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    home = base / "home"
    home.mkdir()
    yield Installed(wheel, sdist, env_dir, home)


def test_the_wheel_and_sdist_carry_the_licence_types_marker_and_entry_points(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        entry_points = wheel.read(f"mcpdeck-{__version__}.dist-info/entry_points.txt").decode()
    assert "mcpdeck/py.typed" in names
    assert "mcpdeck/__main__.py" in names
    console = {n.removeprefix("mcpdeck/console/") for n in names if n.startswith("mcpdeck/console/")}
    shipped = {p.name for p in (ROOT / "src" / "mcpdeck" / "console").iterdir()}
    assert console == shipped and "index.html" in console  # the web console's files, every one
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)[-10:]
    assert "mcpdeck = mcpdeck.cli:main" in entry_points
    with tarfile.open(installed.sdist) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "src/mcpdeck/py.typed"} <= members


def test_python_dash_m_mcpdeck_runs_the_cli_from_outside_the_tree(installed: Installed) -> None:
    result = installed.run(installed.python, "-m", "mcpdeck", "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: " in result.stdout and "call" in result.stdout
    where = installed.run(installed.python, "-c", "import mcpdeck; print(mcpdeck.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(installed.venv), where.stdout


def test_the_version_comes_from_one_place(installed: Installed) -> None:
    result = installed.run(installed.venv / "bin" / "mcpdeck", "--version")
    assert result.returncode == 0, result.stderr
    assert __version__ in result.stdout
    imported = installed.run(installed.python, "-c", "import mcpdeck; print(mcpdeck.__version__)")
    assert imported.stdout.strip() == __version__
    assert installed.wheel.name.startswith(f"mcpdeck-{__version__}-")


def test_pip_show_gives_licence_classifiers_and_urls(installed: Installed) -> None:
    result = installed.run(installed.python, "-m", "pip", "show", "--verbose", "mcpdeck")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "License: MIT" in out
    assert "Typing :: Typed" in out
    assert "License :: OSI Approved :: MIT License" in out
    assert "Programming Language :: Python :: 3.11" in out
    assert "Changelog" in out


def test_every_public_package_imports(installed: Installed) -> None:
    code = f"import importlib; [importlib.import_module(n) for n in {PUBLIC_PACKAGES!r}]; print('ok')"
    result = installed.run(installed.python, "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_a_call_on_a_stdio_server_works_from_the_installed_package(installed: Installed) -> None:
    server = installed.home / "basic_server.py"
    shutil.copy(ROOT / "tests" / "servers" / "basic.py", server)
    config = installed.home / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"basic": {"command": str(installed.python), "args": [str(server)]}}}))
    result = installed.run(
        installed.venv / "bin" / "mcpdeck",
        "--config",
        config,
        "call",
        "mcp__basic__add",
        "--args",
        '{"a": 19, "b": 23}',
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "42"


def test_a_user_script_is_type_checked_against_the_installed_wheel(installed: Installed) -> None:
    assert PYRIGHT.exists(), "pyright comes from node_modules: run scripts/setup"
    project = installed.home / "user_project"
    project.mkdir()
    (project / "pyrightconfig.json").write_text(
        json.dumps(
            {
                "typeCheckingMode": "strict",
                "pythonVersion": "3.11",
                "venvPath": str(installed.venv.parent),
                "venv": installed.venv.name,
            }
        )
    )
    (project / "good.py").write_text(
        "from mcpdeck import Host, ToolResult\n"
        "\n"
        "async def run(host: Host) -> str:\n"
        "    result: ToolResult = await host.call_tool('mcp__basic__add', {'a': 1, 'b': 2})\n"
        "    return result.text()\n"
    )
    (project / "bad.py").write_text(
        "from mcpdeck import Host\n"
        "\n"
        "async def run(host: Host) -> int:\n"
        "    return await host.call_tool('mcp__basic__add', {'a': 1})\n"
    )
    env = {**os.environ, "HOME": str(installed.home)}
    # One run checks both files (a pyright start reads the whole installed environment's stubs again).
    checked = subprocess.run(
        [str(PYRIGHT), "--outputjson", "good.py", "bad.py"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    diagnostics = json.loads(checked.stdout)["generalDiagnostics"]
    by_file = {name: [d for d in diagnostics if Path(d["file"]).name == name] for name in ("good.py", "bad.py")}
    assert [d for d in by_file["good.py"] if d["severity"] == "error"] == [], by_file["good.py"]
    messages = [d["message"] for d in by_file["bad.py"]]
    # The checker knows what call_tool returns: a wrong return type is reported by name.
    assert any("ToolResult" in m for m in messages), messages
