"""`specterm models`: the catalogue with cache state and memory, compatible drafts for a target, and
`specterm models derive` (a low-bit copy of the target as its draft)."""

from __future__ import annotations

import json
from pathlib import Path

from pull_support import DRAFT_FILE, DRAFT_REPO, MISMATCHED_TOKEN, PAIR, TARGET_FILE, TARGET_REPO


def test_listing_shows_every_pair_and_what_is_downloaded(sandbox, tiny_ggufs):
    target = sandbox.cache.put(TARGET_REPO, TARGET_FILE, tiny_ggufs.good)
    draft = sandbox.cache.put(DRAFT_REPO, DRAFT_FILE, tiny_ggufs.good)
    other = sandbox.cache.put("someone/Other-GGUF", "other-Q4_K_M.gguf", tiny_ggufs.mismatched)
    r = sandbox.specterm("models", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    pairs = {p["name"]: p for p in data["pairs"]}
    assert len(pairs) == 8
    qwen = pairs[PAIR]
    assert qwen["target"]["downloaded"] and qwen["target"]["path"] == str(target)
    assert qwen["draft"]["downloaded"] and qwen["draft"]["path"] == str(draft)
    assert qwen["target"]["size_bytes"] == tiny_ggufs.good.stat().st_size  # the real file's size
    # the 0.5B draft is shared by every Qwen2.5-Coder pair, so it counts as downloaded for all
    assert pairs["qwen2.5-coder-32b"]["draft"]["downloaded"]
    assert not pairs["qwen2.5-coder-32b"]["target"]["downloaded"]
    llama = pairs["llama-3.1-8b"]
    assert not llama["target"]["downloaded"] and not llama["draft"]["downloaded"]
    assert llama["target"]["size_bytes"] == 4_920_000_000  # the catalogue's figure
    assert [g["path"] for g in data["other_cached"]] == [str(other)]
    assert data["hub_cache"] == str(sandbox.cache.hub)


def test_memory_estimate_follows_the_configured_context(sandbox):
    small = json.loads(sandbox.specterm("models", "--json", "--ctx", "2048").stdout)
    large = json.loads(sandbox.specterm("models", "--json", "--ctx", "16384").stdout)
    for a, b in zip(small["pairs"], large["pairs"]):
        assert a["memory"]["weights_bytes"] == b["memory"]["weights_bytes"]
        assert b["memory"]["kv_cache_bytes"] == 8 * a["memory"]["kv_cache_bytes"]
        assert a["memory"]["fits"] in ("yes", "tight", "no", "gpu")
    # Llama 3.1 8B (32 layers x 8 KV heads x 128) + 3.2 1B (16 x 8 x 64), K and V at f16
    llama = {p["name"]: p for p in small["pairs"]}["llama-3.1-8b"]
    assert llama["memory"]["kv_cache_bytes"] == 2048 * 2 * 2 * (32 * 8 * 128 + 16 * 8 * 64)


def test_human_listing(sandbox, tiny_ggufs):
    sandbox.cache.put(TARGET_REPO, TARGET_FILE, tiny_ggufs.good)
    sandbox.cache.put(DRAFT_REPO, DRAFT_FILE, tiny_ggufs.good)
    r = sandbox.specterm("models")
    assert r.returncode == 0, r.stderr
    lines = {line.split()[0]: line for line in r.stdout.splitlines() if line.strip()}
    assert "target + draft" in lines[PAIR]
    assert "llama-3.3-70b" in lines and "deepseek-coder-33b" in lines
    assert "specterm pull NAME" in r.stdout and "Memory:" in r.stdout


def test_compatible_drafts_for_a_target(sandbox, tiny_ggufs):
    target = sandbox.cache.put(TARGET_REPO, TARGET_FILE, tiny_ggufs.good)
    good = sandbox.cache.put(DRAFT_REPO, DRAFT_FILE, tiny_ggufs.good)
    bad = sandbox.cache.put("someone/Other-GGUF", "other.gguf", tiny_ggufs.mismatched)
    r = sandbox.specterm("models", str(target), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["target"] == str(target)
    drafts = {d["path"]: d for d in data["drafts"]}
    assert set(drafts) == {str(good), str(bad)}  # never the target itself
    assert drafts[str(good)]["compatible"] and drafts[str(good)]["reason"] is None
    assert not drafts[str(bad)]["compatible"]
    assert f"disagree on token {MISMATCHED_TOKEN}" in drafts[str(bad)]["reason"]
    assert data["drafts"][0]["path"] == str(good)  # compatible ones first
    assert drafts[str(good)]["memory_total_bytes"] > tiny_ggufs.good.stat().st_size


def test_drafts_for_a_pulled_pair_by_name_include_the_configured_draft(sandbox, tiny_ggufs):
    target = sandbox.cache.put(TARGET_REPO, TARGET_FILE, tiny_ggufs.good)
    neighbour = sandbox.root / "work" / "mine.gguf"
    neighbour.write_bytes(tiny_ggufs.good.read_bytes())
    r = sandbox.specterm("models", PAIR, "--json", "--draft", str(neighbour))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["target"] == str(target)
    assert [d["path"] for d in data["drafts"]] == [str(neighbour)]
    human = sandbox.specterm("models", PAIR, "--draft", str(neighbour))
    assert human.returncode == 0 and f"--draft {neighbour}" in human.stdout


def test_drafts_for_a_target_with_a_keyword_draft_and_its_gpu_layers_in_the_config(sandbox, tiny_ggufs):
    """[model] draft = "session" has no model to carry draft_gpu_layers; the candidates are still
    checked with them, the keyword is no candidate, and a bad value is named."""
    target = sandbox.cache.put(TARGET_REPO, TARGET_FILE, tiny_ggufs.good)
    good = sandbox.cache.put(DRAFT_REPO, DRAFT_FILE, tiny_ggufs.good)
    sandbox.user_config.parent.mkdir(parents=True, exist_ok=True)
    sandbox.user_config.write_text('[model]\ndraft = "session"\ndraft_gpu_layers = 0\n')
    r = sandbox.specterm("models", str(target), "--json")
    assert r.returncode == 0, r.stderr
    drafts = json.loads(r.stdout)["drafts"]
    assert [(d["path"], d["compatible"]) for d in drafts] == [(str(good), True)]
    assert drafts[0]["memory_total_bytes"] > tiny_ggufs.good.stat().st_size
    sandbox.user_config.write_text('[model]\ndraft = "session"\ndraft_gpu_layers = -3\n')
    bad = sandbox.specterm("models", str(target), "--json")
    assert bad.returncode == 2 and bad.stdout == "" and "Traceback" not in bad.stderr
    assert "draft_gpu_layers" in bad.stderr and len(bad.stderr.strip().splitlines()) <= 2, bad.stderr


def test_drafts_for_a_pair_that_is_not_downloaded(sandbox):
    r = sandbox.specterm("models", "qwen2.5-coder-14b")
    assert r.returncode == 2
    assert "not downloaded" in r.stderr and "specterm pull qwen2.5-coder-14b" in r.stderr


def test_drafts_for_an_unknown_name_or_missing_file(sandbox):
    r = sandbox.specterm("models", "llama-8b")
    assert r.returncode == 2 and "Nearest known: llama-3.1-8b" in r.stderr
    r = sandbox.specterm("models", "/nowhere/model.gguf")
    assert r.returncode == 2 and "/nowhere/model.gguf does not exist" in r.stderr


# --- `specterm models derive`: a low-bit copy of the target as its draft ---------------------------
def test_derive_writes_a_smaller_copy_that_models_lists_as_a_derived_draft(sandbox):
    r = sandbox.specterm("models", "derive", "demo", "--type", "Q4_0", "--json")
    assert r.returncode == 0, r.stderr
    made = json.loads(r.stdout)
    out = Path(made["draft"])
    # the demo lives inside a package: the copy goes to the user's cache, not next to it
    assert out.parent == sandbox.root / "home" / ".cache" / "specterm" / "derived"
    assert out.read_bytes()[:4] == b"GGUF" and made["type"] == "Q4_0"
    assert made["size_bytes"] == out.stat().st_size < made["target_size_bytes"]
    assert not list(out.parent.glob("*.part"))  # written under a temporary name, then renamed
    listed = json.loads(sandbox.specterm("models", "demo", "--json").stdout)
    (row,) = [d for d in listed["drafts"] if d["path"] == str(out)]
    assert row["compatible"] and row["derived_from_target"] and row["smaller_than_target"]
    human = sandbox.specterm("models", "demo")
    assert "derived copy of the target" in human.stdout


def test_derive_to_an_explicit_path_in_human_form(sandbox):
    out = sandbox.root / "work" / "draft.gguf"
    r = sandbox.specterm("models", "derive", "demo", "--type", "q2_k", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.is_file() and f"Wrote {out}" in r.stdout and f"--draft {out}" in r.stdout


def test_derive_bad_input_exits_2_with_what_to_do(sandbox):
    work = sandbox.root / "work"
    notes = work / "notes.gguf"
    notes.write_text("not a model\n")

    def fails(*args: str, needle: str) -> None:
        r = sandbox.specterm("models", "derive", *args)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert needle in r.stderr and "Traceback" not in r.stderr and r.stdout == ""

    fails(str(notes), needle="is not a GGUF file")
    fails("demo", "--type", "Q4_1", needle="would not be smaller than the target (Q4_1")
    fails("demo", "--type", "Q8_0", needle="would not be smaller")
    fails("demo", "--type", "Q9", needle="Unknown type 'Q9'")
    fails("demo", "-o", str(work / "missing" / "d.gguf"), needle="does not exist")
    fails("demo", "-o", str(work), needle="is a folder")
    fails("demo", "-o", str(work / "d.bin"), needle="must end in .gguf")
    fails(needle="name the target")
    fails(str(work / "nope.gguf"), needle="does not exist")
    assert sorted(p.name for p in work.iterdir()) == ["notes.gguf"]  # nothing half-written
    r = sandbox.specterm("models", "demo", "--type", "Q4_0")
    assert r.returncode == 2 and "belong to `specterm models derive" in r.stderr


def test_the_listing_shows_derived_drafts_of_a_downloaded_target(sandbox):
    from specterm.engine.llamacpp.demo import demo_model_path

    target = sandbox.cache.put(TARGET_REPO, TARGET_FILE, Path(demo_model_path()))
    made = sandbox.specterm("models", "derive", str(target), "--type", "Q4_0", "--json")
    assert made.returncode == 0, made.stderr
    draft = json.loads(made.stdout)["draft"]
    assert "/huggingface/hub/" not in draft  # never written into the Hugging Face cache
    data = json.loads(sandbox.specterm("models", "--json").stdout)
    pairs = {p["name"]: p for p in data["pairs"]}
    assert pairs[PAIR]["derived_drafts"] == [draft]
    assert all(p["derived_drafts"] == [] for name, p in pairs.items() if name != PAIR)
    human = sandbox.specterm("models")
    assert f"{PAIR}: {draft}" in human.stdout and "specterm models derive TARGET" in human.stdout
