"""Edit tasks cut from this Python's standard library, for `specterm bench --tasks-file` and
`specterm bench --edits`: code the project's own tasks were not tuned on.

    python bench/stdlib_edits.py whole > /tmp/stdlib-edits.jsonl     # a function, as the whole file
    python bench/stdlib_edits.py region > /tmp/stdlib-regions.jsonl  # a method inside its file

`whole`: ten functions of 9-30 lines from ten modules, one generic instruction each (type hints,
a rename, a docstring, a check), chosen with a fixed seed. `region`: three methods of 27-80 lines
with 80 lines before and 30 after them, as the app sends an edit of a selected function.
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
        names = sorted({n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)})
        instruction = rng.choice(INSTRUCTIONS)
        if "{v}" in instruction:
            instruction = instruction.format(v=rng.choice(names)) if names else INSTRUCTIONS[2]
        out.append({"name": f"ho-{name[:-3]}-{fn.name}", "kind": "edit", "path": name, "code": code,
                    "instruction": instruction})
    return out


def region_tasks() -> list[dict]:
    out = []
    for name, fn_name, instruction in REGIONS:
        src = (LIB / name).read_text(encoding="utf-8")
        fn = next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef) and n.name == fn_name)
        lines = src.splitlines(True)
        a, b = fn.lineno - 1, fn.end_lineno or fn.lineno
        out.append({"name": f"app-{name[:-3]}-{fn_name}", "kind": "edit", "path": name, "instruction": instruction,
                    "before": "".join(lines[max(0, a - 80):a]), "code": "".join(lines[a:b]),
                    "after": "".join(lines[b:b + 30])})
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("whole", "region"):
        print("usage: python bench/stdlib_edits.py whole|region > tasks.jsonl", file=sys.stderr)
        return 2
    tasks = whole_tasks() if argv[0] == "whole" else region_tasks()
    sys.stdout.write("".join(json.dumps(t) + "\n" for t in tasks))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
