"""Home: what Leakage Lab is, and a link to every page."""

import streamlit as st

from ui.nav import SECTIONS

st.title("Leakage Lab")
st.markdown(
    "How much do machine-learning models leak about their training data? "
    "Compare differential-privacy guarantees against reconstruction attacks, and audit "
    "model checkpoints with real attacks: training-data extraction, differential rank "
    "between two snapshots, user inference and more. Every number here is also a CLI "
    "command: `python -m core --help`."
)
for section, entries in SECTIONS.items():
    if not entries:
        continue
    st.subheader(section)
    for entry in entries:
        st.page_link(entry.path, label=f"**{entry.title}** — {entry.blurb}", icon=entry.icon)
