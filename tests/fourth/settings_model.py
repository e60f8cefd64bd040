"""What a design sets for the relay: the words its checker signs a draft off with. Declared
here, in the relay's own package, the Design page draws it and the store keeps it with no
change of theirs."""

from __future__ import annotations

from pydantic import Field

from graph.kernel.system import SystemSettings


class RelaySettings(SystemSettings):
    sign_off: str = Field(
        "Checked by the relay",
        min_length=1,
        max_length=60,
        title="Checker's sign-off",
        description="What the checker writes before the draft it signs off.",
    )
