"""The exceptions cclab raises. The Rust core fills them; they are defined here so that their
messages read well and they pickle (for process pools)."""

from __future__ import annotations

from typing import TypedDict


class ErrorLocation(TypedDict):
    """One problem in a scenario, as the Rust validator reports it. `text` is the whole of it
    on one line: `file:line: field `x`: message`, leaving out what is unknown."""

    file: str
    field: str
    line: int | None
    message: str
    text: str


class ScenarioError(ValueError):
    """A scenario is not valid. `errors` lists every problem found, each with its file, field,
    line (or None) and a message saying what would be accepted."""

    def __init__(self, errors: list[ErrorLocation]) -> None:
        super().__init__(errors)
        self.errors: list[ErrorLocation] = list(errors)

    def __str__(self) -> str:
        return "\n".join(e["text"] for e in self.errors)


class SimulationError(RuntimeError):
    """The scenario was valid, but the run could not happen (e.g. a trace file is unreadable)."""
