"""Build a backend from a short spec string; third parties register theirs the same way.

Specs: ``local`` or ``local:1.5b`` / ``local:0.5b`` (embedded), ``openai:MODEL`` (OpenAI or any
compatible server with ``base_url=``), ``fake`` (tests).

>>> get_llm("fake").model_id
'fake'
>>> sorted(BACKENDS)
['fake', 'local', 'openai']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..config import cache_dir
from ..errors import ConfigurationError
from .base import LLM

BackendFactory = Callable[..., LLM]
BACKENDS: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``name[:arg]`` specs build backends with ``factory(arg, **options)``."""
    BACKENDS[name] = factory


def _local(arg: str | None, **kw: Any) -> LLM:
    from .local import LocalLLM

    return LocalLLM(arg or "1.5b", **kw)


def _openai(arg: str | None, **kw: Any) -> LLM:
    from .openai_compat import OpenAICompatibleLLM

    if not arg:
        raise ConfigurationError("an OpenAI-compatible backend needs a model name", hint="Use openai:MODEL, e.g. openai:gpt-4o-mini.")
    return OpenAICompatibleLLM(arg, **kw)


def _fake(arg: str | None, **kw: Any) -> LLM:
    from .fake import FakeLLM

    return FakeLLM(**kw)


register_backend("local", _local)
register_backend("openai", _openai)
register_backend("fake", _fake)


def get_llm(spec: str = "local", *, cache: bool | Path = False, **options: Any) -> LLM:
    """Build the backend named by ``spec``; ``cache=True`` (or a path) adds the persistent response cache."""
    name, _, arg = spec.partition(":")
    try:
        factory = BACKENDS[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown model backend {name!r}", hint=f"Use one of: {', '.join(sorted(BACKENDS))} (e.g. local:1.5b)."
        ) from None
    llm = factory(arg or None, **options)
    if cache:
        from .cache import CachedLLM

        path = cache if isinstance(cache, Path) else cache_dir() / "responses.sqlite"
        llm = CachedLLM(llm, path)
    return llm
