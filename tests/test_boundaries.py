"""Architecture rules that keep the layers honest:

- the engine is a library: it never imports Textual or specterm.tui;
- the engine's wings: the core (every .py directly in engine/) imports only numpy and the standard
  library and none of the wings; only engine/llamacpp/ talks to llama.cpp; engine/remote/ never
  loads llama.cpp; nothing outside engine/remote/ (and the CLI's lazy remote imports) needs httpx;
- installed, everything lives under `specterm.`: no generic top-level `engine`/`tui`/`themes`;
- headless commands never load Textual (fast start for editor plugins);
- one engine factory: only tui/engine_factory.py imports the engine classes (LocalEngine,
  RemoteEngine); the CLI, the app, the bench and doctor call it;
- one settings source: the engine's dataclasses (engine/settings.py) and the loader's (tui/config.py)
  declare each setting once, and only the loader knows the "demo" target and the draft keywords.
- one home for the bench: engine/bench/ the library, tui/bench/ the command and the benches
  that drive the app, bench/ the scripts; nothing else in engine/ or tui/ is bench code;
- the suggestion lifecycle is no widget: tui/suggest/controller.py imports no Textual;
- the app composes and routes, the editor keys and draws: tui/app.py <= 450 lines,
  tui/widgets/editor.py <= 500 (what grows past that goes into a module of its own).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = {"engine": "specterm.engine", "tui": "specterm.tui", "themes": "specterm.themes"}
WINGS = ("llamacpp", "remote", "models", "bench")
HTTP_CLIENTS = ("httpx", "requests", "urllib3", "aiohttp")


def package_of(path: Path) -> str:
    """The installed package a source file belongs to (specterm.engine.remote for engine/remote/x.py)."""
    rel = path.relative_to(REPO)
    return ".".join((PACKAGE_DIRS[rel.parts[0]], *rel.parts[1:-1]))


def imported_modules(path: Path, package: str) -> set[str]:
    """Absolute names of every module a source file imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                prefix = ".".join(base)
                mod = f"{prefix}.{node.module}" if node.module else prefix
                names.add(mod)
                names.update(f"{mod}.{alias.name}" for alias in node.names)
            else:
                names.add(node.module or "")
    return names


