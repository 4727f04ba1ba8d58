"""What the bench runs: the built-in code tasks, FIM tasks cut from the user's files, and tasks
files (`--tasks-file`, one JSON object a line)."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..edit_prompt import LANGUAGES, fence_language
from ..requests import ChatMessage, ChatRequest, CompletionRequest, EditRequest, GenerateRequest, Request


@dataclass(frozen=True)
class BenchTask:
    """One prompt the benchmark runs both ways."""

    name: str
    kind: str  # "completion" | "continuation" | "edit" | "chat" | "fim"
    request: Request
    source: str | None = None  # FIM tasks: FILE:LINE:COL of the cursor (1-based); tasks files: FILE:LINE
    # Tasks files: text the session saw before the task (other files, earlier answers). The bench
    # feeds it to a session drafter's memory before every run, never into the prompt.
    context: tuple[str, ...] = ()

    def describe(self) -> dict:
        out = {"name": self.name, "kind": self.kind, "max_tokens": self.request.max_tokens}
        if self.source:
            out["source"] = self.source
        return out


_INVENTORY = '''\
"""A tiny inventory: items with quantities and prices, persisted as JSON."""

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Item:
    name: str
    quantity: int = 0
    price: float = 0.0

    def total(self) -> float:
        """Value of this line: quantity times unit price."""
        return self.quantity * self.price


@dataclass
class Inventory:
    items: dict[str, Item] = field(default_factory=dict)

    def add(self, name: str, quantity: int, price: float) -> Item:
        item = self.items.get(name)
        if item is None:
            item = Item(name, 0, price)
            self.items[name] = item
        item.quantity += quantity
        item.price = price
        return item

    def remove(self, name: str, quantity: int) -> None:
        item = self.items[name]
        if quantity > item.quantity:
            raise ValueError(f"only {item.quantity} of {name} in stock")
        item.quantity -= quantity

    def value(self) -> float:
        return sum(item.total() for item in self.items.values())

    def save(self, path: Path) -> None:
        data = {n: [i.quantity, i.price] for n, i in self.items.items()}
        path.write_text(json.dumps(data, indent=2))
'''

_SEARCH = '''\
def binary_search(values, target):
    """Return the index of target in the sorted list values, or -1."""
    lo, hi = 0, len(values) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if values[mid] == target:
            return mid
        if values[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
'''

_JS = '''\
function debounce(fn, wait) {
  let timer = null;
  return function (...args) {
    clearTimeout(timer);
    timer = setTimeout(() => fn.apply(this, args), wait);
  };
}

function throttle(fn, wait) {
  let last = 0;
  return function (...args) {
    const now = Date.now();
    if (now - last >= wait) {
      last = now;
      fn.apply(this, args);
    }
  };
}
'''


def _cursor(text: str, marker: str, *, after: bool = True) -> tuple[str, str]:
    """Split text at the end (or start) of the first occurrence of marker."""
    i = text.index(marker) + (len(marker) if after else 0)
    return text[:i], text[i:]


def _completion(name: str, text: str, marker: str, max_tokens: int, path: str) -> BenchTask:
    prefix, suffix = _cursor(text, marker)
    # No line cap and no time budget: both runs must generate the same amount to be comparable.
    req = CompletionRequest(prefix=prefix, suffix=suffix, path=path, max_tokens=max_tokens,
                            multiline=True, max_lines=10_000, time_budget_s=None)
    return BenchTask(name, "completion", req)


def _edit(name: str, instruction: str, code: str, path: str, max_tokens: int, before: str = "",
          after: str = "") -> BenchTask:
    """An edit of a whole file, as the app and `specterm edit` ask for one (an EditRequest: the
    same prompt and the same drafting from the original). The answer repeats most of its input,
    which is where drafting from the original pays."""
    return BenchTask(name, "edit", EditRequest(instruction=instruction, region=code, path=path,
                                               max_tokens=max_tokens, before=before, after=after))


def _chat(name: str, instruction: str, code: str, lang: str, max_tokens: int) -> BenchTask:
    """An edit asked for in the chat pane, as a user would type it: the answer mixes prose with
    code, so it repeats less of the input than an applied edit."""
    msg = ChatMessage("user", f"{instruction}\n```{lang}\n{code}```")
    return BenchTask(name, "chat", ChatRequest(messages=(msg,), max_tokens=max_tokens))


def builtin_tasks(*, completion_tokens: int = 64, generate_tokens: int = 128) -> list[BenchTask]:
    """The built-in code tasks, kinds interleaved so the first few cover every kind."""
    inv, srch = _INVENTORY, _SEARCH
    return [
        _completion("complete-method-body", inv, "    def value(self) -> float:\n",
                    completion_tokens, "inventory.py"),
        BenchTask("continue-class", "continuation",
                  GenerateRequest(prompt=inv.split("    def save")[0] + "    def load(self, path: Path) -> None:\n",
                                  max_tokens=generate_tokens)),
        _edit("edit-rename", "Rename the field `quantity` to `count` everywhere.", inv,
              "inventory.py", generate_tokens),
        _chat("chat-rename", "Rename the field `quantity` to `count` everywhere in this code.", inv, "python",
              generate_tokens),
        _completion("complete-loop", srch, "        mid = (lo + hi) // 2\n", completion_tokens, "search.py"),
        BenchTask("continue-js", "continuation",
                  GenerateRequest(prompt=_JS + "\nfunction once(fn) {\n", max_tokens=generate_tokens)),
        _edit("edit-docstring", "Say in the docstring what is returned when target is not found.", srch,
              "search.py", generate_tokens),
        _completion("complete-js-body", _JS, "  let last = 0;\n", completion_tokens, "util.js"),
        _edit("edit-js-strict", "Add 'use strict'; at the top of the file.", _JS, "util.js",
              generate_tokens),
        _chat("chat-js-arrow", "Rewrite these functions with const arrow functions.", _JS, "javascript",
              generate_tokens),
    ]


TASK_KINDS = ("completion", "continuation", "edit", "chat", "fim")

# Files worth cutting FIM tasks from when a folder is given (text source files).
SOURCE_SUFFIXES = frozenset(
    ".py .pyi .js .jsx .ts .tsx .go .rs .c .h .cc .cpp .hpp .java .kt .swift .rb .php .lua .sh "
    ".zig .cs .scala .sql .toml .yaml .yml .md .html .css".split()
)


def collect_files(paths: Sequence[str | Path], *, limit: int = 2000) -> list[Path]:
    """Files named directly, plus the source files under named folders (hidden and vendored folders
    skipped), sorted so the choice of tasks is reproducible. Raises ValueError for a missing path."""
    out: list[Path] = []
    skip_dirs = {"node_modules", "__pycache__", "venv", ".venv", "build", "dist", "target"}
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise ValueError(f"{raw}: no such file or folder")
        if p.is_file():
            out.append(p)
            continue
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in skip_dirs)
            for f in sorted(files):
                fp = Path(root) / f
                if fp.suffix.lower() in SOURCE_SUFFIXES and not f.startswith("."):
                    out.append(fp)
            if len(out) >= limit:
                break
    return sorted(dict.fromkeys(out))


def _read_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:4096]:
        return None  # binary
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def fim_tasks(paths: Sequence[str | Path], *, count: int = 8, seed: int = 0, max_tokens: int = 64,
              min_prefix_chars: int = 64) -> list[BenchTask]:
    """FIM tasks cut from the user's files at random cursor positions.

    Reproducible: the same files, count and seed give the same cursors. A cursor is placed in a
    random non-blank line (file chosen at random among usable ones), at a random column between the
    line's indentation and its end, as when a user is typing inside a line. Raises ValueError when
    no file has usable text.
    """
    files = collect_files(paths)
    texts: list[tuple[Path, str, list[int]]] = []
    for f in files:
        text = _read_text(f)
        if not text or len(text) < min_prefix_chars + 8:
            continue
        starts, pos = [], 0
        for line in text.split("\n"):
            if line.strip() and pos >= min_prefix_chars:
                starts.append(pos)
            pos += len(line) + 1
        if starts:
            texts.append((f, text, starts))
    if not texts:
        raise ValueError("no usable text files (UTF-8, at least a few lines) among the given paths")
    rng = random.Random(seed)
    tasks: list[BenchTask] = []
    for i in range(count):
        f, text, starts = texts[rng.randrange(len(texts))]
        start = starts[rng.randrange(len(starts))]
        line = text[start:].split("\n", 1)[0]
        indent = len(line) - len(line.lstrip(" \t"))
        col = rng.randint(indent, len(line))
        cut = start + col
        line_no = text.count("\n", 0, start) + 1
        source = f"{f}:{line_no}:{col + 1}"
        req = CompletionRequest(prefix=text[:cut], suffix=text[cut:], path=str(f), max_tokens=max_tokens,
                                multiline=True, max_lines=10_000, time_budget_s=None)
        tasks.append(BenchTask(f"fim-{i + 1}:{f.name}:{line_no}:{col + 1}", "fim", req, source))
    return tasks



# -- tasks files ---------------------------------------------------------------------------------

# Keys a tasks-file line may carry, by kind (besides name, kind, max_tokens, context).
_REQUIRED = {"edit": ("instruction", "code"), "chat": ("message",), "continuation": ("prompt",),
             "fim": ("prefix",), "completion": ("prefix",)}
_OPTIONAL = {"edit": ("lang", "path", "before", "after"), "chat": (), "continuation": (), "fim": ("suffix", "path"),
             "completion": ("suffix", "path")}
_COMMON = ("name", "kind", "max_tokens", "context")


class TasksFileError(ValueError):
    """A tasks file that cannot be used; the message names the file and the line."""


def _task_from_object(obj: dict, *, line: str, max_tokens: dict[str, int]) -> BenchTask:
    """One tasks-file object as a BenchTask; ValueError says what is wrong with it."""
    name, kind = obj.get("name"), obj.get("kind")
    if not isinstance(name, str) or not name.strip():
        raise ValueError('"name" must be a non-empty string')
    if kind not in _REQUIRED:
        raise ValueError(f'"kind" must be one of {", ".join(_REQUIRED)}, got {kind!r}')
    allowed = set(_COMMON) | set(_REQUIRED[kind]) | set(_OPTIONAL[kind])
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(map(repr, unknown))} for kind {kind!r} "
                         f"(allowed: {', '.join(sorted(allowed))})")
    for key in _REQUIRED[kind]:
        if key not in obj:
            raise ValueError(f'a {kind!r} task needs "{key}"')
    for key in (*_REQUIRED[kind], *_OPTIONAL[kind]):
        if key in obj and not isinstance(obj[key], str):
            raise ValueError(f'"{key}" must be a string')
    limit = obj.get("max_tokens", max_tokens.get(kind, 128))
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f'"max_tokens" must be a whole number >= 1, got {limit!r}')
    context = obj.get("context", [])
    if not isinstance(context, list) or not all(isinstance(c, str) for c in context):
        raise ValueError('"context" must be a list of strings')
    if kind == "edit":
        path = obj.get("path", "file")
        lang = obj.get("lang")
        if lang and fence_language(path) != lang:  # the code block's language comes from the path
            path += next((ext for ext, name in LANGUAGES.items() if name == lang), "")
        before, after = obj.get("before", ""), obj.get("after", "")
        if before and not before.endswith("\n"):  # the region is whole lines
            before += "\n"
        code = obj["code"] if obj["code"].endswith("\n") else obj["code"] + "\n"
        task = _edit(name, obj["instruction"], code, path, limit, before, after)
    elif kind == "chat":
        msg = ChatMessage("user", obj["message"])
        task = BenchTask(name, "chat", ChatRequest(messages=(msg,), max_tokens=limit))
    elif kind == "continuation":
        task = BenchTask(name, "continuation", GenerateRequest(prompt=obj["prompt"], max_tokens=limit))
    else:  # fim / completion: a cursor between prefix and suffix
        req = CompletionRequest(prefix=obj["prefix"], suffix=obj.get("suffix", ""), path=obj.get("path"),
                                max_tokens=limit, multiline=True, max_lines=10_000, time_budget_s=None)
        task = BenchTask(name, kind, req)
    return BenchTask(task.name, task.kind, task.request, source=line, context=tuple(context))


def parse_tasks_file(text: str, *, source: str = "tasks file",
                     max_tokens: dict[str, int] | None = None) -> list[BenchTask]:
    """Tasks from JSON lines: one object a line; blank lines and lines starting with # are skipped.

    `max_tokens` gives the default per kind for objects without one. Raises TasksFileError naming
    `source` and the 1-based line number of the first bad line, or saying that there are no tasks.
    """
    import json

    defaults = max_tokens or {}
    tasks: list[BenchTask] = []
    seen: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}:{n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise TasksFileError(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from None
        if not isinstance(obj, dict):
            raise TasksFileError(f"{where}: expected a JSON object {{...}}, got {type(obj).__name__}")
        try:
            task = _task_from_object(obj, line=where, max_tokens=defaults)
        except ValueError as err:
            raise TasksFileError(f"{where}: {err}") from None
        if task.name in seen:
            raise TasksFileError(f"{where}: the name {task.name!r} is already used on line {seen[task.name]}")
        seen[task.name] = n
        tasks.append(task)
    if not tasks:
        raise TasksFileError(f"{source}: no tasks (one JSON object a line, e.g. "
                             '{"name": "fix", "kind": "edit", "instruction": "...", "code": "..."})')
    return tasks
