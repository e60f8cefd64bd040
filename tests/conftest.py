"""Shared test setup: every test session gets its own STEPWISE_HOME and no model endpoint.

Set before any test imports the engine, because ``get_settings()`` reads the
environment once per process.
"""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_HOME = tempfile.mkdtemp(prefix="stepwise-test-")
os.environ["STEPWISE_HOME"] = _HOME
for _var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TAVILY_API_KEY", "STEPWISE_PROVIDER",
             "STEPWISE_STRUCTURED_OUTPUT"):
    os.environ.pop(_var, None)
