"""Evals: fixed questions with checks (eval sets), prompt variants run on them
(experiments), and the comparison of what each variant's runs did. Each tab is a module
of ``ui/evals``."""

import streamlit as st

from ui import moved_tabs, widgets
from ui.evals import (
    FORKS,
    NEW,
    RESULTS,
    REVIEW,
    SETS,
    TAB,
    experiment_tab,
    forks_tab,
    results_tab,
    review_tab,
    sets_tab,
)

st.title("Evals")
st.markdown(
    "Tune prompts on questions that do not move. An **eval set** is a list of questions, "
    "each with checks a run passes or fails. An **experiment** runs every question with "
    "two or more **variants** (versions of the design's main prompts) and compares "
    "them: checks passed, steps, replans, LLM calls, tokens, cost and time. Its runs "
    "are ordinary runs, listed in History. A run forked with another prompt on the History "
    "page is compared with its parent on the last tab. People judge an experiment's answers "
    "blind, two at a time, on the Review tab."
)
widgets.store_or_stop()

sets, new, results, review, forks = moved_tabs.tabs([SETS, NEW, RESULTS, REVIEW, FORKS], key=TAB)
with sets:
    sets_tab.show()
with new:
    experiment_tab.show()
with results:
    results_tab.show()
with review:
    review_tab.show()
with forks:
    forks_tab.show()
