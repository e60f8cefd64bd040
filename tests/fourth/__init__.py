"""A tiny fourth system, defined in the tests to show what adding a system takes: this
package (exporting ``SYSTEM``) and one line registering it (``graph/registry.py`` for a
shipped system; the tests call ``register`` instead). No page, no engine module and no
other system changes for it."""

from tests.fourth.system import SYSTEM

__all__ = ["SYSTEM"]
