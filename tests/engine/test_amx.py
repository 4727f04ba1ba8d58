"""The AMX check before a model loads (engine/llamacpp/amx.py): what it reads from the CPU and the
build, the child that tries the kernels, and the verdict it keeps."""

from __future__ import annotations

import json

from specterm.engine.llamacpp import amx
from specterm.engine.llamacpp.demo import demo_model_path
from specterm.engine.llamacpp.model import LlamaModel
from specterm.engine.settings import ModelSettings

SPR = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\nflags\t\t: fpu avx512f amx_bf16 amx_tile amx_int8\n"
EPYC = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512f\n"


def test_only_a_cpu_with_amx_int8_offers_amx():
    assert amx.cpu_offers_amx(SPR)
    assert not amx.cpu_offers_amx(EPYC)
    assert not amx.cpu_offers_amx("flags\t\t: fpu amx_int8x\n")  # a flag, not a substring
    assert not amx.cpu_offers_amx("model name\t: amx_int8\n")  # flags lines only
    assert not amx.cpu_offers_amx("")


def test_a_build_has_amx_when_its_library_carries_the_amx_buffer_type(tmp_path):
    with_amx = tmp_path / "libggml-cpu.so"
    with_amx.write_bytes(b"\x7fELF..._Z28ggml_backend_amx_buffer_typev...")
    without = tmp_path / "libggml-cpu-plain.so"
    without.write_bytes(b"\x7fELF..._Z39ggml_backend_cpu_get_extra_buffer_typesv...")
    assert amx.build_has_amx(with_amx)
    assert not amx.build_has_amx(without)
    assert not amx.build_has_amx(tmp_path / "missing.so")
    assert not amx.build_has_amx(None)


def test_the_probe_learns_nothing_from_a_model_it_cannot_load(tmp_path):
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"GGUF but not really")
    assert amx.probe(str(bad)) is True  # the child exits (no signal): the load itself will say why


def test_the_probe_passes_where_the_build_or_the_cpu_has_no_amx():
    library = amx._ggml_cpu_library()
    if not (amx.cpu_offers_amx(amx._cpuinfo()) and amx.build_has_amx(library)):
        assert amx._verdict_here() is None
        assert amx.extra_buffers_ok(demo_model_path())
    # Either way the verdict is one a model loads and decodes with, here.
    model = LlamaModel.load(ModelSettings(path=demo_model_path(), ctx=256))
    try:
        model.decode([max(model.bos, 0)] * 4, 0, logits_from=0)
    finally:
        model.close()


def test_the_verdict_is_kept_and_a_damaged_one_is_found_again(tmp_path):
    verdict = tmp_path / "cache" / "amx-x.json"
    calls = []

    def find(result: bool):
        def run() -> bool:
            calls.append(result)
            return result
        return run

    assert amx.cached_verdict(verdict, find(False)) is False
    assert json.loads(verdict.read_text()) == {"amx_runs": False}
    assert amx.cached_verdict(verdict, find(True)) is False  # kept: not probed again
    assert calls == [False]
    verdict.write_text("{not json")
    assert amx.cached_verdict(verdict, find(True)) is True
    verdict.write_text(json.dumps({"amx_runs": "yes"}))
    assert amx.cached_verdict(verdict, find(False)) is False
    assert calls == [False, True, False]
