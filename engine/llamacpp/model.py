"""The one place that talks to llama.cpp.

`LlamaModel` wraps a llama.cpp model and its single context: loading with checks done on the Python side
before llama.cpp could abort the process, tokenization, batched decoding into a batch buffer that is
allocated once, logits read as numpy views of llama.cpp's own memory, and KV-cache trimming.
Everything above this module works with plain token ids and numpy arrays.
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
import time
from collections import deque
from pathlib import Path

import llama_cpp as lc
import numpy as np

from ..errors import ContextOverflowError, ModelLoadError
from ..model import FimTokens
from ..settings import ModelSettings
from ..token_tree import TokenTree
from .amx import extra_buffers_ok

GGUF_MAGIC = b"GGUF"
_KV_TYPES = {"f16": lc.GGML_TYPE_F16, "q8_0": lc.GGML_TYPE_Q8_0, "q4_0": lc.GGML_TYPE_Q4_0}
VOCAB_TYPE_NAMES = {
    lc.LLAMA_VOCAB_TYPE_NONE: "none",
    lc.LLAMA_VOCAB_TYPE_SPM: "spm",
    lc.LLAMA_VOCAB_TYPE_BPE: "bpe",
    lc.LLAMA_VOCAB_TYPE_WPM: "wpm",
    lc.LLAMA_VOCAB_TYPE_UGM: "ugm",
    lc.LLAMA_VOCAB_TYPE_RWKV: "rwkv",
}

# --- logging and backend -----------------------------------------------------------------------
_log_lock = threading.Lock()
_recent_log: deque[str] = deque(maxlen=40)
_verbose = False
_backend_ready = False


@lc.llama_log_callback
def _log_callback(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
    """Keep llama.cpp quiet unless asked; remember recent lines so errors can quote them."""
    msg = text.decode("utf-8", errors="replace")
    with _log_lock:
        _recent_log.append(msg)
    if _verbose:
        os.write(2, text)


def set_verbose(verbose: bool) -> None:
    global _verbose
    _verbose = verbose


def _init_backend() -> None:
    global _backend_ready
    if not _backend_ready:
        lc.llama_log_set(_log_callback, ctypes.c_void_p(0))
        lc.llama_backend_init()
        _backend_ready = True


def _recent_errors() -> str:
    """The last few llama.cpp log lines that look like errors, for a user-facing message."""
    with _log_lock:
        lines = [line.strip() for line in _recent_log if line.strip()]
        _recent_log.clear()
    hits = []
    for ln in lines:
        low = ln.lower()
        if "error" in low:
            hits.append(ln.split("error loading model:", 1)[-1].strip())
    return "; ".join(dict.fromkeys(hits[-3:]))


# Batch sizes decoded once at load on a GPU (see LlamaModel._warm_up): every verify pass up to 16
# drafted tokens, and the larger shapes of prompt pieces and draft catch-ups.
GPU_WARM_SIZES = tuple(range(1, 18)) + (32, 64, 128, 256, 512)

# Sequence ids of the context: one per root-to-leaf path of a draft tree (Model.decode_tree).
# The KV cache is unified (one buffer of n_ctx cells for all of them), so its size is what one
# sequence has: a cell of a shared token carries the ids of every path through it.
TREE_PATHS_MAX = 8


def gpu_offload_supported() -> bool:
    """True when this llama.cpp build has a GPU backend (CUDA, Metal, Vulkan, ...)."""
    _init_backend()
    return bool(lc.llama_supports_gpu_offload())


# --- file checks before llama.cpp sees the file --------------------------------------------------
def check_gguf_file(path: str, *, what: str = "model") -> None:
    """Fail with an actionable message for a missing, non-GGUF or obviously truncated file.

    llama.cpp reports these cases only in its log and returns NULL; some truncations make it read
    past the end. Checking the header here gives the user a clear sentence instead.
    """
    p = Path(path)
    if not p.exists():
        raise ModelLoadError(
            f"The {what} file {path} does not exist.",
            hint="Check the path in your config or on the command line (`specterm doctor` shows both).",
        )
    if p.is_dir():
        raise ModelLoadError(f"The {what} path {path} is a directory, not a GGUF file.",
                             hint="Point it at a .gguf file inside that directory.")
    try:
        with p.open("rb") as fh:
            head = fh.read(24)
    except OSError as exc:
        raise ModelLoadError(f"Cannot read the {what} file {path}: {exc.strerror}.") from None
    if len(head) < 24 or head[:4] != GGUF_MAGIC:
        raise ModelLoadError(
            f"The {what} file {path} is not a GGUF file (it does not start with the GGUF magic bytes).",
            hint="specterm loads llama.cpp GGUF models; convert other formats with llama.cpp's "
            "convert_hf_to_gguf.py or download a .gguf build of the model.",
        )
    version, n_tensors, n_kv = struct.unpack("<IQQ", head[4:24])
    if version not in (2, 3) or n_kv > 1_000_000 or n_tensors > 10_000_000:
        raise ModelLoadError(
            f"The {what} file {path} has a damaged GGUF header (version {version}).",
            hint="Download the file again; it is corrupt or truncated.",
        )


class LlamaModel:
    """A loaded GGUF model plus one llama.cpp context (not thread-safe: one owner thread)."""

    # Set by load(); n_ctx and n_batch only when the model has a context (not vocab_only).
    settings: ModelSettings
    path: str
    name: str
    vocab_only: bool
    vocab_size: int
    n_ctx: int
    n_batch: int

    def __init__(self) -> None:  # use LlamaModel.load()
        self._model: lc.llama_model_p | None = None
        self._ctx: lc.llama_context_p | None = None
        self._batch: lc.llama_batch | None = None
        self._vocab: lc.llama_vocab_p | None = None
        self._mem: lc.llama_memory_t | None = None
        self._pieces: list[bytes] | None = None
        self._pad = 0  # padding rows of the last decode (see decode's pad_to)
        self._tree: tuple[TokenTree, int, list[list[int]]] | None = None  # last decode_tree's tree, start_pos, paths
        self.device_s = 0.0  # in llama_decode and its synchronize (the Model protocol)
        self._closed = True
        # reused by adopt_cache (allocating it each time costs more than the copy)
        self._state_buf: np.ndarray | None = None

    # -- loading ---------------------------------------------------------------------------------
    @classmethod
    def load(cls, settings: ModelSettings, *, vocab_only: bool = False, what: str = "model") -> "LlamaModel":
        _init_backend()
        path = str(Path(settings.path).expanduser())
        check_gguf_file(path, what=what)
        self = cls()
        self.settings = settings
        self.path = path
        self.name = Path(path).name
        self.vocab_only = vocab_only

        mparams = lc.llama_model_default_params()
        mparams.n_gpu_layers = settings.gpu_layers if settings.gpu_layers >= 0 else 999
        mparams.use_mmap = settings.mmap
        mparams.use_mlock = settings.mlock
        mparams.vocab_only = vocab_only
        if not vocab_only and not extra_buffers_ok(str(path)):
            mparams.use_extra_bufts = False  # this build's AMX kernels crash here (engine/llamacpp/amx.py)
        _recent_errors()  # forget old log lines
        model = lc.llama_model_load_from_file(path.encode(), mparams)
        if not model:
            detail = _recent_errors()
            raise ModelLoadError(
                f"llama.cpp could not load the {what} {path}" + (f": {detail}" if detail else "."),
                hint="The file may be truncated, or its architecture may be unsupported by this "
                "llama.cpp build (llama-cpp-python 0.3.36). Re-download it, or pick another GGUF.",
            )
        self._model = model
        self._closed = False
        self._vocab = lc.llama_model_get_vocab(model)
        self.vocab_size = lc.llama_vocab_n_tokens(self._vocab)
        if vocab_only:
            return self

        cparams = lc.llama_context_default_params()
        n_ctx = settings.ctx if settings.ctx > 0 else lc.llama_model_n_ctx_train(model)
        self._check_memory(n_ctx)
        cparams.n_ctx = n_ctx
        cparams.n_batch = min(settings.batch, n_ctx)
        cparams.n_ubatch = min(settings.ubatch, cparams.n_batch)
        cparams.n_seq_max = TREE_PATHS_MAX
        cparams.kv_unified = True
        cparams.n_threads, cparams.n_threads_batch = settings.thread_counts()
        cparams.flash_attn_type = 1 if settings.flash_attn else 0
        kv = _KV_TYPES.get(settings.kv_type)
        if kv is None:
            self.close()
            raise ModelLoadError(
                f"Unknown KV cache type {settings.kv_type!r} for {self.name}.",
                hint=f"Use one of: {', '.join(_KV_TYPES)}.",
            )
        cparams.type_k = kv
        cparams.type_v = kv
        cparams.no_perf = True
        ctx = lc.llama_init_from_model(model, cparams)
        if not ctx:
            detail = _recent_errors()
            self.close()
            raise ModelLoadError(
                f"llama.cpp could not create a context of {n_ctx} tokens for {path}"
                + (f": {detail}" if detail else "."),
                hint="The model and its KV cache may not fit in memory: lower [model] ctx, use a "
                "smaller quantization, or offload fewer layers.",
            )
        self._ctx = ctx
        self.n_ctx = lc.llama_n_ctx(ctx)
        self.n_batch = lc.llama_n_batch(ctx)
        self._mem = lc.llama_get_memory(ctx)
        self._batch = lc.llama_batch_init(self.n_batch, 0, TREE_PATHS_MAX)
        self._warm_up()
        return self

    def _warm_up(self) -> None:
        """Throw-away decodes, as llama.cpp's own tools do at load: the first decode pages the
        weights in and allocates the compute buffers, which would otherwise land in the first
        request's timings (and the adaptive policy's first cost samples). On a GPU every
        batch shape a verify pass, a draft or a prompt piece uses is decoded once too: its first
        use loads kernels (CUDA loads them lazily), which costs many times a normal pass; timed
        as what verifying costs, one such pass made drafting look too dear ever to try again."""
        tok = max(self.bos, 0)
        sizes = GPU_WARM_SIZES if self.gpu_layers > 0 else (2,)
        for n in sorted({min(n, self.n_batch, self.n_ctx) for n in sizes}):
            self.decode([tok] * n, 0, logits_from=0)
            self.clear()

    def _check_memory(self, n_ctx: int) -> None:
        """Refuse a KV cache that cannot fit in RAM: llama.cpp would fail or the OS would kill us.
        (Only for the CPU: GPU memory is checked by llama.cpp's own allocation.)"""
        from .memory import model_kv_cache_bytes, system_ram

        if self.gpu_layers > 0:
            return
        ram = system_ram()
        need = model_kv_cache_bytes(self, n_ctx, self.settings.kv_type) + self.file_size
        if ram and need > ram:
            self.close()
            raise ModelLoadError(
                f"{self.name} with a context of {n_ctx} tokens needs about {need / 2**30:.1f} GiB "
                f"(weights and KV cache) but this machine has {ram / 2**30:.1f} GiB of memory.",
                hint="Lower [model] ctx (--ctx), use kv_type = \"q8_0\", or a smaller quantization.",
            )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._batch is not None:
            lc.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx:
            lc.llama_free(self._ctx)
            self._ctx = None
        if self._model:
            lc.llama_model_free(self._model)
            self._model = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    # -- metadata --------------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(4096)
        n = lc.llama_model_meta_val_str(self._model, key.encode(), buf, ctypes.sizeof(buf))
        if n < 0:
            return None
        if n >= ctypes.sizeof(buf):  # long values (chat templates): ask again with room
            buf = ctypes.create_string_buffer(n + 1)
            lc.llama_model_meta_val_str(self._model, key.encode(), buf, n + 1)
        return buf.value.decode("utf-8", errors="replace")

    @property
    def threads(self) -> tuple[int, int]:
        """(one-token decoding, batches) threads of this context, as llama.cpp reports them."""
        return int(lc.llama_n_threads(self._ctx)), int(lc.llama_n_threads_batch(self._ctx))

    def set_threads(self, decode: int, batch: int) -> None:
        """Change the threads of this context from now on (llama_set_n_threads)."""
        lc.llama_set_n_threads(self._ctx, decode, batch)

    @property
    def arch(self) -> str:
        return self.meta("general.architecture") or "unknown"

    @property
    def n_params(self) -> int:
        return int(lc.llama_model_n_params(self._model))

    @property
    def size_bytes(self) -> int:
        return int(lc.llama_model_size(self._model))

    @property
    def file_size(self) -> int:
        return os.path.getsize(self.path)

    def _hparam(self, key: str, fn) -> int:
        """A hyper-parameter. A vocab-only load has no layers, and llama.cpp aborts the process
        (GGML_ASSERT) when asked for per-layer values then: read the GGUF metadata instead."""
        if self.vocab_only:
            value = self.meta(f"{self.arch}.{key}")
            try:
                return int(value) if value is not None else 0
            except ValueError:
                return 0
        return int(fn(self._model))

    @property
    def n_layer(self) -> int:
        return self._hparam("block_count", lc.llama_model_n_layer)

    @property
    def n_ctx_train(self) -> int:
        return self._hparam("context_length", lc.llama_model_n_ctx_train)

    @property
    def n_embd(self) -> int:
        return self._hparam("embedding_length", lc.llama_model_n_embd)

    @property
    def n_head(self) -> int:
        return self._hparam("attention.head_count", lc.llama_model_n_head)

    @property
    def n_head_kv(self) -> int:
        kv = self._hparam("attention.head_count_kv", lc.llama_model_n_head_kv)
        return kv or self.n_head

    @property
    def gpu_layers(self) -> int:
        """Layers actually offloaded: none without a GPU backend, else min(requested, n_layer + 1)."""
        if not gpu_offload_supported():
            return 0
        req = self.settings.gpu_layers
        total = self.n_layer + 1  # llama.cpp counts the output layer too
        return total if req < 0 else min(req, total)

    @property
    def vocab_type(self) -> str:
        return VOCAB_TYPE_NAMES.get(lc.llama_vocab_type(self._vocab), "unknown")

    @property
    def add_bos(self) -> bool:
        return bool(lc.llama_vocab_get_add_bos(self._vocab))

    @property
    def add_eos(self) -> bool:
        return bool(lc.llama_vocab_get_add_eos(self._vocab))

    @property
    def bos(self) -> int:
        return int(lc.llama_vocab_bos(self._vocab))

    @property
    def eos(self) -> int:
        return int(lc.llama_vocab_eos(self._vocab))

    @property
    def fim(self) -> FimTokens | None:
        v = self._vocab
        pre, suf, mid = lc.llama_vocab_fim_pre(v), lc.llama_vocab_fim_suf(v), lc.llama_vocab_fim_mid(v)
        if min(pre, suf, mid) < 0:
            return None
        return FimTokens(pre, suf, mid, lc.llama_vocab_fim_pad(v), lc.llama_vocab_fim_rep(v),
                         lc.llama_vocab_fim_sep(v))

    @property
    def chat_template(self) -> str | None:
        t = lc.llama_model_chat_template(self._model, None)
        return t.decode("utf-8", errors="replace") if t else None

    # -- vocabulary ------------------------------------------------------------------------------
    def is_eog(self, token: int) -> bool:
        return bool(lc.llama_vocab_is_eog(self._vocab, token))

    def token_text(self, token: int) -> str:
        """The vocabulary's own text for a token id (used by the pairing check)."""
        t = lc.llama_vocab_get_text(self._vocab, token)
        return t.decode("utf-8", errors="replace") if t else ""

    def tokenize(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        data = text.encode("utf-8")
        n_max = len(data) + 8
        buf = (lc.llama_token * n_max)()
        n = lc.llama_tokenize(self._vocab, data, len(data), buf, n_max, add_special, parse_special)
        if n < 0:  # buffer too small: -n is the size needed
            n_max = -n
            buf = (lc.llama_token * n_max)()
            n = lc.llama_tokenize(self._vocab, data, len(data), buf, n_max, add_special, parse_special)
        return list(buf[:n])

    def piece(self, token: int) -> bytes:
        """The bytes a token adds to the text (special tokens render as nothing)."""
        pieces = self._pieces
        if pieces is not None:
            return pieces[token]
        return self._piece_uncached(token)

    def _piece_uncached(self, token: int) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = lc.llama_token_to_piece(self._vocab, token, buf, 64, 0, False)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = lc.llama_token_to_piece(self._vocab, token, buf, -n, 0, False)
        return buf.raw[:n]

    def pieces(self) -> list[bytes]:
        """Every token's bytes, computed once (token healing scans the whole vocabulary)."""
        if self._pieces is None:
            self._pieces = [self._piece_uncached(t) for t in range(self.vocab_size)]
        return self._pieces

    def vocab_fingerprint(self) -> str:
        """A digest of every token's bytes and the special tokens: equal for models whose token
        ids mean the same text (a saved session memory is only read back by such a model)."""
        import hashlib

        h = hashlib.sha256()
        for piece in self.pieces():
            h.update(len(piece).to_bytes(4, "little") + piece)
        h.update(f"{self.vocab_type}:{self.bos}:{self.eos}".encode())
        return h.hexdigest()[:32]

    def detokenize(self, tokens: list[int]) -> str:
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", errors="replace")

    def apply_chat_template(self, messages: list[tuple[str, str]], *, add_assistant: bool = True) -> str:
        """Format a conversation with the model's own template (llama.cpp's built-in renderers)."""
        tmpl = lc.llama_model_chat_template(self._model, None)
        if not tmpl:
            raise ModelLoadError(
                f"{self.name} has no chat template in its GGUF metadata.",
                hint="Use an instruct/chat build of the model for the chat pane.",
            )
        keep = [(r.encode(), c.encode()) for r, c in messages]
        arr = (lc.llama_chat_message * len(keep))()
        for i, (r, c) in enumerate(keep):
            arr[i].role = r
            arr[i].content = c
        size = sum(len(c) + len(r) for r, c in keep) * 2 + 256
        buf = ctypes.create_string_buffer(size)
        n = lc.llama_chat_apply_template(tmpl, arr, len(keep), add_assistant, buf, size)
        if n > size:
            buf = ctypes.create_string_buffer(n)
            n = lc.llama_chat_apply_template(tmpl, arr, len(keep), add_assistant, buf, n)
        if n < 0:
            raise ModelLoadError(
                f"llama.cpp does not know the chat template of {self.name}.",
                hint="Pick a model whose template llama.cpp supports (ChatML, Llama 3, Gemma, ...).",
            )
        return buf.raw[:n].decode("utf-8", errors="replace")

    # -- decoding --------------------------------------------------------------------------------
    def decode(self, tokens: list[int], start_pos: int, *, logits_from: int | None = None,
               pad_to: int = 0) -> None:
        """Decode `tokens` at positions start_pos.. into the KV cache (sequence 0).

        Logits are requested for tokens at index >= logits_from (default: only the last one).
        The batch must fit `n_batch` and the context: checked here, because llama.cpp aborts the
        whole process (GGML_ASSERT) when it does not.

        `pad_to`: make the batch this many rows (copies of the last token after it, logits for
        them too), so that passes of different lengths have one shape; `logits`/`logits_rows`
        still index the real rows, and the caller trims the padding's KV entries. (On a GPU
        llama.cpp replays a captured CUDA graph only while the shape stays the same.)
        """
        n_real = len(tokens)
        if n_real == 0:
            return
        if pad_to > n_real:
            tokens = list(tokens) + [tokens[-1]] * (pad_to - n_real)
        n = len(tokens)
        self._check_fits(n, start_pos + n)
        if logits_from is None:
            logits_from = n_real - 1
        b = self._batch
        assert b is not None, "decode on a model without a context"
        b.n_tokens = n
        for i, tok in enumerate(tokens):
            b.token[i] = tok
            b.pos[i] = start_pos + i  # type: ignore[call-overload]  # llama_cpp annotates pos as an array of arrays
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if i >= logits_from else 0
        self._pad = n - n_real
        self._tree = None
        self._run_batch(n)

    def _check_fits(self, n: int, end_pos: int) -> None:
        """Refuse a batch over n_batch or past the context: llama.cpp aborts the process on it."""
        if n > self.n_batch:
            raise ContextOverflowError(
                f"Internal: a batch of {n} tokens exceeds n_batch={self.n_batch} for {self.name}."
            )
        if end_pos > self.n_ctx:
            raise ContextOverflowError(
                f"The request needs {end_pos} tokens but the context of {self.name} holds "
                f"{self.n_ctx}.",
                hint="Raise [model] ctx (--ctx), or ask for fewer tokens (--max-tokens).",
            )

    def _run_batch(self, n: int) -> None:
        """llama_decode the filled batch of n rows, timed into device_s."""
        t0 = time.perf_counter()
        rc = lc.llama_decode(self._ctx, self._batch)
        lc.llama_synchronize(self._ctx)  # a GPU's work ends here, not in the logits read after it
        self.device_s += time.perf_counter() - t0
        if rc != 0:
            raise ContextOverflowError(
                f"llama.cpp failed to decode a batch of {n} tokens for {self.name} (code {rc}).",
                hint="The KV cache may be full: raise [model] ctx or shorten the request.",
            )

    def decode_tree(self, tree: TokenTree, start_pos: int) -> None:
        """Decode every node of `tree` in one batch, logits for every node (row i = node i).

        Node i sits at position start_pos + its depth. Each root-to-leaf path is one sequence
        (path 0 is sequence 0, which holds the cached text; the others get that text by
        `llama_memory_seq_cp`, which in a unified cache only tags the cells), and a node carries
        the ids of every path through it, so each node attends to the cached text and its own
        ancestors only. Call `keep_path` before the next decode: it leaves one path as sequence 0.
        A tree with one leaf decodes exactly as `decode` does.
        """
        paths = tree.paths()
        if len(paths) > TREE_PATHS_MAX:
            raise ValueError(f"a tree of {len(paths)} paths exceeds the {TREE_PATHS_MAX} this context holds")
        # every node is a cell of its own (a linear draft of the same depth takes fewer)
        self._check_fits(len(tree), start_pos + len(tree))
        node_ids: list[list[int]] = [[] for _ in tree.tokens]
        for sid, path in enumerate(paths):
            for node in path:
                node_ids[node].append(sid)
        for sid in range(1, len(paths)):
            lc.llama_memory_seq_rm(self._mem, sid, -1, -1)  # nothing left of an earlier tree
            lc.llama_memory_seq_cp(self._mem, 0, sid, -1, -1)
        b = self._batch
        assert b is not None, "decode_tree on a model without a context"
        b.n_tokens = len(tree)
        for i, tok in enumerate(tree.tokens):
            b.token[i] = tok
            b.pos[i] = start_pos + tree.depths[i]  # type: ignore[call-overload]  # see decode
            b.n_seq_id[i] = len(node_ids[i])
            for j, sid in enumerate(node_ids[i]):
                b.seq_id[i][j] = sid
            b.logits[i] = 1
        self._pad = 0
        self._tree = (tree, start_pos, paths)
        try:
            self._run_batch(len(tree))
        except ContextOverflowError:
            self._drop_paths(len(paths), start_pos)
            raise

    def keep_path(self, nodes: list[int]) -> None:
        """After `decode_tree`: keep the cells of `nodes` (a root-down chain, e.g. the accepted
        tokens) as sequence 0 at their positions, and remove every other node's cells."""
        if self._tree is None:
            raise RuntimeError("keep_path without a decode_tree before it")
        tree, start_pos, paths = self._tree
        if not nodes or tree.path_to(nodes[-1]) != list(nodes):
            raise ValueError(f"nodes {nodes} are not a chain from the root of the last tree")
        keep = next(sid for sid, path in enumerate(paths) if nodes[-1] in path)
        end = start_pos + len(nodes)
        for sid in range(1, len(paths)):
            if sid != keep:
                lc.llama_memory_seq_rm(self._mem, sid, -1, -1)
        if keep != 0:
            lc.llama_memory_seq_rm(self._mem, 0, start_pos, -1)
            lc.llama_memory_seq_cp(self._mem, keep, 0, start_pos, end)
            lc.llama_memory_seq_rm(self._mem, keep, -1, -1)
        lc.llama_memory_seq_rm(self._mem, 0, end, -1)
        self._tree = None

    def _drop_paths(self, n_paths: int, start_pos: int) -> None:
        """Forget a tree that failed to decode: sequences 1.. gone, sequence 0 back to start_pos."""
        for sid in range(1, n_paths):
            lc.llama_memory_seq_rm(self._mem, sid, -1, -1)
        lc.llama_memory_seq_rm(self._mem, 0, start_pos, -1)
        self._tree = None

    def decode_prompt(self, tokens: list[int], start_pos: int) -> None:
        """Decode a long token list in n_batch chunks; logits only for the final token."""
        for i in range(0, len(tokens), self.n_batch):
            chunk = tokens[i : i + self.n_batch]
            last = i + self.n_batch >= len(tokens)
            self.decode(chunk, start_pos + i, logits_from=len(chunk) - 1 if last else len(chunk))

    def logits(self, i: int = -1) -> np.ndarray:
        """Logits of output row i of the last decode, as a numpy view of llama.cpp's buffer
        (valid until the next decode: copy it if you keep it)."""
        ptr = lc.llama_get_logits_ith(self._ctx, i - self._pad if i < 0 else i)
        if not ptr:
            raise RuntimeError(f"no logits for output {i} of {self.name}")
        return np.ctypeslib.as_array(ptr, shape=(self.vocab_size,))

    def logits_rows(self, n: int) -> np.ndarray:
        """The last n output rows of the last decode (its padding rows left out) as one
        (n, vocab) view."""
        ptr = lc.llama_get_logits_ith(self._ctx, -(n + self._pad))
        return np.ctypeslib.as_array(ptr, shape=(n, self.vocab_size))

    def trim(self, n_keep: int) -> bool:
        """Drop KV entries at positions >= n_keep; False if the memory cannot do partial removal."""
        return bool(lc.llama_memory_seq_rm(self._mem, 0, n_keep, -1))

    def clear(self) -> None:
        lc.llama_memory_clear(self._mem, True)
        self._tree = None

    def cache_length(self) -> int:
        """Positions held in the KV cache (sequence 0)."""
        return int(lc.llama_memory_seq_pos_max(self._mem, 0)) + 1

    def reserve_adoption(self, source: "LlamaModel") -> int:
        """Size the buffer `adopt_cache` copies through for `source`'s cache as it is now (twice
        over, pages touched): the first touch of new pages costs time in proportion to their size,
        which must land outside a timed draft. Returns the bytes the copy needs now."""
        size = lc.llama_state_seq_get_size(source._ctx, 0)
        if size > 0 and (self._state_buf is None or len(self._state_buf) < size):
            self._state_buf = np.ones(2 * size, np.uint8)  # ctypes arrays zero-fill slower still
        return size

    def adopt_cache(self, source: "LlamaModel", n_tokens: int) -> bool:
        """Make this context's KV cache a copy of `source`'s first `n_tokens` positions.

        For a draft that is a requantized copy of its target (same tensors and shapes): the target
        has already read the prompt, and copying its keys and values costs a few milliseconds where
        reading hundreds of tokens again costs the draft far longer on a CPU. llama.cpp refuses a
        cache of another shape (layers, heads, KV type) or one larger than this context: then
        False, the cache is empty, and the caller reads the text itself."""
        if source.cache_length() < n_tokens:
            return False  # the source has not read that far
        size = self.reserve_adoption(source)
        if size <= 0:
            return False
        assert self._state_buf is not None  # sized by reserve_adoption
        buf = self._state_buf.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
        got = lc.llama_state_seq_get_data(source._ctx, buf, size, 0)
        self.clear()
        _recent_errors()  # a refused copy logs why; it is not an error worth keeping
        if not got or not lc.llama_state_seq_set_data(self._ctx, buf, got, 0):
            self.clear()
            _recent_errors()
            return False
        if not self.trim(n_tokens):
            self.clear()
            return False
        return True


# File types llama.cpp's quantizer writes without an importance matrix (lowercase, as GGUF names
# them); f32 is the memory-bound proxy target (engine/llamacpp/derive.py).
QUANT_TYPES = {name: getattr(lc, f"LLAMA_FTYPE_MOSTLY_{name.upper()}") for name in (
    "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_0", "q4_1", "q4_k_s", "q4_k_m", "q5_0", "q5_1",
    "q5_k_s", "q5_k_m", "q6_k", "q8_0", "f16", "bf16")}
QUANT_TYPES["f32"] = lc.LLAMA_FTYPE_ALL_F32


def quantize(src: str, dst: str, kind: str = "q4_0", threads: int = 0) -> None:
    """Write a requantized copy of a GGUF (a cheap same-vocabulary draft for tests and demos)."""
    _init_backend()
    check_gguf_file(src)
    params = lc.llama_model_quantize_default_params()
    params.ftype = QUANT_TYPES[kind]
    params.allow_requantize = True
    params.nthread = threads
    rc = lc.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params))
    if rc != 0:
        raise ModelLoadError(f"llama.cpp could not quantize {src} to {kind} (code {rc}): {_recent_errors()}")
