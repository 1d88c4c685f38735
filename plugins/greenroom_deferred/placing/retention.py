"""The discounted Beta retention model: when a promoted tool may go back to deferred.

Each promoted tool carries Beta(alpha, beta) over "called in a step". After every model
call both parameters decay by omega, then alpha += 1 if the tool was called in that step,
else beta += 1. A tool is re-deferred once it has been idle for ``defer_after`` steps
(counted from its promotion or last call, whichever is later) and the 90% upper bound of
its use probability falls below ``thresh_mult`` times its breakeven frequency.
"""

from __future__ import annotations

import math

import attrs

from greenroom_deferred.config import RetentionConfig

Z90 = 1.282


@attrs.define
class BetaState:
    alpha: float
    beta: float
    promoted_at: int = 0
    last_called: int | None = None

    @classmethod
    def from_prior(cls, p: float, cfg: RetentionConfig, step: int = 0) -> BetaState:
        return cls(alpha=max(p * cfg.n0, 0.01), beta=max((1 - p) * cfg.n0, 0.01), promoted_at=step)

    def observe(self, called: bool, omega: float, step: int) -> None:
        self.alpha *= omega
        self.beta *= omega
        if called:
            self.alpha += 1
            self.last_called = step
        else:
            self.beta += 1

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self) -> float:
        s = self.alpha + self.beta
        return self.alpha * self.beta / (s * s * (s + 1))

    @property
    def upper90(self) -> float:
        return min(1.0, self.mean + Z90 * math.sqrt(self.variance))

    def idle_steps(self, step: int) -> int:
        since = self.promoted_at if self.last_called is None else max(self.promoted_at, self.last_called)
        return step - since


def breakeven(c: float, c_bar: float, gamma: float) -> float:
    """The use frequency above which keeping the schema loaded pays for itself."""
    if c <= c_bar:
        return math.inf
    return (c - c_bar) / gamma


def should_redefer(state: BetaState, step: int, c: float, c_bar: float, cfg: RetentionConfig) -> bool:
    if state.idle_steps(step) < cfg.defer_after:
        return False
    return state.upper90 < breakeven(c, c_bar, cfg.gamma) * cfg.thresh_mult
