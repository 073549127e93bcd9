"""Model extraction: reverse-engineer a ReLU network from black-box queries.

Follows Rolnick & Kording, *Reverse-engineering deep ReLU networks* (ICML 2020), for a
target with one hidden layer, ``f(x) = V relu(W x + b) + c`` (64 inputs, H hidden, 10 logits).

1. Bends. Along a random line ``x(t) = a + t d`` the projected output ``g(t) = r . f(x(t))``
   (``r`` a random vector) is piecewise linear; it bends where the line crosses a neuron's
   hyperplane ``w_i . x + b_i = 0``. An interval whose two end slopes differ holds a bend:
   if the two end pieces, extended, meet at a point where ``g`` and its left and right slopes
   agree with them, that point is the (single) bend; otherwise the interval is halved
   (binary search).
2. Weights. Across the bend of neuron ``i`` the Jacobian jumps by the rank-1 matrix
   ``J+ - J- = sign(w_i . d) v_i w_i^T``: its top right singular vector is ``w_i`` up to
   scale and sign, and ``D u sign(u . d)`` is ``|c| v_i`` for ``w_i = c u`` with ``|u| = 1``
   (the output weights of the rescaled neuron). The bias follows from ``u . x* + beta = 0``.
3. Signs. A neuron with the wrong sign differs by the linear function ``a_i u_i^T x``, so
   ``J(x0) = J_all_plus(x0) - sum_{i negative} a_i u_i^T`` at any point ``x0``: a least-squares
   solve over the 640 Jacobian entries gives which neurons are negative; the output bias
   follows from one more query.

The network is recovered up to permutation and positive scaling of hidden neurons, which is
all a black box can tell (the slides' "permutation & scaling"). The defence rounds every
output to ``decimals`` decimals, which breaks the finite differences the attack relies on.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.optimize import linear_sum_assignment
from torch import nn

from core.runtime import Progress, is_cancelled, no_progress
from core.specs import AttackSpec, check_params, param
from core.labs.digits import N_CLASSES, N_FEATURES, load_digits, make_mlp, train_classifier

LINE_HALF_LENGTH = 100.0  # lines run over t in [-100, 100], far enough to cross most hyperplanes
GRID_INTERVALS = 64       # first split of each line before the binary search
SLOPE_STEP = 1e-5         # finite-difference step along a line
SIDE_STEP = 1e-3          # how far to each side of a bend the Jacobians are taken
JACOBIAN_STEP = 1e-6      # finite-difference step per input coordinate
MIN_WIDTH = 1e-9          # the binary search gives up on narrower intervals
RELATIVE_TOL = 1e-7       # "two values agree" up to this relative error
MATCH_TOL = 1e-2          # a true neuron counts as found when recovered to this relative error


@dataclass(frozen=True)
class ModelExtractionConfig:
    """Target width, attack effort and the rounding defence."""

    hidden: int = param(64, ge=1, le=512, widget="slider", label="hidden width H",
                        help="hidden neurons of the target 64-H-10 ReLU network")
    n_lines: int = param(4, ge=1, le=64, widget="slider", label="random lines",
                         help="random lines searched for bends")
    query_budget: int = param(200_000, ge=1_000, le=10**8, label="query budget",
                              help="the black box refuses queries beyond this many inputs")
    round_outputs: bool = param(False, label="defence: round the logits",
                                help="the black box rounds its logits to `decimals` decimals")
    decimals: int = param(4, ge=0, le=12, widget="slider", label="decimals kept",
                          help="decimals the rounding defence keeps")
    train_epochs: int = param(20, ge=0, le=200, help="training epochs of the target on the digits",
                              page="advanced")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the target, the lines and the mix")

    def __post_init__(self) -> None:
        check_params(self)


@dataclass
class NeuronRow:
    """One true neuron: whether it was found and how closely (relative errors after alignment)."""

    neuron: int
    found: bool
    recovered_index: int   # -1 when not found
    rel_error_in: float    # incoming weights and bias
    rel_error_out: float   # outgoing weights


@dataclass
class ModelExtractionResult:
    neurons_true: int
    neurons_found: int
    neurons_extracted: int        # recovered neurons, including spurious ones
    queries: int
    budget_exhausted: bool
    max_rel_error: float          # over found neurons, both layers (1.0 when none found)
    bits_of_precision: float      # -log2(max_rel_error)
    label_agreement: float        # extracted vs target argmax on all 1,797 digits
    max_logit_error: float        # max |logit difference| on all digits
    target_test_accuracy: float
    neurons: list[NeuronRow]
    true_rows: list[list[float]]       # every target neuron's [w, b] / |w|
    recovered_rows: list[list[float]]  # every recovered neuron's [w, b] (see ``neurons``)
    stopped_early: bool = False
    notes: list[str] = field(default_factory=list)


class _BudgetSpent(Exception):
    """The black box refused a query."""


class BlackBox:
    """Query access to ``f(x) = w2 relu(w1 x + b1) + b2`` (float64), counting inputs queried."""

    def __init__(self, w1, b1, w2, b2, *, budget: int, decimals: int | None = None):
        self._w1, self._b1, self._w2, self._b2 = w1, b1, w2, b2
        self.budget = budget
        self.decimals = decimals
        self.queries = 0

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(x)
        if self.queries + len(x) > self.budget:
            raise _BudgetSpent()
        self.queries += len(x)
        logits = np.maximum(x @ self._w1.T + self._b1, 0.0) @ self._w2.T + self._b2
        return logits if self.decimals is None else np.round(logits, self.decimals)


def _close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= RELATIVE_TOL * (1.0 + scale)


def find_bends(box: BlackBox, start: np.ndarray, direction: np.ndarray,
               mix: np.ndarray) -> list[float]:
    """Positions ``t`` of the bends of ``mix . f(start + t direction)`` on the line."""
    def g(ts: np.ndarray) -> np.ndarray:
        return box(start + np.outer(ts, direction)) @ mix

    def point(t: float) -> tuple[float, float, float]:
        """Value, left slope and right slope at ``t``."""
        below, here, above = g(np.array([t - SLOPE_STEP, t, t + SLOPE_STEP]))
        return here, (here - below) / SLOPE_STEP, (above - here) / SLOPE_STEP

    grid = np.linspace(-LINE_HALF_LENGTH, LINE_HALF_LENGTH, GRID_INTERVALS + 1)
    points = [point(t) for t in grid]
    stack = [(grid[i], grid[i + 1], points[i][0], points[i][2], points[i + 1][0], points[i + 1][1])
             for i in range(GRID_INTERVALS)]
    bends: list[float] = []
    while stack:
        lo, hi, g_lo, s_lo, g_hi, s_hi = stack.pop()
        scale = max(abs(g_lo), abs(g_hi))
        if _close(s_lo, s_hi, max(abs(s_lo), abs(s_hi))):
            continue  # one linear piece
        t_star = (g_hi - g_lo + s_lo * lo - s_hi * hi) / (s_lo - s_hi)
        if lo + SLOPE_STEP < t_star < hi - SLOPE_STEP:
            g_star, s_left, s_right = point(t_star)
            if (_close(g_star, g_lo + s_lo * (t_star - lo), scale) and _close(s_left, s_lo, abs(s_lo))
                    and _close(s_right, s_hi, abs(s_hi))):
                bends.append(float(t_star))
                continue
        if hi - lo < MIN_WIDTH:
            continue
        mid = 0.5 * (lo + hi)
        g_mid, s_left, s_right = point(mid)
        stack += [(lo, mid, g_lo, s_lo, g_mid, s_left), (mid, hi, g_mid, s_right, g_hi, s_hi)]
    return sorted(bends)


def jacobian(box: BlackBox, x: np.ndarray, step: float) -> np.ndarray:
    """Forward-difference Jacobian (10 x 64) of the black box at ``x`` (65 queries)."""
    outputs = box(np.vstack([x, x + step * np.eye(len(x))]))
    return (outputs[1:] - outputs[0]).T / step


def _neurons_on_line(box: BlackBox, start, direction, bends: list[float]):
    """(u, beta, a) for each bend on the line whose Jacobian jump is rank 1."""
    neurons = []
    for k, t in enumerate(bends):
        gaps = [abs(t - s) for s in bends[max(k - 1, 0):k + 2] if s != t]
        side = min([SIDE_STEP] + [0.3 * gap for gap in gaps])
        x_star = start + t * direction
        jump = (jacobian(box, x_star + side * direction, side * JACOBIAN_STEP / SIDE_STEP)
                - jacobian(box, x_star - side * direction, side * JACOBIAN_STEP / SIDE_STEP))
        _, sing, vt = np.linalg.svd(jump)
        if sing[0] == 0 or sing[1] > 1e-4 * sing[0]:
            continue  # not one neuron's bend (coinciding bends or a noisy black box)
        u = vt[0] * np.sign(vt[0][np.argmax(np.abs(vt[0]))])
        a = jump @ u * np.sign(u @ direction)
        neurons.append((u, -float(u @ x_star), a))
    return neurons


def _add_unique(found: list, candidates: list) -> None:
    for u, beta, a in candidates:
        if not any(np.linalg.norm(u - u2) < 1e-4 and abs(beta - beta2) < 1e-4 * (1 + abs(beta))
                   for u2, beta2, _ in found):
            found.append((u, beta, a))


def _solve_signs(box: BlackBox, us, betas, outs, x0: np.ndarray) -> np.ndarray:
    """+1/-1 per recovered neuron from the Jacobian at ``x0`` (see the module docstring)."""
    all_plus = (outs * ((us @ x0 + betas) > 0)) @ us            # sum_i [z_i > 0] a_i u_i^T
    basis = np.stack([np.outer(a, u).ravel() for a, u in zip(outs.T, us)], axis=1)
    negative, *_ = np.linalg.lstsq(basis, (all_plus - jacobian(box, x0, JACOBIAN_STEP)).ravel(),
                                   rcond=None)
    return np.where(negative > 0.5, -1.0, 1.0)


def _finish(box: BlackBox, found: list, x0: np.ndarray) -> tuple[np.ndarray, ...]:
    """Signs, then the extracted (w1, b1, w2, b2) from the recovered (u, beta, a) triples."""
    us, betas, outs = (np.array(v) for v in zip(*found))
    signs = _solve_signs(box, us, betas, outs.T, x0)
    bias_out = box(x0)[0] - outs.T @ np.maximum(signs * (us @ x0 + betas), 0.0)
    return signs[:, None] * us, signs * betas, outs.T, bias_out


@lru_cache(maxsize=4)
def train_target(hidden: int, epochs: int, seed: int) -> tuple[np.ndarray, ...]:
    """The target's (w1, b1, w2, b2) in float64, trained on the digits (cached, read-only)."""
    digits = load_digits()
    model = make_mlp([N_FEATURES, hidden, N_CLASSES], seed=seed)
    train_classifier(model, digits.x_train, digits.y_train, epochs=epochs, seed=seed)
    layers = [m for m in model if isinstance(m, nn.Linear)]
    weights = tuple(p.detach().double().numpy() for layer in layers
                    for p in (layer.weight, layer.bias))
    for w in weights:
        w.setflags(write=False)
    return weights


