"""Version ranges as Kafka's message definitions write them: ``"0+"``, ``"3-9"``, ``"5"``, ``"none"``."""

from __future__ import annotations

from typing import NamedTuple


class Versions(NamedTuple):
    """An inclusive range of versions; ``hi`` is None for an open range (``"3+"``)."""

    lo: int
    hi: int | None

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Parse ``"0+"``, ``"3-9"``, ``"5"`` or ``"none"``."""
        text = text.strip()
        if text == "none":
            return NONE
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return self.lo <= version and (self.hi is None or version <= self.hi)

    @property
    def empty(self) -> bool:
        """True for the range that contains no version."""
        return self.hi is not None and self.hi < self.lo

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi is None:
            return f"{self.lo}+"
        if self.hi == self.lo:
            return str(self.lo)
        return f"{self.lo}-{self.hi}"


NONE = Versions(0, -1)
