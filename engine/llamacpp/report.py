"""The pair report `specterm doctor` prints: can this target and drafter work together, here?

It reads each GGUF's header and vocabulary only (`LlamaModel.load(..., vocab_only=True)`: no weights are
read, so checking a 32B model takes a second, not a minute), runs the same tokenizer check
generation runs (`pairing.check_pair`), and estimates memory from the header: weights (the file
size) plus the KV cache both models allocate at the configured context and KV type.

Shape figures come from GGUF metadata (`<arch>.block_count`, ...), not from llama.cpp's model
accessors, because a vocab-only model has no hyper-parameters loaded and some accessors abort the
process on it. Problems (the pair cannot work) and warnings (it works, but slower or worse than it
could) are sentences a user can act on.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import EngineError, PairingError
from ..settings import EngineSettings, ModelSettings
from .memory import model_kv_cache_bytes, system_ram

if TYPE_CHECKING:
    from .model import LlamaModel


@dataclass(frozen=True)
class ModelReport:
    """What doctor knows about one GGUF without loading its weights."""

    role: str  # "target" | "draft"
    path: str
    file_name: str
    name: str  # general.name from the file, else the file name
    arch: str
    n_params: int
    file_bytes: int
    n_layer: int
    n_ctx_train: int
    vocab_type: str
    vocab_size: int
    fim: bool  # has fill-in-the-middle tokens
    chat_template: bool
    gpu_layers_requested: int  # -1: all
    gpu_layers_offloaded: int  # of n_layer + 1 (llama.cpp counts the output layer)
    kv_cache_bytes: int  # at the configured context and KV type

    @property
    def layers_total(self) -> int:
        return self.n_layer + 1


@dataclass(frozen=True)
class MemoryEstimate:
    """Weights plus KV caches of both models; llama.cpp adds compute buffers on top (~100s of MiB)."""

    weights_bytes: int
    kv_cache_bytes: int
    gpu_bytes: int  # the part that lands in GPU memory, from the offloaded layer share
    system_ram_bytes: int | None  # physical RAM of this machine, when the OS tells

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes

    @property
    def host_bytes(self) -> int:
        return self.total_bytes - self.gpu_bytes


@dataclass
class PairReport:
    target: ModelReport | None
    draft: ModelReport | None
    draft_kind: str  # "model" | "lookup" | "none"
    demo: bool
    gpu_offload_supported: bool
    ctx: int
    kv_type: str
    vocab_compatible: bool | None  # None when there is no draft model to compare
    memory: MemoryEstimate | None
    # The draft holds the target's own model in a lower-bit type (`specterm models derive`):
    # same vocabulary by construction. None when there is no draft model to compare.
    derived_draft: bool | None = None
    draft_problem: str | None = None  # why the configured draft file could not be read
    problems: list[str] = field(default_factory=list)  # the pair cannot work
    warnings: list[str] = field(default_factory=list)  # it works, but could do better

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ok"] = self.ok
        if self.memory is not None:
            out["memory"]["total_bytes"] = self.memory.total_bytes
            out["memory"]["host_bytes"] = self.memory.host_bytes
        return out


def build_report(settings: EngineSettings, *, demo: bool | None = None) -> PairReport:
    """Inspect the configured pair. Never raises for a bad model: failures become `problems`."""
    from .amx import extra_buffers_ok
    from .model import gpu_offload_supported, set_verbose  # deferred: importing llama.cpp takes a moment

    set_verbose(settings.verbose)
    gpu = gpu_offload_supported()
    problems: list[str] = []
    warnings: list[str] = []
    is_demo = demo if demo is not None else _is_demo(settings.target)
    target_model = None
    try:
        from .demo import model_file

        target_model = _load(replace(settings.target, path=model_file(settings.target)), "target", problems)
    except EngineError as err:  # the demo's package is missing
        problems.append(str(err))
    draft_model = None
    draft_problem: str | None = None
    if settings.draft.kind == "model":
        if settings.draft.model is None:
            problems.append("The drafter is a model but no draft file is configured ([model] draft).")
        else:
            draft_model = _load(settings.draft.model, "draft model", problems)
            draft_problem = problems[-1] if draft_model is None else None

    try:
        target = _describe(target_model, "target", settings.target, gpu) if target_model else None
        draft = (
            _describe(draft_model, "draft", settings.draft.model, gpu)
            if draft_model and settings.draft.model
            else None
        )
        vocab_compatible: bool | None = None
        derived: bool | None = None
        if target_model is not None and draft_model is not None:
            from .derive import is_derived_pair

            derived = is_derived_pair(target_model.path, draft_model.path)
            from .pairing import check_pair

            try:
                check_pair(target_model, draft_model)
                vocab_compatible = True
            except PairingError as err:
                vocab_compatible = False
                problems.append(str(err))
        if target_model is not None and not extra_buffers_ok(target_model.path):
            warnings.append(
                "llama.cpp's AMX kernels in this llama-cpp-python build crash on this CPU: models load "
                "without its extra buffer types (AMX, weight repacking), which may be slower here.")
    finally:
        for m in (target_model, draft_model):
            if m is not None:
                m.close()

    ctx = settings.target.ctx
    memory = _memory([r for r in (target, draft) if r is not None])
    _warn(settings, target, draft, gpu, is_demo, memory, warnings, problems)
    return PairReport(
        target=target,
        draft=draft,
        draft_kind=settings.draft.kind,
        demo=is_demo,
        gpu_offload_supported=gpu,
        ctx=ctx,
        kv_type=settings.target.kv_type,
        vocab_compatible=vocab_compatible,
        memory=memory,
        derived_draft=derived,
        draft_problem=draft_problem,
        problems=problems,
        warnings=warnings,
    )


def _is_demo(target: ModelSettings) -> bool:
    """The demo as configured, or the demo's file named by its path."""
    if target.demo:
        return True
    try:
        from .demo import demo_model_path

        return os.path.abspath(target.path) == os.path.abspath(demo_model_path())
    except EngineError:
        return False


