"""Streamlit-side helpers of the app: cached services, shared widgets, and the page data
functions (plain Python, timed by bench/ui_latency.py). The engine never imports this."""
