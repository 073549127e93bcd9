"""Cost before Run: a run's estimated time and memory next to its Run button (``core.cost``).

Above the confirmation threshold (``$LEAKAGE_LAB_CONFIRM_MINUTES``, default 30 minutes) the
page asks first: Run stays disabled until "Run anyway" is ticked; above the operator's budget
(``core.cost.job_budget``) Run stays disabled and the page says why. Data the estimate finds
unusable (``DataError``: a file of other columns, rows the model cannot render) keeps Run
disabled with the reader's message, since the run would fail the same way; a run that cannot be
estimated for another reason (a model not here yet) says why and is left to run.
"""

from __future__ import annotations

import logging
from typing import Any

import streamlit as st

from core import cost, paths
from core.cost import job_budget as budget
from core.errors import DataError, UserError
from core.specs import AttackSpec
from ui.documents import labelled
from ui.text import plain

logger = logging.getLogger(__name__)


@st.cache_data(ttl=60, show_spinner=False, max_entries=64)
def _estimate(_spec: AttackSpec, name: str, config: Any) -> cost.Estimate | None:
    """The estimate, kept a minute per config: a page's reruns recompute nothing. It reads what
    a job of the page may read, no other server file."""
    with paths.confined():
        return cost.estimate(_spec, config)


def _details(estimate: cost.Estimate) -> str:
    parts = [f"- {plain(what)}: {cost.duration(seconds)}" for what, seconds in estimate.parts]
    notes = [f"- assumed: {plain(note)}" for note in estimate.assumptions]
    return "\n".join(parts + notes)


def cost_gate(spec: AttackSpec, config: Any | None, *, key: str) -> bool:
    """One line of estimate for running ``spec`` on ``config``; whether Run may be enabled
    (not on unusable data, nor until "Run anyway" is ticked for a run estimated above the
    threshold)."""
    if config is None:
        return True
    try:
        estimate = _estimate(spec, spec.name, config)
    except DataError as err:   # the run would stop on it: say it now, naming the field
        st.error(plain(labelled(spec, vars(config), str(err))), icon=":material/block:")
        return False
    except UserError as err:
        st.caption(f"No estimate: {plain(err)}")
        return True
    except Exception:   # noqa: BLE001 - an estimate never stops a page or a run
        logger.exception("no estimate for %s", spec.name)
        st.caption("No estimate for this run (see the server's log).")
        return True
    if estimate is None:
        return True
    try:   # the server would refuse it: say so now
        refusal = budget.over_budget(estimate)
    except UserError as err:   # the operator's variable is not a number
        refusal = str(err)
    if refusal:
        st.error(plain(refusal[0].upper() + refusal[1:]), icon=":material/block:")
        return False
    line = f"Estimated: {cost.summary(estimate)}."
    limit = cost.confirm_seconds()
    if estimate.seconds <= limit:
        st.caption(line, help=_details(estimate))
        return True
    st.warning(f"{line} That is longer than {cost.duration(limit)}: lower the sizes, or "
               "confirm to run it anyway.", icon=":material/schedule:")
    return st.checkbox("Run anyway", key=f"{key}-run-anyway", help=_details(estimate))
