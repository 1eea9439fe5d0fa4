"""The environment of the model side: endpoints, API keys and switches.

Variables come from the process environment or from a ``.env`` file (the first one found from
the working directory upwards); a ``.env`` file never overrides a variable that is already set.
The original design's names keep working: ``USE_REMOTE_MODEL`` (truthy: the ``remote``
provider), ``LLM_API_URL`` (its base URL), ``NVIDIA_API_KEY``, ``GEMINI_API_KEY`` and
``WANDB_API_KEY``.

API keys are handed around as :class:`Secret`, whose ``str`` and ``repr`` hide the value, so a
key that reaches an f-string, a log line or a provider's repr shows as ``***``; only the code
that builds an HTTP header calls :meth:`Secret.reveal`.

Everything kernelgen stores or prints about a case (the results file and its artifacts,
Allure, W&B, the pytest failure text and the summary) goes through :func:`scrub` first: the
values of the environment's secret variables and anything shaped like a key are replaced by
``***``, whatever put them there (a model's answer, a sandboxed child's output, an exception).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from kernelgen.errors import require

USE_REMOTE_MODEL = "USE_REMOTE_MODEL"
LLM_API_URL = "LLM_API_URL"
SECRET_VARIABLES = ("OPENAI_API_KEY", "NVIDIA_API_KEY", "GEMINI_API_KEY", "WANDB_API_KEY", "LLM_API_KEY")
CACHE_DIR_VARIABLE = "KERNELGEN_CACHE_DIR"

_TRUTHY = ("1", "true", "yes", "on")
_dotenv_loaded = False


class Secret:
    """A credential that does not print itself."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


