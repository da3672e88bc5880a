"""What an operator decides about a running server, in one frozen object.

Safe by default: loopback only, the API key read from ``SQLWEAVE_API_KEY`` when none is given,
small request bodies, a bounded model queue, a per-client rate limit and no cross-origin access.

>>> from sqlweave.catalog import Catalog
>>> s = ServerSettings(Catalog.demo(), llm="fake", api_key="")
>>> s.host, s.port, s.queue_capacity
('127.0.0.1', 8000, 17)
>>> s.is_loopback
True
>>> ServerSettings(Catalog.demo(), api_key="", host="0.0.0.0").check_exposure()
Traceback (most recent call last):
...
sqlweave.errors.ConfigurationError: refusing to listen on 0.0.0.0 without an API key (...)
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..catalog import Catalog
    from ..llm.base import LLM

#: The environment variable an operator can put the API key in (instead of the command line).
API_KEY_ENV = "SQLWEAVE_API_KEY"


def _env_api_key() -> str | None:
    return os.environ.get(API_KEY_ENV) or None


@dataclass(frozen=True)
class Tenant:
    """An API key of its own with the row-filter parameters its requests are bound to (see :mod:`sqlweave.policy`):
    every query a request with this key runs sees only the rows the filters let ``params`` see, and the
    conversations it starts are its own (other keys get 404 for them)."""

    name: str
    key: str = field(repr=False)
    params: Mapping[str, Any] = field(default_factory=dict)


def load_tenants(path: str | Path) -> tuple[Tenant, ...]:
    """The tenants of a YAML file: a list of ``{name, key | key_env, params}``.

    ::

        - name: acme
          key_env: ACME_API_KEY        # or key: "...", at least 16 characters
          params: {tenant: acme}
    """
    import yaml

    source = Path(path).expanduser()
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ConfigurationError(f"cannot read the tenants file {str(source)!r}: {err}",
                                 hint="Give a YAML list of {name, key or key_env, params}.") from None
    if not isinstance(data, list) or not data:
        raise ConfigurationError(f"the tenants file {str(source)!r} holds no list of tenants",
                                 hint="Give a YAML list of {name, key or key_env, params}.")
    out = []
    for i, item in enumerate(data, 1):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
            raise ConfigurationError(f"tenant {i} in {str(source)!r} has no name")
        key = item.get("key")
        if key is None and isinstance(item.get("key_env"), str):
            key = os.environ.get(item["key_env"])
            if not key:
                raise ConfigurationError(f"tenant {item['name']!r}: the environment variable {item['key_env']} is "
                                         "not set", hint="Set it to the tenant's API key before starting the server.")
        params = item.get("params", {})
        if not isinstance(key, str) or not isinstance(params, dict):
            raise ConfigurationError(f"tenant {item['name']!r} needs a key (or key_env) and a params mapping")
        out.append(Tenant(item["name"].strip(), key.strip(), params))
    return tuple(out)


def default_static_dir() -> Path:
    """The page shipped inside the package: ``sqlweave/web/``."""
    return Path(__file__).resolve().parent.parent / "web"


@dataclass(frozen=True)
class ServerSettings:
    """Everything ``sqlweave serve`` can be told. Build one and pass it to ``create_app`` or ``run``.

    Attributes:
        catalog: the databases clients may name (clients never give a path or URL).
        llm: a backend or a spec (``local``, ``local:0.5b``, ``openai:MODEL``, ``fake``).
        llm_options: keywords for the backend (``base_url``, ``api_key`` of an OpenAI-compatible server, ...).
        cache: keep model answers in the on-disk response cache.
        preset: the pipeline used when a request names none.
        api_key: when set, every ``/api/`` call but ``/api/health`` needs ``Authorization: Bearer KEY``
            or ``X-API-Key: KEY``. ``None`` (the default) reads ``$SQLWEAVE_API_KEY``; ``""`` means no key
            even when that variable is set.
        tenants: API keys of their own (:class:`Tenant`), each binding the access policy's row-filter parameters
            for its requests and keeping its conversations to itself; with tenants, every ``/api/`` call but
            health needs one of their keys (or ``api_key``, which binds nothing and sees every conversation).
        host, port: where to listen. A host other than loopback needs an API key.
        model_concurrency: questions the model works on at once in this process (1 for the embedded model).
        queue_size: requests that may wait for the model; more get 503 ``busy`` with ``Retry-After``.
        queue_timeout_s: how long a request may wait for the model before it gets 503 ``busy``.
        max_question_seconds: the operator's ceiling on one question's model time: each preset's own budget
            (:mod:`sqlweave.budget`) or this, whichever is lower. Past it, the answer found so far comes back marked
            ``cut_short``, or 504 ``question_timeout`` when there is none.
        rate_limit_per_minute, rate_limit_burst: each client address's token bucket (proxy headers are not
            trusted: behind a reverse proxy, limit there or raise this); 0 turns the limit off.
        max_request_bytes: larger request bodies get 413.
        max_question_chars: longer questions get 422.
        max_sql_chars: longer SQL texts (``/api/sql``, ``/api/explain``, feedback) get 422.
        cors_origins: origins allowed to call the API from a browser (none: same origin only).
        allowed_hosts: ``Host`` header values accepted (``None``: the loopback names when listening on
            loopback, which stops DNS-rebinding pages from reaching a key-less local server; else any).
        conversation_url: SQLAlchemy URL of the conversation store (``None``: SQLite in the cache directory;
            PostgreSQL lets several server processes share conversations).
        static_dir: the web page's folder (``None``: the one in the package).
        answer_memory: answers remembered by id for feedback (least recently used forgotten first).
        history_turns: earlier turns of a conversation shown to the model.
        feedback_log: JSON-lines file of feedback (``None``: ``<cache dir>/server/feedback.jsonl``).
        feedback_examples: where a pair that feedback proposes goes (:mod:`sqlweave.feedback`): ``pending`` (the
            default: the operator reviews it with ``sqlweave examples pending``), ``pool`` (straight into the
            example pool; a tenant's pairs still wait for review), ``off`` (feedback is only logged). Feedback is
            taken only on an answer this server gave to the same caller.
        feedback_per_minute: feedback each caller (tenant, or client address) may send per minute; 0: no limit.
        answer_key: the file of the key that seals answer ids (``None``: ``<cache dir>/server/answer-key``,
            made on first start, readable by its user alone).
        json_logs: ``run`` logs one JSON object per line.
        warm_up: at start, evaluate each database's stable prompt (instructions and schema) once, one database
            at a time and behind any question already waiting, so the first question answers in seconds
            (:meth:`~sqlweave.engine.Engine.warm_up`; only with a model that keeps evaluated prompts).
    """

    catalog: "Catalog"
    llm: "LLM | str" = "local"
    llm_options: Mapping[str, Any] = field(default_factory=dict)
    cache: bool = True
    preset: str = "default"
    api_key: str | None = field(default=None, repr=False)
    tenants: tuple[Tenant, ...] = ()
    host: str = "127.0.0.1"
    port: int = 8000
    model_concurrency: int = 1
    queue_size: int = 16
    queue_timeout_s: float = 300.0
    max_question_seconds: float = 120.0
    rate_limit_per_minute: float = 120.0
    rate_limit_burst: int = 30
    max_request_bytes: int = 64 * 1024
    max_question_chars: int = 2000
    max_sql_chars: int = 20_000
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] | None = None
    conversation_url: str | None = None
    static_dir: Path | None = None
    answer_memory: int = 1000
    history_turns: int = 4
    feedback_log: Path | None = None
    feedback_examples: str = "pending"
    feedback_per_minute: float = 20.0
    answer_key: Path | None = None
    json_logs: bool = True
    warm_up: bool = True

    def __post_init__(self) -> None:
        key = _env_api_key() if self.api_key is None else self.api_key
        object.__setattr__(self, "api_key", key.strip() or None if key is not None else None)
        if self.api_key is not None and len(self.api_key) < 8:
            raise ConfigurationError("the API key is too short", hint="Use at least 16 random characters, e.g. "
                                     "python -c 'import secrets; print(secrets.token_urlsafe(24))'.")
        object.__setattr__(self, "tenants", tuple(self.tenants))
        for tenant in self.tenants:
            if len(tenant.key) < 16:
                raise ConfigurationError(f"the API key of tenant {tenant.name!r} is too short",
                                         hint="Use at least 16 random characters.")
        keys = [t.key for t in self.tenants] + ([self.api_key] if self.api_key else [])
        names = [t.name for t in self.tenants]
        if len(set(keys)) != len(keys) or len(set(names)) != len(names):
            raise ConfigurationError("two tenants share a name or an API key (or a tenant uses the server's key)",
                                     hint="Give each tenant its own name and key.")
        if not 0 < self.port < 65536:
            raise ConfigurationError(f"port {self.port} is out of range", hint="Use a port between 1 and 65535.")
        if self.model_concurrency < 1:
            raise ConfigurationError("model_concurrency must be at least 1")
        if isinstance(self.max_question_seconds, bool) or not self.max_question_seconds > 0:
            raise ConfigurationError("max_question_seconds must be a number of seconds above 0",
                                     hint="Use --max-question-seconds 120, for instance.")
        if self.queue_size < 0 or self.queue_timeout_s <= 0:
            raise ConfigurationError("queue_size must be 0 or more and queue_timeout_s positive")
        if self.rate_limit_per_minute < 0 or (self.rate_limit_per_minute > 0 and self.rate_limit_burst < 1):
            raise ConfigurationError("the rate limit must be 0 (off) or positive, with a burst of at least 1")
        if self.max_request_bytes < 1024 or self.max_question_chars < 1 or self.max_sql_chars < 1:
            raise ConfigurationError("request limits must be positive (max_request_bytes at least 1024)")
        from ..feedback import FEEDBACK_EXAMPLES

        if self.feedback_examples not in FEEDBACK_EXAMPLES:
            raise ConfigurationError(f"unknown feedback_examples {self.feedback_examples!r}",
                                     hint=f"Use one of: {', '.join(FEEDBACK_EXAMPLES)}.")
        if self.feedback_per_minute < 0:
            raise ConfigurationError("feedback_per_minute must be 0 (no limit) or positive")
        if self.answer_memory < 1 or self.history_turns < 0:
            raise ConfigurationError("answer_memory must be positive and history_turns 0 or more")
        object.__setattr__(self, "cors_origins", tuple(self.cors_origins))
        if "*" in self.cors_origins and not self.has_keys:
            raise ConfigurationError("cross-origin access from any origin needs an API key",
                                     hint="Name the origins that may call the API, or set an API key.")

    @property
    def has_keys(self) -> bool:
        """Whether API calls need a key (the server's or a tenant's)."""
        return self.api_key is not None or bool(self.tenants)

    @property
    def queue_capacity(self) -> int:
        """Requests the model gate holds at once: running plus waiting."""
        return self.model_concurrency + self.queue_size

    @property
    def is_loopback(self) -> bool:
        host = self.host.strip("[]")
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def check_exposure(self) -> None:
        """Refuse to listen beyond this machine without an API key (typed :class:`ConfigurationError`)."""
        if not self.is_loopback and not self.has_keys:
            raise ConfigurationError(
                f"refusing to listen on {self.host} without an API key",
                hint=f"Set one with --api-key or the {API_KEY_ENV} environment variable, or listen on 127.0.0.1.",
            )

    def check_conversations(self) -> None:
        """Open the conversation store once and close it: a store that cannot be made or reached is a typed error
        when the server starts, not after a question's model time."""
        from ..conversation import ConversationStore

        ConversationStore(self.conversation_url).close()

    def resolved_allowed_hosts(self) -> tuple[str, ...]:
        if self.allowed_hosts is not None:
            return tuple(self.allowed_hosts)
        if self.is_loopback:
            return ("127.0.0.1", "localhost", "::1", "[::1]")
        return ("*",)

    def resolved_static_dir(self) -> Path:
        return Path(self.static_dir) if self.static_dir is not None else default_static_dir()

    def resolved_answer_key(self) -> Path:
        if self.answer_key is not None:
            return Path(self.answer_key)
        from ..config import cache_dir

        return cache_dir() / "server" / "answer-key"

    def resolved_feedback_log(self) -> Path:
        if self.feedback_log is not None:
            return Path(self.feedback_log)
        from ..config import cache_dir

        return cache_dir() / "server" / "feedback.jsonl"
