"""The exceptions cclab raises. The Rust core fills them; they are defined here so that their
messages read well and they pickle (for process pools)."""

from __future__ import annotations

from typing import TypedDict


class ErrorLocation(TypedDict):
    """One problem in a scenario, as the Rust validator reports it."""

    file: str
    field: str
    line: int | None
    message: str


def format_error(error: ErrorLocation) -> str:
    """`file:line: field `x`: message`, leaving out what is unknown."""
    text = error["file"]
    if error.get("line") is not None:
        text += f":{error['line']}"
    if error.get("field"):
        text += f": field `{error['field']}`"
    return f"{text}: {error['message']}"


class ScenarioError(ValueError):
    """A scenario is not valid. `errors` lists every problem found, each with its file, field,
    line (or None) and a message saying what would be accepted."""

    def __init__(self, errors: list[ErrorLocation]) -> None:
        super().__init__(errors)
        self.errors: list[ErrorLocation] = list(errors)

    def __str__(self) -> str:
        return "\n".join(format_error(e) for e in self.errors)


class SimulationError(RuntimeError):
    """The scenario was valid, but the run could not happen (e.g. a trace file is unreadable)."""
