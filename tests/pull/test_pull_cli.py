"""`specterm pull` as a user runs it: a subprocess against a private, offline Hugging Face cache."""

from __future__ import annotations

import os
import pty
import subprocess
import tomllib

from pull_support import DRAFT_FILE, DRAFT_REPO, MISMATCHED_TOKEN, PAIR, TARGET_FILE, TARGET_REPO, specterm_executable


def cache_pair(sandbox, tiny, *, target=None, draft=None):
    t = sandbox.cache.put(TARGET_REPO, TARGET_FILE, target or tiny.good)
    d = sandbox.cache.put(DRAFT_REPO, DRAFT_FILE, draft or tiny.good)
    return t, d


def test_pull_resolves_both_files_from_the_cache_and_writes_the_config(sandbox, tiny_ggufs):
    target, draft = cache_pair(sandbox, tiny_ggufs)
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 0, r.stderr
    assert f"{TARGET_FILE} is already in the cache" in r.stdout
    assert f"{DRAFT_FILE} is already in the cache" in r.stdout
    assert "pairing check" in r.stdout
    assert f"+target = \"{target}\"" in r.stdout  # the diff is shown before writing
    config = tomllib.loads(sandbox.user_config.read_text())
    assert config["model"] == {"target": str(target), "draft": str(draft)}
    assert os.path.realpath(config["model"]["target"]).startswith(str(sandbox.cache.hub))


def test_pull_follows_refs_main_to_the_newest_snapshot(sandbox, tiny_ggufs):
    sandbox.cache.put(TARGET_REPO, TARGET_FILE, tiny_ggufs.corrupt, revision="1" * 40)
    newest = sandbox.cache.put(TARGET_REPO, TARGET_FILE, tiny_ggufs.good, revision="2" * 40)
    sandbox.cache.put(DRAFT_REPO, DRAFT_FILE, tiny_ggufs.good)
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 0, r.stderr
    assert tomllib.loads(sandbox.user_config.read_text())["model"]["target"] == str(newest)


def test_pull_keeps_the_users_comments_and_other_keys(sandbox, tiny_ggufs):
    target, draft = cache_pair(sandbox, tiny_ggufs)
    sandbox.user_config.parent.mkdir(parents=True)
    sandbox.user_config.write_text(
        "# my settings\n[model]\nctx = 8192  # long files\ndraft = \"lookup\"  # was lookup\n\n"
        "[ui]\ntheme = \"nord\"\n")
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 0, r.stderr
    text = sandbox.user_config.read_text()
    assert "# my settings" in text and "ctx = 8192  # long files" in text
    assert f'draft = "{draft}"  # was lookup' in text
    assert tomllib.loads(text)["ui"] == {"theme": "nord"}
    assert '-draft = "lookup"  # was lookup' in r.stdout


def test_without_yes_and_without_a_terminal_nothing_is_written(sandbox, tiny_ggufs):
    cache_pair(sandbox, tiny_ggufs)
    r = sandbox.specterm("pull", PAIR)
    assert r.returncode == 0, r.stderr
    assert "Proposed change" in r.stdout and "Run again with --yes" in r.stdout
    assert not sandbox.user_config.exists()


def _pull_on_a_terminal(sandbox, answer: str) -> subprocess.CompletedProcess:
    master, slave = pty.openpty()
    try:
        os.write(master, answer.encode())
        return subprocess.run([specterm_executable(), "pull", PAIR], stdin=slave,
                              capture_output=True, text=True, env=sandbox.env,
                              cwd=sandbox.root / "work", timeout=120)
    finally:
        os.close(slave)
        os.close(master)


def test_on_a_terminal_pull_asks_first(sandbox, tiny_ggufs):
    target, _ = cache_pair(sandbox, tiny_ggufs)
    r = _pull_on_a_terminal(sandbox, "n\n")
    assert r.returncode == 0, r.stderr
    assert "Write this change to" in r.stdout and "Not written." in r.stdout
    assert not sandbox.user_config.exists()

    r = _pull_on_a_terminal(sandbox, "y\n")
    assert r.returncode == 0, r.stderr
    assert f"Wrote {sandbox.user_config}" in r.stdout
    assert tomllib.loads(sandbox.user_config.read_text())["model"]["target"] == str(target)


def test_pulling_again_changes_nothing(sandbox, tiny_ggufs):
    cache_pair(sandbox, tiny_ggufs)
    assert sandbox.specterm("pull", PAIR, "--yes").returncode == 0
    before = sandbox.user_config.read_text()
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 0 and "already uses this pair" in r.stdout
    assert sandbox.user_config.read_text() == before