def sources(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def rel_id(path: Path) -> str:
    return str(path.relative_to(REPO))


def test_imported_modules_resolves_relative_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from ..tui import app\nfrom . import llama\nimport textual.app\n")
    names = imported_modules(f, "specterm.engine")
    assert {"specterm.tui", "specterm.tui.app", "specterm.engine.llama", "textual.app"} <= names
    names = imported_modules(f, "specterm.engine.remote")
    assert {"specterm.engine.tui.app", "specterm.engine.remote.llama"} <= names


def test_wings_are_the_folders_of_engine():
    """A new folder in engine/ is a new wing: name it here and give it its rules."""
    folders = {p.name for p in (REPO / "engine").iterdir() if (p / "__init__.py").exists()}
    assert folders == set(WINGS)


@pytest.mark.parametrize("path", sources("engine"), ids=rel_id)
def test_engine_never_imports_textual_or_the_tui(path: Path):
    for name in imported_modules(path, package_of(path)):
        top = name.split(".")[0]
        assert top != "textual", f"{rel_id(path)} imports {name}"
        assert not name.startswith("specterm.tui"), f"{rel_id(path)} imports {name}"
        assert top not in ("tui", "engine", "themes"), f"{rel_id(path)} imports the unnamespaced {name}"


@pytest.mark.parametrize("path", sorted((REPO / "engine").glob("*.py")), ids=rel_id)
def test_core_imports_only_numpy_the_standard_library_and_the_core(path: Path):
    for name in imported_modules(path, package_of(path)):
        top = name.split(".")[0]
        if top == "specterm":
            parts = name.split(".")
            assert parts[1] == "engine" and (len(parts) < 3 or parts[2] not in WINGS), (
                f"{rel_id(path)} imports {name}: the core may not depend on a wing"
            )
        elif top and top != "__future__":
            assert top == "numpy" or top in sys.stdlib_module_names, f"{rel_id(path)} imports {name}"


@pytest.mark.parametrize(
    "path", [p for d in PACKAGE_DIRS for p in sources(d)], ids=rel_id
)
def test_only_engine_llamacpp_imports_llama_cpp(path: Path):
    uses = {n for n in imported_modules(path, package_of(path)) if n.split(".")[0] == "llama_cpp"}
    if path == REPO / "engine" / "llamacpp" / "model.py":
        assert uses, "engine/llamacpp/model.py is the one module that talks to llama.cpp"
    elif path.parent != REPO / "engine" / "llamacpp":
        assert not uses, f"{rel_id(path)} imports {sorted(uses)}; go through specterm.engine.llamacpp"


@pytest.mark.parametrize("path", sources("engine/remote"), ids=rel_id)
def test_remote_never_loads_llama_cpp(path: Path):
    for name in imported_modules(path, package_of(path)):
        assert name.split(".")[0] != "llama_cpp", f"{rel_id(path)} imports {name}"
        assert not name.startswith("specterm.engine.llamacpp"), f"{rel_id(path)} imports {name}"


@pytest.mark.parametrize("path", [p for p in sources("engine") if p.parent.name != "remote"], ids=rel_id)
def test_only_the_remote_wing_speaks_http(path: Path):
    for name in imported_modules(path, package_of(path)):
        assert name.split(".")[0] not in HTTP_CLIENTS, f"{rel_id(path)} imports {name}"


ENGINE_CLASSES = ("specterm.engine.llamacpp.local", "specterm.engine.remote.engine")


@pytest.mark.parametrize("path", sources("tui"), ids=rel_id)
def test_only_the_engine_factory_builds_engines(path: Path):
    if path == REPO / "tui" / "engine_factory.py":
        assert set(ENGINE_CLASSES) <= imported_modules(path, package_of(path))
        return
    for name in imported_modules(path, package_of(path)):
        assert not name.startswith(ENGINE_CLASSES), f"{rel_id(path)} imports {name}: use tui/engine_factory.py"


def test_no_second_completion_rule_set():
    """engine/completion.py is the one home of the text rules: no other engine or tui module
    defines its functions again."""
    rules = ("def finish_completion", "def drop_suffix_repeat", "class InlineStops", "def following_lines",
             "def line_indent", "def prompt_budget", "class _LineLimiter")
    for path in [*sources("engine"), *sources("tui")]:
        if path == REPO / "engine" / "completion.py":
            continue
        text = path.read_text()
        for rule in rules:
            assert rule not in text, f"{rel_id(path)} defines {rule!r} again; it lives in engine/completion.py"


def run_python(code: str, cwd: Path) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_no_generic_top_level_modules_are_installed(tmp_path):
    code = (
        "import importlib.util as u\n"
        "print([n for n in ('engine', 'tui', 'themes') if u.find_spec(n) is not None])\n"
        "import specterm.engine, specterm.tui, specterm.themes\n"
    )
    assert run_python(code, tmp_path) == "[]"


def test_engine_import_loads_neither_textual_nor_the_tui(tmp_path):
    code = (
        "import sys, pkgutil, importlib, specterm.engine as e\n"
        "for m in pkgutil.iter_modules(e.__path__):\n"
        "    importlib.import_module('specterm.engine.' + m.name)\n"
        "print(sorted(n for n in sys.modules if n.startswith(('textual', 'specterm.tui'))))\n"
    )
    assert run_python(code, tmp_path) == "[]"


def test_headless_cli_does_not_load_textual(tmp_path):
    code = (
        "import sys, contextlib, io\n"
        "from specterm.tui import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        cli.main(['complete', '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted({n.split('.')[0] for n in sys.modules if n.startswith('textual')}))\n"
    )
    assert run_python(code, tmp_path) == "[]"


def test_building_the_cli_parser_loads_no_bench_runner(tmp_path):
    """Every command builds every subcommand's parser: the bench's help must not import its
    runner (numpy and the drafters, ~0.1 s added to `specterm --version`)."""
    code = (
        "import sys, contextlib, io\n"
        "from specterm.tui import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        cli.main(['--version'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(n for n in sys.modules if n in ('numpy', 'specterm.engine.bench.runner')))\n"
    )
    assert run_python(code, tmp_path) == "[]"


def test_every_package_folder_ships_in_the_wheel():
    """A folder with __init__.py that pyproject does not list would be missing from the wheel
    (editable installs hide this: they import straight from the tree)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    for folder, package in PACKAGE_DIRS.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder).parts
            name = ".".join((package, *rel))
            assert name in listed, f"{init.parent.relative_to(REPO)} ({name}) is not in pyproject's packages"


DRAFTER_KINDS = {"model", "hybrid", "lookup", "session", "none"}


def drafter_state_writes(path: Path) -> list[str]:
    """Assignments to a drafter's attributes (or to the decoder's drafter) made from outside the
    object itself: `drafter.x = ...`, `decoder.drafter = ...`, `self.decoder.drafter.x = ...`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:
            if not isinstance(target, ast.Attribute):
                continue
            base = ast.unparse(target.value)
            if base != "self" and ("drafter" in base.lower() or target.attr == "drafter"):
                found.append(f"{rel_id(path)}:{node.lineno}: {ast.unparse(target)} = ...")
    return found


