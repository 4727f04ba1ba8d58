"""Extra context (the ring's chunks) in the FIM prompt, in the model's own repo/file tokens where it
has them, and prewarming it into the KV cache while idle (real llama.cpp, the demo model)."""

from __future__ import annotations

import gguf
import pytest

from specterm.engine import CompletionRequest, ContextFile, ModelSettings
from specterm.engine.llamacpp.fim_prompt import SNIPPET, build_fim_prompt
from specterm.engine.llamacpp.model import LlamaModel

from ggufs import FIM_MID, FIM_PAD, FIM_PRE, FIM_SUF, copy_gguf

FIM_REP, FIM_SEP = 8, 9

CHUNKS = (
    ContextFile("/p/geometry.py", "def circle_area(r):\n    return 3.14159 * r * r\n"),
    ContextFile("/p/units.py", "METRES_PER_FOOT = 0.3048\n\ndef feet(m):\n    return m / METRES_PER_FOOT\n"),
)
REQUEST = CompletionRequest(prefix="from geometry import circle_area\n\nprint(circle_area(",
                            suffix="))\n", path="/p/main.py", context_files=CHUNKS, max_tokens=8)


@pytest.fixture(scope="module")
def repo_model(models, tmp_path_factory) -> str:
    """The FIM copy of the demo model with repo-name and file-separator tokens, as Qwen2.5-Coder has."""
    u32 = gguf.GGUFValueType.UINT32
    return str(copy_gguf(models.fim, tmp_path_factory.mktemp("repo") / "repo.gguf", overrides={
        "tokenizer.ggml.fim_pre_token_id": (FIM_PRE, u32),
        "tokenizer.ggml.fim_suf_token_id": (FIM_SUF, u32),
        "tokenizer.ggml.fim_mid_token_id": (FIM_MID, u32),
        "tokenizer.ggml.fim_pad_token_id": (FIM_PAD, u32),
        "tokenizer.ggml.fim_rep_token_id": (FIM_REP, u32),
        "tokenizer.ggml.fim_sep_token_id": (FIM_SEP, u32),
    }))


def test_chunks_go_before_the_prefix_between_the_models_file_separators(repo_model):
    m = LlamaModel.load(ModelSettings(path=repo_model, ctx=1024))
    try:
        assert (m.fim.rep, m.fim.sep) == (FIM_REP, FIM_SEP)
        fp = build_fim_prompt(m, REQUEST, 8)
        toks = fp.tokens
        pre = toks.index(FIM_PRE)
        assert FIM_REP in toks[:pre] and toks[:pre].count(FIM_SEP) == len(CHUNKS) + 1  # + the file's own
        head = m.detokenize(toks[:pre])
        for chunk in CHUNKS:
            assert f"{chunk.path}\n{chunk.text}" in head
        assert head.rstrip().endswith("/p/main.py")
        assert pre < fp.warm < len(toks)  # a prewarm covers the chunks and most of the prefix
    finally:
        m.close()


def test_without_separator_tokens_chunks_are_snippets_as_llama_cpp_writes_them(models):
    m = LlamaModel.load(ModelSettings(path=models.fim, ctx=1024))
    try:
        assert m.fim is not None and m.fim.sep < 0
        toks = build_fim_prompt(m, REQUEST, 8).tokens
        head = m.detokenize(toks[: toks.index(FIM_PRE)])
        assert head.count(SNIPPET.strip()) == len(CHUNKS) + 1
        assert all(chunk.text in head for chunk in CHUNKS)
    finally:
        m.close()


def test_prewarm_makes_the_next_request_decode_only_the_rest(repo_model, engine_factory):
    eng = engine_factory(repo_model, "lookup", draft_max=4)
    cold = eng.run(REQUEST).stats
    assert cold.prompt_tokens_decoded == cold.prompt_tokens  # nothing cached before
    eng.decoder.forget()

    read = eng.prewarm_sync(REQUEST)
    warmed = read.prompt_tokens_decoded
    assert warmed > 0 and read.prompt_tokens == cold.prompt_tokens and read.prompt_time_s > 0
    assert eng.prewarm_sync(REQUEST).prompt_tokens_decoded == 0  # a second has nothing to do
    stats = eng.run(REQUEST).stats
    assert stats.prompt_tokens == cold.prompt_tokens
    assert stats.prompt_tokens_decoded == cold.prompt_tokens - warmed
    assert stats.prompt_tokens_decoded <= 20  # the prefix's end, the suffix and the FIM tokens

    # Typing on changes only the end: the chunks stay cached.
    typed = CompletionRequest(**{**REQUEST.__dict__, "prefix": REQUEST.prefix + "2.0"})
    after = eng.run(typed).stats
    assert after.prompt_tokens_decoded < after.prompt_tokens // 2


def test_a_completion_prompt_stops_between_pieces_and_keeps_what_it_decoded(models, engine_factory):
    from specterm.engine.llamacpp.local import PREFILL_PIECE

    eng = engine_factory(models.fim, "none")
    long = CompletionRequest(prefix="".join(f"value_{i} = {i} * 2\n" for i in range(120)), suffix="\n",
                             max_tokens=8)
    stopped = eng.run(long, cancelled=lambda: "superseded")
    assert stopped.reason == "superseded" and stopped.text == "" and stopped.stats.tokens == 0
    assert len(eng.decoder.cached) == PREFILL_PIECE  # one piece decoded, and the cache says so
    whole = eng.run(long).stats
    assert whole.prompt_tokens > 3 * PREFILL_PIECE
    assert whole.prompt_tokens_decoded == whole.prompt_tokens - PREFILL_PIECE  # that piece reused
