"""JSON over HTTP with the reliability every model call needs.

Each call has a timeout; 429, 5xx, timeouts and dropped connections are retried with
exponential backoff and full jitter (a ``Retry-After`` header, in seconds or as a date, is
honoured up to a cap), for a bounded number of attempts; then a :class:`ProviderError` names
the status, the method and the URL without credentials. Other 4xx answers fail at once: a
bad request does not get better by repeating it. A semaphore bounds the calls in flight per
client (one client per provider); it is released while a retry waits, so a backing-off call
does not hold a slot.

httpx is imported when a client is made (it is in the ``llm`` extra).
"""

from __future__ import annotations

import email.utils
import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from kernelgen.env import Secret, known_secrets, redact, redact_url
from kernelgen.errors import require
from kernelgen.model.providers.base import ProviderError, RetryPolicy

log = logging.getLogger(__name__)

MAX_ERROR_BODY = 300


@dataclass(frozen=True)
class Reply:
    data: Any
    retries: int


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class JsonHttpClient:
    """A JSON API at ``base_url``: ``post(path, body)`` and ``get(path)`` return the decoded
    answer with the number of retries it took."""

    def __init__(self, base_url: str, *, headers: dict[str, str] | None = None,
                 secrets: Sequence[Secret] = (), timeout_s: float = 300.0,
                 retry: RetryPolicy = RetryPolicy(), concurrency: int = 4,
                 transport: Any = None, sleep: Callable[[float], None] = time.sleep) -> None:
        httpx = require("httpx", "calling a model over HTTP", "llm")
        self.base_url = base_url.rstrip("/")
        self.retry = retry
        self.timeout_s = timeout_s
        # Any key the environment holds is redacted too: a server may echo another one.
        self._secrets = [*secrets, *known_secrets()]
        self._slots = threading.BoundedSemaphore(max(1, concurrency))
        self._sleep = sleep
        self._httpx = httpx
        self._client = httpx.Client(
            headers=headers or {}, transport=transport,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 30.0)))

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}" if path else self.base_url

    def post(self, path: str, body: dict[str, Any]) -> Reply:
        return self._call("POST", path, body)

    def get(self, path: str) -> Reply:
        return self._call("GET", path, None)

    def close(self) -> None:
        self._client.close()

    def _redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def _error(self, code: str, method: str, url: str, message: str) -> ProviderError:
        return ProviderError(self._redact(f"{method} {redact_url(url)}: {message}"), code=code)

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> Reply:
        url = self.url(path)
        attempts = max(1, self.retry.max_attempts)
        attempt = 1
        while True:
            outcome = self._attempt(method, url, body)
            if isinstance(outcome, Reply):
                return Reply(outcome.data, attempt - 1)
            code, reason, retry_after = outcome
            if attempt == attempts:
                raise self._error(code, method, url, f"{reason} (gave up after {attempts} attempts)")
            delay = self.retry.delay(attempt, retry_after)
            log.warning("%s %s: %s; attempt %d of %d in %.1f s", method, redact_url(url),
                        self._redact(reason), attempt + 1, attempts, delay)
            self._sleep(delay)
            attempt += 1

    def _attempt(self, method: str, url: str,
                 body: dict[str, Any] | None) -> Reply | tuple[str, str, float | None]:
        """One request: its reply, or why it may be retried (code, reason, Retry-After)."""
        httpx = self._httpx
        try:
            with self._slots:
                response = self._client.request(method, url, json=body)
        except httpx.TimeoutException:
            return "timeout", f"no answer within {self.timeout_s:g} s", None
        except httpx.TransportError as exc:
            return "connection", f"{type(exc).__name__}: {exc}", None
        status = response.status_code
        if status < 400:
            return Reply(self._decode(response, method, url), 0)
        reason = f"answered {status}: {_excerpt(response.text)}"
        if status != 429 and status < 500:
            raise self._error(f"http_{status}", method, url, reason)
        return f"http_{status}", reason, parse_retry_after(response.headers.get("retry-after"))

    def _decode(self, response: Any, method: str, url: str) -> Any:
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise self._error("bad_response", method, url,
                              f"answered {response.status_code} with a body that is not JSON: "
                              f"{_excerpt(response.text)}") from None


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_BODY else text[:MAX_ERROR_BODY] + "..."


def dig(data: Any, *path: str | int) -> Any:
    """``data[path[0]][path[1]]...``, or None where a step is missing."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(data, list) or not -len(data) <= step < len(data):
                return None
        elif not isinstance(data, dict) or step not in data:
            return None
        data = data[step]
    return data
