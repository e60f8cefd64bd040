"""The scale people score a run on (issue 27, point 3): an eval set's own, so a set of
yes/no questions is scored pass or fail and a set of essays 0 to 10, not everything on
the model judge's 1-5.

A scale is whole numbers from ``low`` to ``high`` (words for the two ends optional), or a
list of labels, lowest first, numbered 1 to N (``["fail", "pass"]``). Every annotation is
kept with the scale it was given on, so a scale changed later never reinterprets an old
score. At most ``MAX_POINTS`` points: finer than that nobody scores the same twice.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, model_validator

from graph.errors import StepwiseError

MAX_POINTS = 11
END_LIMIT = 1000  # the ends fit any database's INTEGER
MAX_WORD = 40


class ScaleError(StepwiseError, ValueError):
    """A score scale that cannot be used; the message says why."""


class ScoreScale(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    low: StrictInt = 1
    high: StrictInt = 5
    low_word: str = ""
    high_word: str = ""
    labels: tuple[str, ...] = Field(default=())

    @model_validator(mode="before")
    @classmethod
    def _trimmed(cls, data: Any) -> Any:
        """Words trimmed; a scale of labels needs no ends: 1 and the number of labels."""
        if not isinstance(data, dict):
            return data
        data = {k: v.strip() if isinstance(v, str) else v for k, v in data.items()}
        if isinstance(data.get("labels"), (list, tuple)):
            labels = [v.strip() if isinstance(v, str) else v for v in data["labels"]]
            if not labels and "low" not in data and "high" not in data:
                raise ValueError("a scale of labels needs two at least (e.g. fail, pass)")
            data = {"low": 1, "high": len(labels), **data, "labels": labels}
        return data

    @model_validator(mode="after")
    def _usable(self) -> ScoreScale:
        low, high = self.low, self.high
        if self.labels:
            labels = self.labels
            if len(labels) < 2:  # one label; none is a scale of numbers
                raise ValueError("a scale of labels needs two at least (e.g. fail, pass)")
            if len(labels) > MAX_POINTS:
                raise ValueError(
                    f"{len(labels)} labels are too many to score by eye: keep it to {MAX_POINTS}"
                )
            for number, label in enumerate(labels, start=1):
                if not label:
                    raise ValueError(f"label {number} is empty: give every point a word")
                if len(label) > MAX_WORD:
                    raise ValueError(
                        f"label {number} is too long: keep it to {MAX_WORD} characters"
                    )
            folded = [label.casefold() for label in labels]
            if twice := next((la for la, f in zip(labels, folded) if folded.count(f) > 1), None):
                raise ValueError(f"the label {twice!r} is given twice")
            if (low, high) != (1, len(labels)):
                raise ValueError(
                    f"a scale of labels numbers its points 1 to {len(labels)}: leave low and "
                    "high out"
                )
            if self.low_word or self.high_word:
                raise ValueError("a scale of labels has no end words: its labels are its words")
            return self
        if max(abs(low), abs(high)) > END_LIMIT:
            raise ValueError(
                f"the ends of a scale are whole numbers from -{END_LIMIT} to {END_LIMIT}"
            )
        if low >= high:
            raise ValueError(f"the lowest score ({low}) must be below the highest ({high})")
        if high - low + 1 > MAX_POINTS:
            raise ValueError(
                f"{high - low + 1} points from {low} to {high} are too many to score by eye: "
                f"keep it to {MAX_POINTS} (e.g. 0 to 10)"
            )
        for end in ("low", "high"):
            if len(getattr(self, f"{end}_word")) > MAX_WORD:
                raise ValueError(
                    f"the word for the {end} end is too long: keep it to {MAX_WORD} characters"
                )
        return self

    @property
    def points(self) -> list[int]:
        return list(range(self.low, self.high + 1))

    def holds(self, score: object) -> bool:
        return (
            isinstance(score, int)
            and not isinstance(score, bool)
            and self.low <= score <= self.high
        )

    def label(self, score: int) -> str:
        """A point as people read it: its label, or its number with the end's word."""
        if self.labels:
            return self.labels[score - self.low]
        word = {self.low: self.low_word, self.high: self.high_word}.get(score, "")
        return f"{score} {word}" if word else str(score)

    def describe(self) -> str:
        """The whole scale in a few words: "1 (poor) to 5 (good)", "fail or pass"."""
        if self.labels:
            return ", ".join(self.labels[:-1]) + f" or {self.labels[-1]}"

        def end(score: int, word: str) -> str:
            return f"{score} ({word})" if word else str(score)

        return f"{end(self.low, self.low_word)} to {end(self.high, self.high_word)}"

    def share(self, score: float) -> float:
        """Where a score lies on the scale: 0 at the lowest point, 1 at the highest."""
        return (score - self.low) / (self.high - self.low)

    def nearest(self, share: float) -> int:
        """The point at this share of the scale (a half rounds up)."""
        return min(self.high, max(self.low, self.low + int(share * (self.high - self.low) + 0.5)))

    def document(self) -> dict:
        """The scale as files carry it: only what it says."""
        if self.labels:
            return {"labels": list(self.labels)}
        found: dict[str, Any] = {"low": self.low, "high": self.high}
        return found | {k: v for k in ("low_word", "high_word") if (v := getattr(self, k))}


# The model judge's scale; the default of every eval set, and of a run in none.
JUDGE_SCALE = ScoreScale(low=1, high=5, low_word="poor", high_word="good")


def scale_from(data: Any) -> ScoreScale:
    """A scale from a document (a file's, a form's); ScaleError says what is wrong."""
    if isinstance(data, ScoreScale):
        return data
    try:
        return ScoreScale.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise ScaleError(
            f"The score scale is not usable: {where + ': ' if where else ''}{message}."
        ) from None
