"""Streamlit helpers shared by the pages (the only place besides app_pages/ that imports streamlit)."""
