"""Tools the agents can call (pure Python, no Streamlit)."""
