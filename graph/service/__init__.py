"""Running systems for people: the store (``store.py``), the run service that starts,
resumes and watches runs in threads (``run_service.py``, ``runs.py``), and evaluations
(``eval_sets.py``, ``experiments.py``, ``evals.py``). Shared by the pages and the
command line; never imports Streamlit. Importing it registers the shipped systems."""

import graph.registry  # noqa: F401  (registers the shipped systems with the kernel)
