"""Leakage Lab core: every computation of the app, as a library. Never imports streamlit."""
