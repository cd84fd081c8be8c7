"""Seeing and trusting a run: its output folder read back, the report's data and its HTML page,
evaluation against labels and the tuning sweep."""