def _alignment(w1, b1, w2, rec_w1, rec_b1, rec_w2) -> list[NeuronRow]:
    """Match true to recovered neurons (Hungarian on the incoming-weight error)."""
    norms = np.linalg.norm(w1, axis=1, keepdims=True)
    true_rows = np.hstack([w1, b1[:, None]]) / norms
    true_out = w2.T * norms                                      # H x 10
    rec_rows = np.hstack([rec_w1, rec_b1[:, None]])
    err_in = (np.linalg.norm(true_rows[:, None] - rec_rows[None], axis=2)
              / np.linalg.norm(true_rows, axis=1)[:, None])
    err_out = (np.linalg.norm(true_out[:, None] - rec_w2.T[None], axis=2)
               / np.maximum(np.linalg.norm(true_out, axis=1)[:, None], 1e-300))
    rows = [NeuronRow(j, False, -1, 1.0, 1.0) for j in range(len(w1))]
    if len(rec_rows):
        for j, i in zip(*linear_sum_assignment(err_in)):
            found = bool(err_in[j, i] < MATCH_TOL)
            rows[j] = NeuronRow(int(j), found, int(i) if found else -1,
                                float(err_in[j, i]), float(err_out[j, i]))
    return rows


def run(config: ModelExtractionConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> ModelExtractionResult:
    """Train the target, extract it through the black box, and score the extraction."""
    progress(0.0, "training the target network")
    w1, b1, w2, b2 = train_target(config.hidden, config.train_epochs, config.seed)
    box = BlackBox(w1, b1, w2, b2, budget=config.query_budget,
                   decimals=config.decimals if config.round_outputs else None)
    rng = np.random.default_rng(config.seed)
    centre = load_digits().x_train.mean(axis=0).astype(np.float64)
    mix = rng.standard_normal(N_CLASSES)
    found: list = []
    notes: list[str] = []
    stopped_early = budget_exhausted = False
    extracted_layers = None
    try:
        for line in range(config.n_lines):
            if is_cancelled(cancel):
                stopped_early = True
                break
            direction = rng.standard_normal(N_FEATURES)
            direction /= np.linalg.norm(direction)
            start = centre + 0.1 * rng.standard_normal(N_FEATURES)
            bends = find_bends(box, start, direction, mix)
            _add_unique(found, _neurons_on_line(box, start, direction, bends))
            progress(0.1 + 0.8 * (line + 1) / config.n_lines,
                     f"line {line + 1}/{config.n_lines}: {len(bends)} bends, "
                     f"{len(found)} neurons so far, {box.queries:,} queries")
        if found:
            extracted_layers = _finish(box, found, centre)
    except _BudgetSpent:
        budget_exhausted = True
        notes.append(f"the query budget of {config.query_budget:,} ran out")
        if found:
            notes.append("no budget was left to recover the signs and the output bias")
    if extracted_layers is None:
        extracted_layers = (np.zeros((0, N_FEATURES)), np.zeros(0), np.zeros((N_CLASSES, 0)),
                            np.zeros(N_CLASSES))
    progress(0.95, "scoring the extracted network")
    scores = _score((w1, b1, w2, b2), extracted_layers)
    progress(1.0, "done")
    return ModelExtractionResult(
        neurons_true=config.hidden, queries=box.queries, budget_exhausted=budget_exhausted,
        stopped_early=stopped_early, notes=notes, **scores)


def _score(target_layers: tuple[np.ndarray, ...],
           extracted_layers: tuple[np.ndarray, ...]) -> dict:
    """The extraction against the target: aligned neurons and their errors, and the agreement
    of the two networks' logits on every digit."""
    w1, b1, w2, b2 = target_layers
    rec_w1, rec_b1, rec_w2, bias_out = extracted_layers
    digits = load_digits()
    x_all = digits.x_all.astype(np.float64)
    target = np.maximum(x_all @ w1.T + b1, 0) @ w2.T + b2
    extracted = np.maximum(x_all @ rec_w1.T + rec_b1, 0) @ rec_w2.T + bias_out
    rows = _alignment(w1, b1, w2, rec_w1, rec_b1, rec_w2)
    matched = [r for r in rows if r.found]
    max_err = max((max(r.rel_error_in, r.rel_error_out) for r in matched), default=1.0)
    true_rows = np.hstack([w1, b1[:, None]]) / np.linalg.norm(w1, axis=1, keepdims=True)
    rec_rows = np.hstack([rec_w1, rec_b1[:, None]])
    test_logits = np.maximum(digits.x_test @ w1.T + b1, 0) @ w2.T + b2
    return dict(
        neurons_found=len(matched), neurons_extracted=len(rec_w1), max_rel_error=float(max_err),
        bits_of_precision=float(-np.log2(max(max_err, 2.0 ** -60))),
        label_agreement=float((target.argmax(1) == extracted.argmax(1)).mean()),
        max_logit_error=float(np.abs(target - extracted).max()),
        target_test_accuracy=float((test_logits.argmax(1) == digits.y_test).mean()),
        neurons=rows, true_rows=true_rows.tolist(), recovered_rows=rec_rows.tolist())


def plane_lines(rows: list[list[float]], seed: int = 0) -> np.ndarray:
    """Each neuron's boundary ``w . x + b = 0`` in a 2-D slice of input space.

    The slice is ``x = m + alpha p + beta q`` with ``m`` the mean training digit and ``p, q``
    orthonormal random directions (``seed``); a row ``[w, b]`` becomes ``(w.p, w.q, w.m + b)``,
    the line ``A alpha + B beta + C = 0``. Returns an (n, 3) array.
    """
    rng = np.random.default_rng(seed)
    p, q = np.linalg.qr(rng.standard_normal((N_FEATURES, 2)))[0].T
    m = load_digits().x_train.mean(axis=0)
    rows_array = np.asarray(rows, dtype=np.float64).reshape(-1, N_FEATURES + 1)
    w, b = rows_array[:, :-1], rows_array[:, -1]
    return np.column_stack([w @ p, w @ q, w @ m + b])


def tiny_config() -> ModelExtractionConfig:
    return ModelExtractionConfig(hidden=8, n_lines=2, train_epochs=2)


SPEC = AttackSpec(name="model-extraction", title="Model extraction (ReLU reverse-engineering)",
                  config_type=ModelExtractionConfig,
                  result_type=ModelExtractionResult, run=run, tiny_config=tiny_config,
                  headline=lambda r: {"neurons_found": r.neurons_found, "queries": r.queries,
                                      "max_rel_error": r.max_rel_error,
                                      "label_agreement": r.label_agreement,
                                      "max_logit_error": r.max_logit_error})

