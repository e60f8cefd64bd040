"""The experiment picker the Compare and Review tabs share: each keeps its own choice (a
key of its own), the newest experiment until one is picked or when the picked one is
gone (deleted since)."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from graph.service.store import ExperimentRecord
from ui.evals import setup_view


def pick_experiment(experiments: Mapping[str, ExperimentRecord], label: str, key: str) -> str:
    """The id of the experiment chosen in a selectbox labelled ``label`` under ``key``;
    ``experiments`` newest first, never empty."""
    if st.session_state.get(key) not in experiments:
        st.session_state[key] = next(iter(experiments))
    labels = {i: setup_view.experiment_label(record) for i, record in experiments.items()}
    return st.selectbox(label, list(experiments), key=key, format_func=labels.__getitem__)