def find_dotenv(start: Path | None = None) -> Path | None:
    """The nearest ``.env`` file from ``start`` (default: the working directory) upwards."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / ".env"
        if candidate.is_file():
            return candidate
    return None


def load_dotenv(path: Path | None = None) -> Path | None:
    """Load a ``.env`` file into the environment without overriding set variables.

    Without ``path``, the nearest ``.env`` is loaded once per process; returns the file loaded.
    """
    global _dotenv_loaded
    if path is None:
        if _dotenv_loaded:
            return None
        _dotenv_loaded = True
        path = find_dotenv()
        if path is None:
            return None
    dotenv = require("dotenv", "reading a .env file", "llm")
    dotenv.load_dotenv(path, override=False)
    return path


def getenv(name: str) -> str | None:
    """A variable from the environment or ``.env``; an empty value counts as unset."""
    load_dotenv()
    value = os.environ.get(name, "").strip()
    return value or None


def get_secret(name: str) -> Secret | None:
    value = getenv(name)
    return Secret(value) if value else None


def is_truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in _TRUTHY


def default_provider_spec() -> str | None:
    """The provider the original design's variables select when none is named.

    ``USE_REMOTE_MODEL`` truthy selects the remote server at ``LLM_API_URL``; otherwise a set
    ``NVIDIA_API_KEY`` selects NIM, then a set ``GEMINI_API_KEY`` Gemini.
    """
    if is_truthy(getenv(USE_REMOTE_MODEL)):
        return "remote"
    if getenv("NVIDIA_API_KEY"):
        return "nim"
    if getenv("GEMINI_API_KEY"):
        return "gemini"
    return None


def cache_root() -> Path:
    """The folder of kernelgen's caches (``generations/``, ``compile/``): ``$KERNELGEN_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/kernelgen``, else ``~/.cache/kernelgen``; never the working
    directory, so that a run writes nothing into a checkout unless asked to."""
    given = os.environ.get(CACHE_DIR_VARIABLE, "").strip()
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "kernelgen"


def generation_cache_dir() -> Path:
    """Where generations are recorded by default: ``generations/`` in :func:`cache_root`."""
    return cache_root() / "generations"


def known_secrets() -> list[Secret]:
    """Every API key the environment holds, for redaction of text that may echo one."""
    return [s for s in (get_secret(name) for name in SECRET_VARIABLES) if s is not None]


MIN_SECRET_LENGTH = 8


def redact(text: str, secrets: Iterable[Secret]) -> str:
    """``text`` with every secret's value replaced by ``***`` (values shorter than
    ``MIN_SECRET_LENGTH`` are no real keys, and replacing them would garble the text)."""
    for secret in secrets:
        value = secret.reveal()
        if len(value) >= MIN_SECRET_LENGTH:
            text = text.replace(value, "***")
    return text


# Names of variables that hold credentials: their values are scrubbed from what is stored, and
# the baseline's sandbox never passes them on.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|AUTH|COOKIE|SESSION|^WANDB_|^HF_|^AWS_"
                         r"|^OPENAI|^ANTHROPIC|^GEMINI|^GOOGLE_|^AZURE_", re.IGNORECASE)
# Of those, the ones whose values are secret wherever they appear (a WANDB_PROJECT is not).
_SECRET_VALUE_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|AUTH|COOKIE", re.IGNORECASE)
# Keys by their shape: OpenAI/Anthropic (sk-...), NVIDIA (nvapi-...), Google (AIza...), Hugging
# Face (hf_...), GitHub, GitLab, Slack, AWS access key ids, JWTs.
KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_])(?:sk-[A-Za-z0-9_\-]{16,}|nvapi-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,}"
    r"|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|glpat-[A-Za-z0-9_\-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}|A[KS]IA[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})")
# A long token assigned to a name that says it is a credential: API_KEY=..., "token": "..."
# (but a sha256 digest, kernelgen's own content addresses: "key": "<64 hex>").
ASSIGNED_SECRET = re.compile(
    r"(?i)([A-Za-z0-9_.\-]*(?:key|token|secret|passw(?:or)?d|credential|auth)[A-Za-z0-9_]*[\"']?\s*[=:]\s*"
    r"(?:bearer\s+)?[\"']?)(?![0-9a-f]{64}(?![A-Za-z0-9+/_.~\-]))([A-Za-z0-9+/_.~\-]{16,})")
REDACTED = "***"


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the environment's secret variables (:data:`SECRET_VARIABLES` and any whose
    name says it holds a credential) of at least :data:`MIN_SECRET_LENGTH` characters, longest
    first; ``.env`` is loaded first (its keys count)."""
    if environ is None:
        load_dotenv_quietly()
        environ = os.environ
    values = {value.strip() for name, value in environ.items()
              if (name in SECRET_VARIABLES or _SECRET_VALUE_NAME.search(name))
              and len(value.strip()) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def load_dotenv_quietly() -> None:
    """:func:`load_dotenv`, where python-dotenv is installed (the scrubber must never fail)."""
    try:
        load_dotenv()
    except Exception:  # noqa: BLE001 - MissingDependency or an unreadable file: nothing to load
        pass


def scrub(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` without secrets: the values of :func:`secret_values` and anything shaped like a
    key (:data:`KEY_SHAPES`, a long token after ``KEY=``/``token:``) replaced by ``***``."""
    if not text:
        return text
    for value in secret_values(environ):
        if value in text:
            text = text.replace(value, REDACTED)
    text = KEY_SHAPES.sub(REDACTED, text)
    return ASSIGNED_SECRET.sub(lambda m: m.group(1) + REDACTED, text)


def scrub_value(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """Every string in a JSON-like value (dicts, lists, tuples) scrubbed, keys included."""
    if environ is None:
        load_dotenv_quietly()
        environ = dict(os.environ)
    if isinstance(value, str):
        return scrub(value, environ)
    if isinstance(value, dict):
        return {scrub_value(k, environ): scrub_value(v, environ) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_value(v, environ) for v in value)
    return value


_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@")


def redact_url(url: str) -> str:
    """A URL fit for messages: no user:password part and no query string (keys travel there)."""
    url = _USERINFO.sub(r"\1", url)
    base, sep, _ = url.partition("?")
    return base + ("?..." if sep else "")
