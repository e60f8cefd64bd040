"""The kernel: what every hosted system is built on and the app relies on.

The ``System`` contract (``system.py``), the design a person edits (``design.py``), the
conversation layer and hooks wired around any system's graph (``conversation.py``,
``wiring.py``, ``hooks.py``, ``guardrail.py``), human approval (``approval.py``),
checkpoints and their timeline (``checkpoints.py``), model-use accounting
(``accounting.py``) and the graph drawing (``render.py``). It never imports a system:
``graph.registry`` names them.
"""
