"""The shipped systems' views (``ui.views`` registers them)."""
