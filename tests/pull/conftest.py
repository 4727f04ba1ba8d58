"""Fixtures for `specterm pull` / `specterm models`: a private Hugging Face cache, never the network.

Each test gets its own HF_HOME (with HF_HUB_OFFLINE=1 unless a test starts the local fake Hub) and
XDG_CONFIG_HOME; the tiny GGUFs are built once per session.
"""

from __future__ import annotations

import os

import pytest

from pull_support import MISMATCHED_TOKEN, HubCache, Sandbox, TinyGGUFs, write_vocab_gguf


@pytest.fixture(scope="session")
def tiny_ggufs(tmp_path_factory) -> TinyGGUFs:
    import gguf

    from specterm.engine.llamacpp.demo import demo_model_path

    folder = tmp_path_factory.mktemp("tiny-ggufs")
    reader = gguf.GGUFReader(demo_model_path())
    good = write_vocab_gguf(reader, folder / "good.gguf", name="tiny-good")
    mismatched = write_vocab_gguf(reader, folder / "mismatched.gguf", name="tiny-mismatched",
                                  change_token=(MISMATCHED_TOKEN, "specterm-not-a-token"))
    corrupt = folder / "corrupt.gguf"
    data = good.read_bytes()
    corrupt.write_bytes(data[: len(data) // 2])
    return TinyGGUFs(good=good, mismatched=mismatched, corrupt=corrupt)


@pytest.fixture
def sandbox(tmp_path) -> Sandbox:
    (tmp_path / "work").mkdir()
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "HUGGINGFACE_", "XDG_", "SPECTERM"))}
    env.update({
        "HOME": str(tmp_path / "home"),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",  # belt and braces: no test may reach the network
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "NO_COLOR": "1",
    })
    return Sandbox(root=tmp_path, cache=HubCache(tmp_path / "hf"), env=env)