def kind_checks(path: Path) -> list[str]:
    """Decisions taken on a drafter's `kind` label (`drafter.kind == "model"`, `... in (...)`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute)
                and node.left.attr == "kind" and "drafter" in ast.unparse(node.left.value).lower()):
            continue  # (a setting's tagged choice, `draft.kind`, is read where a drafter is built)
        names = {c.value for comp in node.comparators for c in ast.walk(comp)
                 if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        if names & DRAFTER_KINDS:
            found.append(f"{rel_id(path)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_caller_writes_a_drafters_state():
    """Drafters are told what happened through their verbs (begin, draft, truncate, accept, rewind,
    forget); the policy prices, the loop asks. A caller that writes a drafter's attributes wires a
    second owner into it."""
    writes = [w for folder in ("engine", "tui") for path in sources(folder) for w in drafter_state_writes(path)]
    assert not writes, "\n".join(writes)


def test_drafter_capabilities_are_structure_not_kind_strings():
    """What a drafter can do is `parts()` (free proposer, draft model) and flags such as
    `judge_unsent`; `kind` is a label for the stats, never a branch."""
    checks = [c for folder in ("engine", "tui") for path in sources(folder) for c in kind_checks(path)]
    assert not checks, "\n".join(checks)

# -- one settings source ------------------------------------------------------------------------
# engine/settings.py declares what the engine reads; tui/config.py (the loader) declares the app's own
# sections and validates the TOML into both. A third dataclass repeating their fields, or a module
# comparing a target to the demo keyword after the loader resolved it, is a second source.

SETTINGS_SOURCES = (REPO / "engine" / "settings.py", REPO / "tui" / "config.py")
LOADER = REPO / "tui" / "config.py"
SHARED_FIELDS_LIMIT = 3  # an address (path, name) or a flag or two may coincide; a section may not


def dataclass_fields(path: Path) -> dict[str, dict[str, str]]:
    """Dataclass name -> {field: annotation as written} for every @dataclass in a source file."""
    out: dict[str, dict[str, str]] = {}
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ClassDef) and any(
            "dataclass" in ast.unparse(d) for d in node.decorator_list
        ):
            out[node.name] = {
                stmt.target.id: ast.unparse(stmt.annotation)
                for stmt in node.body
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and "ClassVar" not in ast.unparse(stmt.annotation)
            }
    return out


def settings_dataclasses() -> dict[str, dict[str, str]]:
    return {f"{rel_id(p)}:{name}": f for p in SETTINGS_SOURCES for name, f in dataclass_fields(p).items()}


def shared_fields(a: dict[str, str], b: dict[str, str], containers: set[str]) -> set[str]:
    """Fields both declare with the same type; a field holding a whole section (a container's
    `draft: DraftSettings`) is the section itself, not a copy of it."""
    return {name for name, ann in a.items() if b.get(name) == ann and ann not in containers}


def test_dataclass_fields_reads_annotations(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from dataclasses import dataclass\n@dataclass(frozen=True)\nclass A:\n"
                 "    x: int\n    y: str | None = None\n    def f(self) -> int:\n        return 1\n"
                 "class B:\n    z: int\n")
    assert dataclass_fields(f) == {"A": {"x": "int", "y": "str | None"}}
    containers = {"A"}
    assert shared_fields({"x": "int", "a": "A", "y": "str"}, {"x": "int", "a": "A", "y": "bytes"}, containers) == {"x"}


@pytest.mark.parametrize("path", [p for p in sources("tui")], ids=rel_id)
def test_no_tui_dataclass_declares_a_settings_section_again(path: Path):
    known = settings_dataclasses()
    containers = {key.rpartition(":")[2] for key in known}
    for name, own in dataclass_fields(path).items():
        for other, theirs in known.items():
            if other == f"{rel_id(path)}:{name}":
                continue
            same = shared_fields(own, theirs, containers)
            assert len(same) < SHARED_FIELDS_LIMIT, (
                f"{rel_id(path)}:{name} declares {sorted(same)} again, as {other} does: "
                "build it from that dataclass (one settings source)"
            )


def _names_the_demo(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value == "demo"
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_the_demo(e) for e in node.elts)
    return False


@pytest.mark.parametrize("path", [p for p in [*sources("engine"), *sources("tui")] if p != LOADER], ids=rel_id)
def test_only_the_loader_knows_the_demo_and_draft_keywords(path: Path):
    """The loader resolves `target = "demo"` once (ModelSettings.demo) and parses [model] draft
    once (parse_draft); no other module compares a value to "demo" or tells a draft keyword
    from a path."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Compare):
            assert not any(_names_the_demo(n) for n in (node.left, *node.comparators)), (
                f"{rel_id(path)}:{node.lineno} compares to \"demo\": read ModelSettings.demo, "
                "or ask tui/config.py's is_demo_target for a value the user typed"
            )
        if isinstance(node, (ast.Name, ast.alias, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.name if isinstance(node, ast.alias) else node.attr
            assert name not in ("DEMO_TARGET", "is_draft_keyword", "DRAFT_KEYWORDS"), (
                f"{rel_id(path)} uses {name}: the demo and the draft keywords are the loader's"
            )


def test_the_suggestion_controller_is_no_widget():
    path = REPO / "tui/suggest/controller.py"
    textual = [n for n in imported_modules(path, package_of(path)) if n.split(".")[0] == "textual"]
    assert textual == [], f"tui/suggest/controller.py imports {textual}"


def test_keys_wait_in_textuals_own_queue_not_in_an_event_hook():
    """Keys typed while a file opens wait in the app's queue (FileTree's Enter is a priority
    binding the app awaits): no widget or app overrides Textual's event dispatch to hold them."""
    for path in sorted((REPO / "tui").rglob("*.py")):
        tree = ast.parse(path.read_text())
        hooks = [f.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body
                 if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in ("on_event", "_on_message")]
        assert hooks == [], f"{rel_id(path)} overrides {hooks}"


@pytest.mark.parametrize("rel, most", [("tui/app.py", 450), ("tui/widgets/editor.py", 500)])
def test_the_app_and_the_editor_stay_small(rel: str, most: int):
    lines = len((REPO / rel).read_text().splitlines())
    assert lines <= most, f"{rel} has {lines} lines (at most {most}): move a concern into a module of its own"


def test_one_home_for_the_bench():
    """engine/bench/ is the measuring library and tui/bench/ the app side (the command, the
    replay, the edits); no other engine or tui module is named for the bench or imports either."""
    homes = (REPO / "engine" / "bench", REPO / "tui" / "bench")
    assert all((home / "__init__.py").exists() for home in homes)
    for path in [*sources("engine"), *sources("tui")]:
        if any(home in path.parents for home in homes):
            continue
        assert "bench" not in path.stem, f"{rel_id(path)} is bench code outside engine/bench/ and tui/bench/"
        for name in imported_modules(path, package_of(path)):
            assert not name.startswith(("specterm.engine.bench", "specterm.tui.bench")), (
                f"{rel_id(path)} imports {name}: bench code belongs in engine/bench/ or tui/bench/"
            )
