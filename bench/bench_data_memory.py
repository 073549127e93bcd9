"""Peak memory of reading a fine-tuner's data (issue #41): a Parquet file and a ``datasets``
``save_to_disk`` folder of conversations, each about ``--mb`` MB on disk, read by
``core.readers.data.read_table`` (what every attack's reader calls) in a fresh process. Prints, for each,
its size, what the reader did (rows read, or its refusal) and the peak resident memory above
the process's own before the read (``resource.getrusage``), as a multiple of the file's size:
the goal is under 3x. A plain-text JSONL file of the same rows is the baseline.

    python -m bench.bench_data_memory [--mb 400]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

WORDS = ("the", "account", "reply", "support", "thanks", "card", "order", "please", "number",
         "refund", "address", "delivery", "my", "is", "not", "working", "again", "today")
ROWS_PER_GROUP = 20_000


def _conversations(rng: np.random.Generator, n: int) -> list[dict]:
    """``n`` support conversations of random words (they compress as real text roughly does)."""
    def sentence(length: int) -> str:
        return " ".join(WORDS[i] for i in rng.integers(len(WORDS), size=length)) + \
            f" {int(rng.integers(10**9))}."

    return [{"messages": [{"role": "user", "content": sentence(20)},
                          {"role": "assistant", "content": sentence(40)}],
             "user_id": f"u{int(rng.integers(10**6))}"} for _ in range(n)]


def write_files(folder: Path, megabytes: int) -> dict[str, Path]:
    """A Parquet file of about ``megabytes`` MB, the same rows as a datasets folder and JSONL."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng, parquet = np.random.default_rng(0), folder / "train.parquet"
    jsonl, arrow = folder / "train.jsonl", folder / "saved"
    arrow.mkdir()
    writer = stream = None
    with open(jsonl, "w", encoding="utf-8") as lines:
        while writer is None or parquet.stat().st_size < megabytes * 2**20:
            rows = _conversations(rng, ROWS_PER_GROUP)
            table = pa.Table.from_pylist(rows)
            if writer is None:
                writer = pq.ParquetWriter(str(parquet), table.schema)
                stream = pa.ipc.new_stream(str(arrow / "data-00000-of-00001.arrow"), table.schema)
            writer.write_table(table)
            stream.write_table(table)
            lines.writelines(json.dumps(r) + "\n" for r in rows)
    writer.close()
    stream.close()
    (arrow / "state.json").write_text(json.dumps(
        {"_data_files": [{"filename": "data-00000-of-00001.arrow"}]}), encoding="utf-8")
    return {"parquet": parquet, "datasets folder": arrow, "jsonl": jsonl}


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size


MEASURE = """
import json, resource, sys
from core.readers.data import read_table
from core.errors import UserError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    outcome = f"read {len(read_table(sys.argv[1])):,} rows"
except UserError as err:
    outcome = f"refused: {err}"
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"outcome": outcome, "peak_kb": after - before}))
"""


def measure(path: Path) -> dict:
    """Peak resident memory of reading ``path`` in a fresh process, above its start."""
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True,
                          text=True, check=True, cwd=Path(__file__).parent.parent)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=400, help="size of the Parquet file (MB)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in write_files(Path(tmp), args.mb).items():
            size, found = _bytes(path), measure(path)
            ratio = found["peak_kb"] * 1024 / size
            print(f"{name:16} {size / 2**20:8.0f} MB  peak {found['peak_kb'] / 2**10:8.0f} MB "
                  f"= {ratio:4.2f}x  {found['outcome'][:140]}")


if __name__ == "__main__":
    main()
