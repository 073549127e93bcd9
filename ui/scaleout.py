"""The sidebar's scale-out setting: score a page's runs on the Ray cluster the operator named.

A browser never names a cluster (the server would connect to it and send it this checkout): the
operator starts the app with ``LEAKAGE_LAB_RAY=auto`` (this machine's cluster, else a local one)
or ``LEAKAGE_LAB_RAY=host:port``, and a user can then turn it on for their runs and pick the
number of workers per model. Without the variable the sidebar says how to enable it.
"""

from __future__ import annotations

import os

import streamlit as st

from core.scaleout import ScaleOut

RAY_ENV = "LEAKAGE_LAB_RAY"
MAX_WORKERS = 4096


def operator_address() -> str:
    return os.environ.get(RAY_ENV, "").strip()


def scale_out_setting() -> None:
    """The sidebar's "Scale-out" expander."""
    with st.sidebar.expander("Scale-out (Ray)", icon=":material/hub:"):
        address = operator_address()
        if not address:
            st.caption(f"Runs score in this process. To spread scoring over a Ray cluster, start "
                       f"the app with `{RAY_ENV}=auto` (or `{RAY_ENV}=HOST:PORT`).")
            return
        st.toggle(f"Score on Ray ({address})", key="ray_on",
                  help="Each model is loaded once per worker; the texts are cut into shards.")
        st.number_input("Workers per model", 0, MAX_WORKERS, 0, key="ray_workers",
                        help="0: one per GPU of the cluster, else one per CPU",
                        disabled=not st.session_state.get("ray_on"))


def chosen_scale_out() -> ScaleOut | None:
    """The setting as the job runner takes it (None: in process)."""
    address = operator_address()
    if not address or not st.session_state.get("ray_on"):
        return None
    return ScaleOut(address, int(st.session_state.get("ray_workers") or 0))
