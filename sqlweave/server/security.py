"""The server's guards, as small ASGI middlewares: API key, rate limit, body size, security headers, last resort.

Pure ASGI (no ``BaseHTTPMiddleware``), so streamed answers pass through untouched and a client that goes
away is seen by the route.

>>> check_key("Bearer s3cret-key-123", None, "s3cret-key-123")
True
>>> check_key(None, "wrong-key-0000", "s3cret-key-123")
False
>>> bucket = TokenBucket(rate_per_s=1.0, burst=2, now=0.0)
>>> [bucket.take(now=0.0) for _ in range(3)]
[0.0, 0.0, 1.0]
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import threading
import time
import traceback
import uuid
from collections import OrderedDict
from typing import Any, Awaitable, Callable, Sequence

from starlette.exceptions import HTTPException as StarletteHTTPException

from ..logs import log_event
from .errors import INTERNAL, RateLimitedError, RequestTooLargeError, UnauthorizedError, error_body, headers_for

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("sqlweave.server")

CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)

#: Paths that need no API key: the health check, the page and its files, the API description.
OPEN_PATHS = frozenset({"/api/health", "/", "/index.html", "/favicon.ico", "/openapi.json"})


def needs_key(path: str) -> bool:
    return path not in OPEN_PATHS and not path.startswith("/static/")


def presented_key(headers: dict[bytes, bytes]) -> tuple[str | None, str | None]:
    """The ``Authorization`` and ``X-API-Key`` header values, decoded (``None`` when absent)."""
    auth = headers.get(b"authorization")
    api = headers.get(b"x-api-key")
    return (auth.decode("latin-1") if auth is not None else None,
            api.decode("latin-1") if api is not None else None)


def check_key(authorization: str | None, x_api_key: str | None, expected: str) -> bool:
    """Whether either header carries ``expected`` (compared in constant time)."""
    want = expected.encode()
    ok = False
    if authorization:
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() == "bearer":
            ok |= hmac.compare_digest(value.strip().encode(), want)
    if x_api_key is not None:
        ok |= hmac.compare_digest(x_api_key.strip().encode(), want)
    return ok


async def send_json(send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return {k.lower(): v for k, v in scope.get("headers", [])}


# --- security headers -----------------------------------------------------------------------


class SecurityHeadersMiddleware:
    """Adds CSP, nosniff, no-referrer, DENY framing (and ``Cache-Control: no-store`` on API answers)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        api = scope.get("path", "").startswith("/api/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                if api and b"cache-control" not in present:
                    extra.append((b"cache-control", b"no-store"))
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        await self.app(scope, receive, with_headers)


# --- last resort: unexpected exceptions ------------------------------------------------------


class CatchAllMiddleware:
    """An exception nothing else handled becomes 500 ``internal`` (no traceback to the client; one log line)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except _BodyTooLarge as err:
            if not started:
                await send_json(send, 413, error_body(err.error))
        except Exception as err:  # noqa: BLE001 - the last resort by design
            # Where it happened (file:line function), never the message or locals: they may hold user data.
            frames = [f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno} {f.name}"
                      for f in traceback.extract_tb(err.__traceback__)[-8:]]
            log_event(log, "internal_error", level=logging.ERROR, path=scope.get("path"),
                      exception=type(err).__name__, frames=frames)
            if not started:
                await send_json(send, 500, INTERNAL)


# --- request size -----------------------------------------------------------------------------


class _BodyTooLarge(StarletteHTTPException):
    """Raised while reading a body without ``Content-Length``; routes pass HTTP exceptions through unchanged."""

    def __init__(self, limit: int) -> None:
        self.error = RequestTooLargeError(f"the request body is larger than {limit} bytes")
        super().__init__(413, detail=self.error.message)


class BodyLimitMiddleware:
    """Refuse bodies over ``max_bytes`` with 413: at once from ``Content-Length``, else while reading."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _headers(scope).get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                declared = -1
            if declared < 0 or declared > self.max_bytes:
                err = RequestTooLargeError(f"the request body is larger than {self.max_bytes} bytes") \
                    if declared > 0 else RequestTooLargeError("the Content-Length header is not a number",
                                                              status=400, code="bad_request")
                await send_json(send, err.http_status, error_body(err))
                return
        seen = 0

        async def counting() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, counting, send)


# --- API key ------------------------------------------------------------------------------------


