"""Language-model backends behind one small interface: local GGUF, OpenAI-compatible HTTP, fake."""

from .base import LLM, Completion, GenerationOptions, Message, Usage, UsageMeter
from .cache import CachedLLM
from .fake import FakeLLM
from .registry import BACKENDS, get_llm, register_backend

__all__ = [
    "BACKENDS", "CachedLLM", "Completion", "FakeLLM", "GenerationOptions", "LLM", "Message", "Usage",
    "UsageMeter", "get_llm", "register_backend",
]
