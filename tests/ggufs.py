"""Derived GGUF files for tests, written with the `gguf` package from the real demo model.

`copy_gguf` copies every metadata key (with overrides) and, unless told otherwise, every tensor:
a FIM-capable copy of the demo model, a vocab-only file whose tokenizer disagrees on one token, a
model with an architecture llama.cpp does not know.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gguf

# SmolLM2 token ids used as stand-in FIM tokens in the FIM copy (they are special tokens there).
FIM_PRE, FIM_SUF, FIM_MID, FIM_PAD = 4, 5, 6, 7
MISMATCH_TOKEN = 1000  # the token whose text the mismatched-vocabulary copy changes


def copy_gguf(
    src: str | Path,
    dst: str | Path,
    *,
    overrides: dict[str, tuple[Any, gguf.GGUFValueType]] | None = None,
    change_token: tuple[int, str] | None = None,
    tensors: bool = True,
    arch: str | None = None,
) -> Path:
    overrides = dict(overrides or {})
    reader = gguf.GGUFReader(str(src))
    src_arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(str(dst), arch or src_arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in overrides:
            continue
        value = field.contents()
        if key == "tokenizer.ggml.tokens" and change_token is not None:
            value = list(value)
            value[change_token[0]] = change_token[1]
        if arch and key.startswith(src_arch + "."):
            key = arch + key[len(src_arch):]
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, value, vtype, sub_type=field.types[-1])
        else:
            writer.add_key_value(key, value, vtype)
    for key, (value, vtype) in overrides.items():
        writer.add_key_value(key, value, vtype)
    if tensors:
        for t in reader.tensors:
            writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    if tensors:
        for t in reader.tensors:
            writer.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    writer.close()
    return Path(dst)
