"""What a question must be before a run starts on it: not empty, not past the cap.

Why here, in the service: the Run page, the command line, follow-up messages and
experiments all start runs through the run service, so one check covers them all. A
question is copied into the run's state, its events, its checkpoints and every prompt:
a 5 MB question once added 55.6 MB to disk.
"""

from __future__ import annotations

from graph.settings import Settings


def checked_question(text: str | None, settings: Settings, what: str = "question") -> str:
    """``text`` stripped, or ValueError saying in a sentence why no run may start on it."""
    text = (text or "").strip()
    if not text:
        raise ValueError(f"The {what} is empty: type a {what} to run.")
    cap = settings.max_question_chars
    if len(text) > cap:
        raise ValueError(
            f"The {what} is {len(text):,} characters long; a {what} may have at most "
            f"{cap:,} (STEPWISE_MAX_QUESTION_CHARS)."
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"The {what} holds bytes that are not UTF-8 text.") from None
    return text
