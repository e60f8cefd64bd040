"""Libraries only a model server needs, imported when used (issue 33.7).

The OpenAI client (``openai``, ``langchain_openai``) takes a second or more to import; an
offline run on the scripted model never needs it, so modules import it inside the
functions that talk to a server. Code that only asks whether an error is one of the
client's checks ``openai_loaded()`` first: no error can be an instance of a class that was
never imported, and once it is, the import inside the function is free.
"""

from __future__ import annotations

import sys


def openai_loaded() -> bool:
    """Whether something has imported the OpenAI client (a server model was made)."""
    return "openai" in sys.modules
