"""The Evals page's parts: its tabs (``sets_tab``, ``experiment_tab``, ``results_tab``,
with the two-runs comparison in ``two_runs``, ``review_tab`` and ``forks_tab``; the
experiment picker two of them share in ``experiment_picker``) and the page's data rules
without Streamlit (``view``). Every session-state key here starts with ``evals:``: the
Evals page owns them."""

SETS, NEW, RESULTS = "Eval sets", "Run an experiment", "Compare variants"
REVIEW = "Review blind"  # people judge two answers at a time (review_tab)
FORKS = "Fork and parent"  # a run forked with another prompt beside its parent
TAB = "evals:tab"  # the selected tab; starting an experiment moves to the results


def flash_key(tab: str) -> str:
    """Where a tab's button leaves its message (``widgets.say``) for the tab to show."""
    return f"evals:flash:{tab}"
