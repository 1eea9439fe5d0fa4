"""A circuit breaker for a run whose model server cannot be reached.

When the server is down, the URL is wrong or a proxy keeps answering 502, every case would
spend the HTTP client's retries and fail with the same error. The first such failure (after
its retries, :mod:`kernelgen.model.providers.http`) trips the breaker: the plugin stops the run
there with one message, and a case that still starts (another xdist worker's) is skipped with
one line naming the first failure. Errors that belong to one request (a 400 for a prompt too
long, a replay record that is missing) do not trip it: the other cases may well succeed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# After the client's retries: no connection, no answer in time, rate-limited or failing server.
_UNREACHABLE = re.compile(r"connection|timeout|http_429|http_5\d\d")


def is_unreachable(stage: str | None, code: str) -> bool:
    """Whether a failure (a provider's error, or a case result's stage and first code) says
    the model server cannot answer any request now."""
    return stage == "generate" and _UNREACHABLE.fullmatch(code) is not None


@dataclass
class CircuitBreaker:
    """Open once a case found the model server unreachable: which case, and why."""

    case: str | None = None
    reason: str | None = None

    @property
    def tripped(self) -> bool:
        return self.case is not None

    def trip(self, case: str, reason: str) -> None:
        if not self.tripped:
            self.case, self.reason = case, reason

    def stop_message(self) -> str:
        """Why the run stopped, for pytest's stop line and the summary."""
        return f"stopping after {self.case}: the model server is unreachable"

    def skip_message(self) -> str:
        return f"not run: the model server was unreachable when {self.case} asked it (see that case)"
