"""The packaged catalogue: the pairs the issue promises, well-formed entries, and name lookup."""

from __future__ import annotations

import pytest

from specterm.engine.models.catalogue import CatalogueError, load_catalogue, nearest

REQUIRED_PAIRS = {
    "qwen2.5-coder-1.5b": "qwen2.5-coder-0.5b",
    "qwen2.5-coder-7b": "qwen2.5-coder-0.5b",
    "qwen2.5-coder-14b": "qwen2.5-coder-0.5b",
    "qwen2.5-coder-32b": "qwen2.5-coder-0.5b",
    "llama-3.1-8b": "llama-3.2-1b",
    "llama-3.3-70b": "llama-3.2-1b",
    "deepseek-coder-6.7b": "deepseek-coder-1.3b",
    "deepseek-coder-33b": "deepseek-coder-1.3b",
}


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def test_catalogue_has_the_promised_pairs(catalogue):
    pairs = {p.slug: p.draft.slug for p in catalogue.pairs}
    assert pairs == REQUIRED_PAIRS


@pytest.mark.parametrize("slug", sorted(REQUIRED_PAIRS))
def test_every_entry_is_complete(catalogue, slug):
    pair = catalogue.pair(slug)
    for model in (pair.target, pair.draft):
        assert model.slug == model.slug.lower()
        assert "/" in model.repo and model.context >= 16384
        assert model.layers > 0 and model.kv_heads > 0 and model.head_dim in (64, 128)
        assert model.default_quant in model.quants
        for quant, mf in model.quants.items():
            assert mf.file.endswith(".gguf") and mf.repo == model.repo and mf.quant == quant
            assert quant.upper().replace("_", "") in mf.file.upper().replace("_", "")
            assert mf.size_bytes > 100_000_000
    # a draft that is not much smaller than its target cannot pay for itself
    assert pair.draft.file().size_bytes * 2 < pair.target.file().size_bytes


def test_names_are_case_and_separator_insensitive(catalogue):
    assert catalogue.pair("Qwen2.5-Coder-7B").slug == "qwen2.5-coder-7b"
    assert catalogue.pair("llama_3.1_8b").slug == "llama-3.1-8b"


def test_quant_lookup(catalogue):
    target = catalogue.pair("qwen2.5-coder-7b").target
    assert target.file().quant == "Q4_K_M"
    assert target.file("q8_0").file == "Qwen2.5-Coder-7B-Instruct-Q8_0.gguf"
    with pytest.raises(CatalogueError) as err:
        target.file("Q2_K")
    assert "no Q2_K quantization" in err.value.message
    assert "Q4_K_M" in err.value.hint and "Q8_0" in err.value.hint


@pytest.mark.parametrize(
    "typo, expected",
    [("qwen-7b", "qwen2.5-coder-7b"), ("qwen2.5-coder-8b", "qwen2.5-coder-7b"),
     ("lama-3.1-8b", "llama-3.1-8b"), ("deepseek", "deepseek-coder-6.7b")],
)
def test_unknown_names_suggest_the_nearest(catalogue, typo, expected):
    with pytest.raises(CatalogueError) as err:
        catalogue.pair(typo)
    assert f"Unknown model {typo!r}" in err.value.message
    assert expected in err.value.message.split("Nearest known:")[1]


def test_a_name_like_nothing_lists_every_pair(catalogue):
    with pytest.raises(CatalogueError) as err:
        catalogue.pair("xyz")
    assert all(slug in err.value.message for slug in REQUIRED_PAIRS)


def test_a_draft_name_points_at_its_targets(catalogue):
    with pytest.raises(CatalogueError) as err:
        catalogue.pair("llama-3.2-1b")
    assert "is a draft model" in err.value.message
    assert "llama-3.1-8b" in err.value.message and "llama-3.3-70b" in err.value.message


def test_nearest_returns_nothing_for_noise():
    assert nearest("zzzz", ["qwen2.5-coder-7b", "llama-3.1-8b"]) == []


def test_malformed_catalogue_names_file_and_key(tmp_path):
    bad = tmp_path / "cat.toml"
    bad.write_text('[models."a-1b"]\nname = "A"\nrepo = "o/r"\ncontext = 4096\nlayers = 2\n'
                   'kv_heads = 1\nhead_dim = 64\ndefault_quant = "Q8_0"\ndraft = "missing-0.1b"\n'
                   '[models."a-1b".quants]\nQ8_0 = { file = "a.gguf", size_mb = 10 }\n')
    with pytest.raises(CatalogueError) as err:
        load_catalogue(bad)
    assert str(bad) in err.value.message and "missing-0.1b" in err.value.message

    bad.write_text('[models."a-1b"]\nname = "A"\nrepo = "o/r"\ncontext = "long"\n'
                   'default_quant = "Q8_0"\n[models."a-1b".quants]\n'
                   'Q8_0 = { file = "a.gguf", size_mb = 10 }\n')
    with pytest.raises(CatalogueError) as err:
        load_catalogue(bad)
    assert "key 'context' must be an integer, got 'long'" in err.value.message

    bad.write_text("[models\n")
    with pytest.raises(CatalogueError) as err:
        load_catalogue(bad)
    assert "not valid TOML" in err.value.message
