"""A report's rerun command, run as pasted into a fresh shell, and a model folder zipped as a
user uploads it: shared by the report tests (tests/core/test_report_rerun.py) and the browser's
end-to-end test."""

import html
import json
import os
import re
import shlex
import subprocess
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


def rerun_in_a_fresh_shell(command: str, out: Path, **variables: str) -> dict:
    """The report's rerun ``command`` pasted into a fresh shell in the tool's folder: no
    environment activated (the system's PATH), only the ``variables`` the report asks for set;
    its JSON result (its report written to ``out``)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
           "OMP_NUM_THREADS": "1", **variables}   # one thread: the tests' models are tiny
    done = subprocess.run(["bash", "-c", f"{command} --out {shlex.quote(str(out))} --json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)
