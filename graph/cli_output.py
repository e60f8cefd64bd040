"""How the command line writes a line: terminal-safe, flushed, and quiet when its reader
went away. Light on purpose (the standard library only): ``graph.cli`` prints its first
line with it before the engine is imported."""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import TextIO

# Terminal control sequences: CSI (colours, cursor moves, "clear screen"), OSC (window
# titles, hyperlinks, clipboard writes), DCS/SOS/PM/APC strings and two-byte ESC forms, in
# their 7-bit and 8-bit spellings; then any other control character but newline and tab.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: object) -> str:
    """``text`` as the terminal may show it: a question, a model's answer or a server's
    error can hold escape sequences that recolour, retitle or clear the terminal, or
    write to its clipboard. Lone surrogates (bytes of argv that are not UTF-8) become
    "?" instead of failing the print."""
    text = _CONTROLS.sub("", _ESCAPES.sub("", str(text)))
    return text.encode("utf-8", "replace").decode("utf-8")


def say(*parts: object, file: TextIO | None = None) -> None:
    """``print`` of text that may come from a question, a model or a server."""
    emit(" ".join(terminal_safe(p) for p in parts), file or sys.stdout)


def emit(text: str, file: TextIO) -> None:
    """One line out. A reader that went away (``python -m graph run Q | head -1``) is not
    an error: the rest of the output goes nowhere and the run goes on to its end in the
    store, as it would with the terminal closed, instead of stopping on a traceback.
    Each line is flushed, so none is left for the interpreter's last flush to fail on."""
    try:
        print(text, file=file, flush=True)
    except BrokenPipeError:
        logging.getLogger(__name__).info("the reader of the output went away")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, file.fileno())  # the interpreter's last flush must not fail either
        os.close(devnull)
