"""A toy spec for tests of the generic machinery (jobs, CLI generator, forms): every field type.

``GATE`` holds a run at its half-way report until the test sets it (or cancels the run).
"""

import threading
from dataclasses import dataclass, field
from typing import Literal

from core.runtime import Cancelled
from core.specs import AttackSpec, check_params, param

GATE = threading.Event()


@dataclass(frozen=True)
class ToyConfig:
    n: int = param(2, ge=1, le=100, flags=("--count",), help="rows to make")
    scale: float = param(1.0, gt=0.0, help="row scale")
    mode: Literal["fast", "slow"] = param("fast", help="how to go")
    modes: tuple[Literal["a", "b"], ...] = param(("a",), help="several modes")
    sizes: tuple[int, ...] = param((), ge=1, le=64, help="sizes")
    wait: bool = param(False, help="hold at half way until GATE is set")
    model: str = param("", help="a model source")
    temperature: float | None = param(None, help="optional temperature")

    def __post_init__(self):
        check_params(self)


@dataclass
class Row:
    x: int
    value: float


@dataclass
class ToyResult:
    rows: list[Row]
    total: float
    stopped_early: bool = False
    notes: list[str] = field(default_factory=list)


def run(config: ToyConfig, *, progress=lambda *a, **k: None, cancel=None) -> ToyResult:
    rows = [Row(1, config.scale)]
    progress(0.5, "half done", partial={"rows": [{"x": 1}]})
    if config.wait:
        while not GATE.wait(0.01):
            if cancel is not None and cancel.is_set():
                return ToyResult(rows, config.scale, stopped_early=True)
    elif cancel is not None and cancel.is_set():
        raise Cancelled()
    rows += [Row(i, i * config.scale) for i in range(2, config.n + 1)]
    progress(1.0, "done")
    return ToyResult(rows, sum(r.value for r in rows))


SPEC = AttackSpec(name="toy", title="Toy", config_type=ToyConfig,
                  result_type=ToyResult, run=run, tiny_config=lambda: ToyConfig(n=1),
                  describe=lambda c: f"toy with {c.n} rows")


def register(monkeypatch) -> None:
    """Put the toy spec in the registry for one test (runs of kind "toy" read back typed)."""
    from core import registry

    monkeypatch.setitem(registry.ENTRIES, "toy", registry.Entry("toy_spec", "a toy"))
