"""Stepwise's engine: the hosted multi-agent systems, their models, tools and runs.

Importable and testable without Streamlit; the app's pages only call into it.
"""