def test_config_flag_names_the_file_to_update(sandbox, tiny_ggufs):
    cache_pair(sandbox, tiny_ggufs)
    mine = sandbox.root / "work" / "mine.toml"
    mine.write_text("# project-local pair\n")
    r = sandbox.specterm("--config", str(mine), "pull", PAIR, "--yes")
    assert r.returncode == 0, r.stderr
    assert "# project-local pair" in mine.read_text()
    assert "target" in tomllib.loads(mine.read_text())["model"]
    assert not sandbox.user_config.exists()


def test_a_project_file_that_overrides_the_pair_is_pointed_out(sandbox, tiny_ggufs):
    cache_pair(sandbox, tiny_ggufs)
    (sandbox.root / "work" / ".specterm.toml").write_text('[model]\ndraft = "none"\n')
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 0, r.stderr
    assert "model.draft is also set in" in r.stderr and ".specterm.toml" in r.stderr


def test_no_config_only_downloads_and_verifies(sandbox, tiny_ggufs):
    cache_pair(sandbox, tiny_ggufs)
    r = sandbox.specterm("pull", PAIR, "--no-config")
    assert r.returncode == 0, r.stderr
    assert "Config left unchanged" in r.stdout and not sandbox.user_config.exists()


def test_a_corrupt_download_fails_verification(sandbox, tiny_ggufs):
    cache_pair(sandbox, tiny_ggufs, target=tiny_ggufs.corrupt)
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 2
    assert f"The downloaded target {TARGET_FILE} ({TARGET_REPO}) failed verification" in r.stderr
    assert f"specterm pull {PAIR} --force-download" in r.stderr
    assert "Traceback" not in r.stderr
    assert not sandbox.user_config.exists()


def test_a_file_that_is_not_gguf_fails_verification(sandbox, tiny_ggufs):
    html = sandbox.root / "login.html"
    html.write_text("<html>Please log in</html>" * 10)
    cache_pair(sandbox, tiny_ggufs, draft=html)
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 2
    assert "draft" in r.stderr and "not a GGUF file" in r.stderr
    assert not sandbox.user_config.exists()


def test_an_incompatible_pair_is_refused_with_the_engines_error(sandbox, tiny_ggufs):
    cache_pair(sandbox, tiny_ggufs, draft=tiny_ggufs.mismatched)
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 2
    # the engine's PairingError: names both models and the first differing token
    assert f"disagree on token {MISMATCHED_TOKEN}" in r.stderr
    assert TARGET_FILE in r.stderr and DRAFT_FILE in r.stderr
    assert "Traceback" not in r.stderr
    assert not sandbox.user_config.exists()


def test_offline_with_nothing_cached_is_one_line_and_exit_2(sandbox):
    r = sandbox.specterm("pull", PAIR)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Offline" in lines[0] and TARGET_FILE in lines[0]


def test_offline_with_only_the_target_cached_names_the_draft(sandbox, tiny_ggufs):
    sandbox.cache.put(TARGET_REPO, TARGET_FILE, tiny_ggufs.good)
    r = sandbox.specterm("pull", PAIR)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Offline" in lines[0] and DRAFT_FILE in lines[0]


def test_unknown_name_lists_the_nearest_and_exits_2(sandbox):
    r = sandbox.specterm("pull", "qwen-coder-7b")
    assert r.returncode == 2
    assert "Unknown model 'qwen-coder-7b'" in r.stderr
    assert "Nearest known: qwen2.5-coder-7b" in r.stderr


def test_unknown_quant_lists_the_available_ones(sandbox):
    r = sandbox.specterm("pull", PAIR, "--quant", "Q2_K")
    assert r.returncode == 2
    assert "no Q2_K quantization" in r.stderr and "Q4_K_M" in r.stderr and "Q8_0" in r.stderr


def test_quant_flag_selects_the_file(sandbox, tiny_ggufs):
    q8 = sandbox.cache.put(TARGET_REPO, "Qwen2.5-Coder-7B-Instruct-Q8_0.gguf", tiny_ggufs.good)
    sandbox.cache.put(DRAFT_REPO, DRAFT_FILE, tiny_ggufs.good)
    r = sandbox.specterm("pull", PAIR, "--quant", "q8_0", "--yes")
    assert r.returncode == 0, r.stderr
    assert tomllib.loads(sandbox.user_config.read_text())["model"]["target"] == str(q8)


def test_pull_repairs_a_config_whose_model_file_is_gone(sandbox, tiny_ggufs):
    target, _ = cache_pair(sandbox, tiny_ggufs)
    sandbox.user_config.parent.mkdir(parents=True)
    sandbox.user_config.write_text('[model]\ntarget = "/models/deleted.gguf"\n')
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 0, r.stderr
    assert tomllib.loads(sandbox.user_config.read_text())["model"]["target"] == str(target)


def test_doctor_points_users_of_the_demo_at_pull(sandbox):
    r = sandbox.specterm("doctor")
    assert r.returncode == 0, r.stderr
    assert "DEMO" in r.stdout and "specterm pull qwen2.5-coder-7b" in r.stdout