def _load(settings: ModelSettings, what: str, problems: list[str]) -> LlamaModel | None:
    from .model import LlamaModel

    try:
        return LlamaModel.load(settings, vocab_only=True, what=what)
    except EngineError as err:
        problems.append(str(err))
        return None


def _describe(model: LlamaModel, role: str, settings: ModelSettings, gpu: bool) -> ModelReport:
    n_layer = model.n_layer
    n_ctx_train = model.n_ctx_train
    ctx = settings.ctx if settings.ctx > 0 else n_ctx_train
    offloaded = model.gpu_layers if gpu else 0
    return ModelReport(
        role=role,
        path=model.path,
        file_name=model.name,
        name=model.meta("general.name") or model.name,
        arch=model.arch,
        n_params=model.n_params,
        file_bytes=model.file_size,
        n_layer=n_layer,
        n_ctx_train=n_ctx_train,
        vocab_type=model.vocab_type,
        vocab_size=model.vocab_size,
        fim=model.fim is not None,
        chat_template=bool(model.chat_template),
        gpu_layers_requested=settings.gpu_layers,
        gpu_layers_offloaded=offloaded,
        kv_cache_bytes=model_kv_cache_bytes(model, ctx, settings.kv_type),
    )


def _memory(models: list[ModelReport]) -> MemoryEstimate | None:
    if not models:
        return None
    gpu = 0
    for m in models:
        share = m.gpu_layers_offloaded / m.layers_total if m.layers_total else 0.0
        kv_share = min(m.gpu_layers_offloaded, m.n_layer) / m.n_layer if m.n_layer else 0.0
        gpu += int(m.file_bytes * share + m.kv_cache_bytes * kv_share)
    return MemoryEstimate(
        weights_bytes=sum(m.file_bytes for m in models),
        kv_cache_bytes=sum(m.kv_cache_bytes for m in models),
        gpu_bytes=gpu,
        system_ram_bytes=system_ram(),
    )


def _warn(
    settings: EngineSettings,
    target: ModelReport | None,
    draft: ModelReport | None,
    gpu: bool,
    demo: bool,
    memory: MemoryEstimate | None,
    warnings: list[str],
    problems: list[str],
) -> None:
    """Everything doctor can say about the pair beyond 'it loads'."""
    if target is not None:
        if target.n_ctx_train and settings.target.ctx > target.n_ctx_train:
            warnings.append(
                f"[model] ctx = {settings.target.ctx} exceeds the {target.n_ctx_train} tokens "
                f"{target.file_name} was trained on; output degrades past that. Lower ctx."
            )
        if not target.fim:
            warnings.append(
                f"{target.file_name} has no fill-in-the-middle tokens: inline completions see only "
                "the text before the cursor. Use a code model with FIM (e.g. Qwen2.5-Coder)."
            )
        if not target.chat_template:
            warnings.append(
                f"{target.file_name} has no chat template: the chat pane falls back to a plain prompt."
            )
    if draft is not None and target is not None and draft.file_bytes >= target.file_bytes:
        warnings.append(
            f"The draft {draft.file_name} is not smaller than the target {target.file_name}: "
            "drafting cannot pay. Use a much smaller model of the same family."
        )
    requested_gpu = settings.target.gpu_layers != 0 or (
        settings.draft.model is not None and settings.draft.model.gpu_layers != 0
    )
    if not gpu and requested_gpu and target is not None and not demo:
        warnings.append(
            "This llama.cpp build cannot offload to a GPU, so everything runs on the CPU. For CUDA "
            "reinstall with CMAKE_ARGS=\"-DGGML_CUDA=on\" pip install --force-reinstall "
            "--no-cache-dir llama-cpp-python==0.3.36 (Metal is on by default on Apple silicon)."
        )
    if gpu and target is not None and draft is not None:
        if target.gpu_layers_offloaded > 0 and draft.gpu_layers_offloaded == 0:
            warnings.append(
                "The target runs on the GPU but the draft on the CPU ([model] draft_gpu_layers = 0): "
                "drafting will be slow. Offload the draft too (draft_gpu_layers = -1)."
            )
    if memory is not None and memory.system_ram_bytes:
        host = memory.host_bytes
        if host > memory.system_ram_bytes:
            problems.append(
                f"The pair needs about {_gib(host)} of RAM (weights and KV cache at ctx "
                f"{settings.target.ctx}) but this machine has {_gib(memory.system_ram_bytes)}. "
                "Lower [model] ctx, use kv_type = \"q8_0\", a smaller quantization, or offload "
                "more layers to a GPU."
            )
        elif host > 0.8 * memory.system_ram_bytes:
            warnings.append(
                f"The pair needs about {_gib(host)} of this machine's {_gib(memory.system_ram_bytes)} "
                "of RAM; other programs may push it into swap."
            )


def _gib(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB"

