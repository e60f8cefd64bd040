"""The app's pages, one Streamlit script each (``app.py`` lists them). Thin: they lay out
widgets and call ``ui`` and ``graph.service``."""
