"""Fill-in-the-middle prompts as text, for servers that only offer plain completions (vLLM,
`python -m llama_cpp.server`, llama-server on a model without FIM tokens): a known template per
model family, filled with what the prompt budget (engine/completion.py) kept."""

from __future__ import annotations

from ..completion import FimText

FIM_TEMPLATES: dict[str, str] = {
    "qwen": "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>",
    "codegemma": "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>",
    "codellama": "<PRE> {prefix} <SUF>{suffix} <MID>",
    "deepseek": "<｜fim▁begin｜>{prefix}<｜fim▁hole｜>{suffix}<｜fim▁end｜>",
    "codestral": "[SUFFIX]{suffix}[PREFIX]{prefix}",
    "starcoder": "<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>",
}
_FAMILY_ORDER = ("codegemma", "qwen", "codellama", "code-llama", "deepseek", "codestral", "starcoder")


def fim_template_for(model: str) -> str:
    """The FIM template for a model id; StarCoder's (also SmolLM's, Granite's) when unknown."""
    low = model.lower()
    for family in _FAMILY_ORDER:
        if family in low:
            return FIM_TEMPLATES["codellama" if family == "code-llama" else family]
    return FIM_TEMPLATES["starcoder"]


def fill_template(template: str, prefix: str, suffix: str, context: str = "") -> str:
    return context + template.replace("{prefix}", prefix).replace("{suffix}", suffix)


def context_header(fim: FimText, path: str | None) -> str:
    """Other files, then the cursor file's name, as comment-headed blocks before the template."""
    context = "".join(f"// {f.path}\n{f.text}\n" for f in fim.context_files)
    return context + (f"// {path}\n" if path else "")


def fim_prompt_text(template: str, fim: FimText, path: str | None) -> str:
    return fill_template(template, fim.prefix, fim.suffix, context_header(fim, path))


def template_overhead(template: str, path: str | None) -> str:
    """The prompt text that is not the user's code: what the budget must leave room for."""
    return fill_template(template, "", "", f"// {path}\n" if path else "")
