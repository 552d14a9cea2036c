"""The forgetting curve: pure functions, no database.

Importance is a function of time, never a running product, so two computations at one instant agree::

    importance(t) = base_importance * exp(-ln 2 * days(t) / effective_half_life)
    days(t)       = t - max(reinforced_at, last_accessed_at), in days
    effective_half_life = half_life(type, tier) * (1 + 0.1 * access_count)
    half_life(type, tier) = decay_half_life_days * type_factor[type] * tier_factor[tier]

``base_importance`` is the importance at the last reinforcement (creation, consolidation); every
access restarts the curve from it. A factor of 0 means "never decays". Below
``decay_min_importance`` a memory is deactivated (status ``decayed``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from deepcontext.errors import ValidationError
from deepcontext.types import MemoryTier, MemoryType

__all__ = [
    "DEFAULT_TIER_FACTORS",
    "DEFAULT_TYPE_FACTORS",
    "DecayPolicy",
    "decayed_importance",
    "effective_half_life",
    "retention",
]

LN2 = math.log(2.0)
SECONDS_PER_DAY = 86_400.0

#: half-life multipliers per memory type: events fade fastest, how-tos slowest
DEFAULT_TYPE_FACTORS: dict[str, float] = {
    MemoryType.EPISODIC.value: 1.0,
    MemoryType.SEMANTIC.value: 4.0,
    MemoryType.PROCEDURAL.value: 12.0,
}
#: half-life multipliers per tier: raw turns (working) fade twice as fast as extracted facts (their
#: content lives on in the facts derived from them, and the turns themselves are never deleted);
#: consolidated long-term knowledge ten times slower
DEFAULT_TIER_FACTORS: dict[str, float] = {
    MemoryTier.WORKING.value: 0.5,
    MemoryTier.SHORT_TERM.value: 1.0,
    MemoryTier.LONG_TERM.value: 10.0,
}
#: the seed's access bonus: +10 % half-life per access
ACCESS_BONUS = 0.1


def effective_half_life(half_life_days: float, access_count: int) -> float:
    """``half_life * (1 + 0.1 * access_count)``: accessed memories are forgotten more slowly."""
    if half_life_days < 0:
        raise ValidationError("half_life_days must be >= 0", field="half_life_days")
    return half_life_days * (1.0 + ACCESS_BONUS * max(0, int(access_count)))


def retention(days: float, half_life_days: float) -> float:
    """Ebbinghaus retention ``exp(-ln2 * days / half_life)``; 1 for a zero half-life (no decay) or
    a non-positive age (a reinforcement in the future of ``now``)."""
    if half_life_days <= 0 or days <= 0:
        return 1.0
    return math.exp(-LN2 * days / half_life_days)


def decayed_importance(
    base_importance: float,
    *,
    reinforced_at: datetime,
    now: datetime,
    half_life_days: float,
    access_count: int = 0,
    last_accessed_at: datetime | None = None,
) -> float:
    """The importance of a memory at ``now`` (see the module docstring). Pure: same inputs, same
    output, whatever was stored before."""
    ref = reinforced_at if last_accessed_at is None or last_accessed_at < reinforced_at else last_accessed_at
    days = (now - ref).total_seconds() / SECONDS_PER_DAY
    return base_importance * retention(days, effective_half_life(half_life_days, access_count))


def _factors(given: Mapping[str, float] | None, defaults: Mapping[str, float], kind: str, names: Any) -> dict[str, float]:
    out = dict(defaults)
    valid = {n.value for n in names}
    for key, value in (given or {}).items():
        if key not in valid:
            raise ValidationError(f"unknown memory {kind} {key!r} in decay factors; expected one of {sorted(valid)}")
        v = float(value)
        if not math.isfinite(v) or v < 0:
            raise ValidationError(f"decay factor of {kind} {key!r} must be a finite number >= 0, got {value!r}")
        out[key] = v
    return out


@dataclass(frozen=True)
class DecayPolicy:
    """Half-lives per (type, tier) and the deactivation threshold, from the settings."""

    half_life_days: float = 7.0
    type_factors: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TYPE_FACTORS))
    tier_factors: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TIER_FACTORS))
    min_importance: float = 0.05

    @classmethod
    def from_settings(cls, settings: Any) -> DecayPolicy:
        return cls(
            half_life_days=float(settings.decay_half_life_days),
            type_factors=_factors(getattr(settings, "decay_type_factors", None), DEFAULT_TYPE_FACTORS, "type", MemoryType),
            tier_factors=_factors(getattr(settings, "decay_tier_factors", None), DEFAULT_TIER_FACTORS, "tier", MemoryTier),
            min_importance=float(getattr(settings, "decay_min_importance", 0.05)),
        )

    def half_life(self, memory_type: str, tier: str) -> float:
        """Half-life in days of a memory of this type and tier before the access bonus; 0: no decay."""
        return self.half_life_days * self.type_factors.get(memory_type, 1.0) * self.tier_factors.get(tier, 1.0)

    def importance(
        self,
        *,
        memory_type: str,
        tier: str,
        base_importance: float,
        reinforced_at: datetime,
        now: datetime,
        access_count: int = 0,
        last_accessed_at: datetime | None = None,
    ) -> float:
        """:func:`decayed_importance` with this policy's half-life for (type, tier)."""
        return decayed_importance(
            base_importance,
            reinforced_at=reinforced_at,
            now=now,
            half_life_days=self.half_life(memory_type, tier),
            access_count=access_count,
            last_accessed_at=last_accessed_at,
        )

    def table(self) -> list[dict[str, Any]]:
        """Half-lives of every (type, tier) pair (``deepcontext lifecycle --policy`` prints it)."""
        return [
            {"memory_type": t.value, "tier": r.value, "half_life_days": self.half_life(t.value, r.value)}
            for t in MemoryType
            for r in MemoryTier
        ]
