"""The root of Stepwise's own exceptions.

Each module keeps the exception it raises (``DesignError``, ``ModelCallError``, ...), with
the built-in base callers already catch (``ValueError``, ``RuntimeError``); every one of
them also derives from ``StepwiseError``, so a caller can tell "Stepwise said no, in
words" from a bug with one ``except StepwiseError``. The message of a ``StepwiseError`` is
a sentence meant for a person.
"""

from __future__ import annotations


class StepwiseError(Exception):
    """An error Stepwise raises on purpose; its message is a sentence for a person."""
