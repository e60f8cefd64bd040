"""What a design sets for supervisor_bus: how long a request on the bus may wait. The
Design page draws the field (title, help, bounds) as it is declared here."""

from __future__ import annotations

from pydantic import Field

from graph.kernel.system import SystemSettings
from graph.settings import get_settings


def _default_timeout() -> float:
    return get_settings().bus_timeout_s  # STEPWISE_BUS_TIMEOUT


class BusSettings(SystemSettings):
    bus_timeout_s: float = Field(
        default_factory=_default_timeout,
        gt=0,
        le=86_400,
        title="Request timeout, seconds",
        description="A request on the bus not answered within this time is taken off the "
        "outstanding registry, listed as a dead letter and escalated to a human (retry, "
        "reassign to another agent, or drop), once.",
        json_schema_extra={"step": 1.0},
    )
