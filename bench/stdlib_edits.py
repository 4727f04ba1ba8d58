"""Edit tasks cut from this Python's standard library, for `specterm bench --tasks-file` and
`specterm bench --edits`: code the project's own tasks were not tuned on.

    python bench/stdlib_edits.py whole > /tmp/stdlib-edits.jsonl     # a function, as the whole file
    python bench/stdlib_edits.py region > /tmp/stdlib-regions.jsonl  # a method inside its file
    python bench/stdlib_edits.py methods > /tmp/stdlib-methods.jsonl  # ten methods inside their files

`whole`: ten functions of 9-30 lines from ten modules, one generic instruction each (type hints,
a rename, a docstring, a check), chosen with a fixed seed. `region`: three methods of 27-80 lines
with 80 lines before and 30 after them, as the app sends an edit of a selected function.
`methods`: ten methods of 12-60 lines from ten other modules, chosen with a fixed seed, one generic
instruction each, with the same context as `region`.
The tasks depend on the Python version (its library's text): say which one beside a figure.
"""

from __future__ import annotations

import ast
import json
import random
import sys
import sysconfig
from pathlib import Path

LIB = Path(sysconfig.get_paths()["stdlib"])
WHOLE = ("textwrap.py", "shlex.py", "fnmatch.py", "glob.py", "calendar.py", "csv.py", "heapq.py",
         "bisect.py", "colorsys.py", "statistics.py", "string.py", "pprint.py")
INSTRUCTIONS = ("Add type hints to the parameters and the return value.", "Rename the local variable {v} to {v}_value.",
                "Add a one-line docstring.", "Raise ValueError when the first argument is None.",
                "Replace the string formatting with f-strings where possible.",
                "Add a comment above each loop saying what it does.")
REGIONS = (("argparse.py", "_get_values", "Raise TypeError when action is None."),
           ("csv.py", "sniff", "Add a docstring line saying what is returned."),
           ("pprint.py", "_safe_repr", "Use isinstance checks in one tuple where possible."))
METHODS = ("configparser.py", "difflib.py", "email/feedparser.py", "ftplib.py", "gettext.py", "imaplib.py",
           "inspect.py", "logging/__init__.py", "mailbox.py", "optparse.py", "pickletools.py", "tarfile.py",
           "threading.py", "zipfile/__init__.py", "zipfile.py", "smtplib.py")


def _instruction(rng: random.Random, fn: ast.FunctionDef) -> str:
    names = sorted({n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)})
    instruction = rng.choice(INSTRUCTIONS)
    if "{v}" in instruction:
        instruction = instruction.format(v=rng.choice(names)) if names else INSTRUCTIONS[2]
    return instruction


def _in_context(name: str, lines: list[str], a: int, b: int) -> dict:
    """What the app sends for lines a..b-1 selected: 80 lines before them and 30 after."""
    return {"path": name, "before": "".join(lines[max(0, a - 80):a]), "code": "".join(lines[a:b]),
            "after": "".join(lines[b:b + 30])}


def whole_tasks() -> list[dict]:
    rng = random.Random(7)
    out = []
    for name in WHOLE:
        src = (LIB / name).read_text(encoding="utf-8")
        fns = [n for n in ast.parse(src).body
               if isinstance(n, ast.FunctionDef) and 8 <= (n.end_lineno or 0) - n.lineno <= 30]
        if not fns:
            continue
        fn = rng.choice(fns)
        lines = src.splitlines(True)
        code = "".join(lines[fn.lineno - 1 - len(fn.decorator_list):fn.end_lineno])
        out.append({"name": f"ho-{name[:-3]}-{fn.name}", "kind": "edit", "path": name, "code": code,
                    "instruction": _instruction(rng, fn)})
    return out


def region_tasks() -> list[dict]:
    out = []
    for name, fn_name, instruction in REGIONS:
        src = (LIB / name).read_text(encoding="utf-8")
        fn = next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef) and n.name == fn_name)
        lines = src.splitlines(True)
        a, b = fn.lineno - 1, fn.end_lineno or fn.lineno
        out.append({"name": f"app-{name[:-3]}-{fn_name}", "kind": "edit", "instruction": instruction,
                    **_in_context(name, lines, a, b)})
    return out


def method_tasks(count: int = 10) -> list[dict]:
    rng = random.Random(11)
    out: list[dict] = []
    for name in METHODS:
        if len(out) == count:
            break
        path = LIB / name
        if not path.is_file():  # (zipfile is a package from Python 3.12 on)
            continue
        src = path.read_text(encoding="utf-8")
        methods = [f for c in ast.parse(src).body if isinstance(c, ast.ClassDef) for f in c.body
                   if isinstance(f, ast.FunctionDef) and not f.decorator_list
                   and 12 <= (f.end_lineno or 0) - f.lineno + 1 <= 60]
        if not methods:
            continue
        fn = rng.choice(methods)
        lines = src.splitlines(True)
        module = name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        out.append({"name": f"m-{module}-{fn.name}", "kind": "edit", "instruction": _instruction(rng, fn),
                    **_in_context(name, lines, fn.lineno - 1, fn.end_lineno or fn.lineno)})
    return out


def main(argv: list[str]) -> int:
    makers = {"whole": whole_tasks, "region": region_tasks, "methods": method_tasks}
    if len(argv) != 1 or argv[0] not in makers:
        print("usage: python bench/stdlib_edits.py whole|region|methods > tasks.jsonl", file=sys.stderr)
        return 2
    tasks = makers[argv[0]]()
    sys.stdout.write("".join(json.dumps(t) + "\n" for t in tasks))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
