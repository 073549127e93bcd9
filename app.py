"""Leakage Lab: `streamlit run app.py`. Navigation only; every page lives in app_pages/."""

from pathlib import Path

import streamlit as st

from core.registry import load_plugins
from ui.guard import page_guard, require_access
from ui.nav import SECTIONS
from ui.scaleout import scale_out_setting

ASSETS = Path(__file__).resolve().parent / "assets"
# the favicon is the app's own file: a :material/...: one is fetched from Google's font server
st.set_page_config(page_title="Leakage Lab", page_icon=str(ASSETS / "logo_icon.svg"), layout="wide")
require_access()
st.logo(str(ASSETS / "logo.svg"), icon_image=str(ASSETS / "logo_icon.svg"), size="large")

home = st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True)
navigation = {"": [home]}
for section, entries in SECTIONS.items():
    if entries:
        navigation[section] = [st.Page(e.path, title=e.title, icon=e.icon) for e in entries]
page = st.navigation(navigation, expanded=True)  # every page listed, the settings below
with page_guard(page.title):   # an exception no page handled: one line, no traceback
    load_plugins()              # installed third-party attacks (entry points), once
    page.run()
scale_out_setting()  # under the page's own sidebar controls; jobs read it from session state
