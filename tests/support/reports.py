"""A report's rerun command, and a model folder zipped as a user uploads it: shared by the
report tests (tests/core/test_report_rerun.py) and the browser's end-to-end test."""

import html
import os
import re
import shlex
import zipfile
from pathlib import Path


def zipped(folder: Path, target: Path) -> Path:
    """A zip of a model folder, as a user makes one to upload it."""
    with zipfile.ZipFile(target, "w") as archive:
        for file in sorted(folder.rglob("*")):
            archive.write(file, file.relative_to(folder.parent))
    return target


def rerun_command(report: str) -> str:
    """The command a report's provenance gives to rerun it."""
    return html.unescape(re.search(r"To rerun:</p><pre class='rerun'>(.*?)</pre>", report).group(1))


def rerun_words(report: str) -> list[str]:
    """The report's rerun command as a shell splits and expands it (variables from the
    environment)."""
    return [os.path.expandvars(word) for word in shlex.split(rerun_command(report))]