class APIKeyMiddleware:
    """When keys are set, every API path but the open ones needs one (``Bearer`` or ``X-API-Key``): the server's
    ``api_key`` or a tenant's, whose :class:`~sqlweave.server.settings.Tenant` the request then carries in
    ``scope["state"]["tenant"]`` (every key is compared, in constant time)."""

    def __init__(self, app: ASGIApp, api_key: str | None, tenants: Sequence[Any] = ()) -> None:
        self.app = app
        self.api_key = api_key
        self.tenants = tuple(tenants)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (self.api_key is None and not self.tenants) \
                or scope.get("method") == "OPTIONS" or not needs_key(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        auth, api = presented_key(_headers(scope))
        server = self.api_key is not None and check_key(auth, api, self.api_key)
        matched = [t for t in self.tenants if check_key(auth, api, t.key)]  # every key compared: no timing hint
        if not server and not matched:
            err = UnauthorizedError("a valid API key is required" if (auth or api) is None
                                    else "the API key is not valid")
            await send_json(send, 401, error_body(err), {"WWW-Authenticate": 'Bearer realm="sqlweave"'})
            return
        scope.setdefault("state", {})["tenant"] = matched[0] if matched and not server else None
        await self.app(scope, receive, send)


# --- rate limit --------------------------------------------------------------------------------------


class TokenBucket:
    """``burst`` tokens, refilled at ``rate_per_s``; :meth:`take` returns 0 or the seconds until a token."""

    __slots__ = ("rate", "burst", "tokens", "stamp")

    def __init__(self, rate_per_s: float, burst: int, now: float | None = None) -> None:
        self.rate = rate_per_s
        self.burst = float(burst)
        self.tokens = float(burst)
        self.stamp = time.monotonic() if now is None else now

    def take(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class RateLimiter:
    """One token bucket per client (see :func:`client_id`); at most ``max_clients`` kept (least recent dropped)."""

    def __init__(self, per_minute: float, burst: int, max_clients: int = 10_000) -> None:
        self.rate = per_minute / 60.0
        self.burst = burst
        self.max_clients = max_clients
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, client: str) -> float:
        """0 when the request may go ahead, else the seconds to wait."""
        with self._lock:
            bucket = self._buckets.get(client)
            if bucket is None:
                bucket = self._buckets[client] = TokenBucket(self.rate, self.burst)
                while len(self._buckets) > self.max_clients:
                    self._buckets.popitem(last=False)
            else:
                self._buckets.move_to_end(client)
            return bucket.take()


def client_id(scope: Scope) -> str:
    """Who is asking: the peer address. Proxies' ``X-Forwarded-For`` is not trusted (a client could pick its own
    bucket), and neither is a presented API key (a made-up key per request must not buy a fresh bucket; the
    limit also applies before the key is checked, so guessing keys is slowed down too)."""
    client = scope.get("client") or ("unknown", 0)
    return f"ip:{client[0]}"


class RateLimitMiddleware:
    """429 with ``Retry-After`` when a client's bucket is empty (API paths but the health check)."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter | None) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or self.limiter is None or not path.startswith("/api/") \
                or path == "/api/health" or scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
            return
        wait = self.limiter.check(client_id(scope))
        if wait > 0:
            err = RateLimitedError("too many requests from this client")
            await send_json(send, 429, error_body(err), {**headers_for(err), "Retry-After": str(math.ceil(wait))})
            return
        await self.app(scope, receive, send)


# --- access log -----------------------------------------------------------------------------------------


class AccessLogMiddleware:
    """One structured log record per request: method, path, status, seconds, request id (also sent back)."""

    def __init__(self, app: ASGIApp, logger: logging.Logger | None = None) -> None:
        self.app = app
        self.log = logger or logging.getLogger("sqlweave.server.access")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["request_id"] = request_id
        start = time.perf_counter()
        status = 0

        async def logging_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": list(message.get("headers", [])) +
                           [(b"x-request-id", request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, logging_send)
        finally:
            client = scope.get("client") or ("", 0)
            if scope["state"].get("abandoned"):
                status = 499  # a stream whose client went away before its answer: not a 200 anybody read
            self.log.info("request", extra={
                "event": "request", "request_id": request_id, "method": scope.get("method"),
                "path": scope.get("path"), "status": status, "client": client[0],
                "seconds": round(time.perf_counter() - start, 4)})
