"""CPU time of `python -m core bounds ...` against a 5-line Opacus script computing the same ε.

Both run as fresh processes (what a user feels at the shell); the CPU time of the children
(user + system) is summed over several runs and printed with the ratio ours / Opacus'.
Run from the repository root: ``python -m bench.bench_cli_start``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile

RUNS = 5
OURS = [sys.executable, "-m", "core", "bounds", "--sigma", "0.6", "--q", "2.81e-4",
        "--steps", "186000", "--bits", "40", "--delta", "3e-7", "--json"]
OPACUS = """
from opacus.accountants import RDPAccountant
accountant = RDPAccountant()
accountant.history = [(0.6, 2.81e-4, 186000)]
print(accountant.get_epsilon(delta=3e-7))
"""


def cpu_seconds(command: list[str], env: dict) -> float:
    """Children's user + system CPU seconds of ``RUNS`` runs of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(RUNS):
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    env = dict(os.environ, LEAKAGE_LAB_HOME=tempfile.mkdtemp(prefix="bench-cli-"))
    ours = cpu_seconds(OURS, env)
    opacus = cpu_seconds([sys.executable, "-c", OPACUS], env)
    print(f"python -m core bounds: {ours / RUNS:.2f} s CPU per run")
    print(f"5-line Opacus script:  {opacus / RUNS:.2f} s CPU per run")
    print(f"ratio ours / Opacus:   {ours / opacus:.2f}x")


if __name__ == "__main__":
    main()
