"""A tiny fourth system, defined in the tests to show what adding a system takes: this
package (exporting ``SYSTEM`` and its ``VIEW``) and a line registering each
(``graph/registry.py`` and ``ui/views.py`` for a shipped system; the tests call
``register`` and ``register_view`` instead). No page, no engine module and no
other system changes for it."""

from tests.fourth.system import SYSTEM
from tests.fourth.view import RelayView as VIEW

__all__ = ["SYSTEM", "VIEW"]
