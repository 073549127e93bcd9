"""Memorisation in bits on each scenario (``docs/memorisation-in-bits.md``): ``inextractability``
with the scenario's preset and ``--sigma 1`` (the bound's L(p0) had its fine-tune been DP-SGD at
σ = 1 with the same q and steps), and each planted phrase's b and p_z beside its copies."""

from __future__ import annotations

import time

from figures.runs import run_preset

SIGMA = 1.0   # the what-if: the scenario's q and steps at σ = 1


def _copies(scenario: str) -> dict[str, int]:
    """Each planted phrase's copies in the training set, and the secret's."""
    from core.demo import paths, presets
    from core.demo.config import SECRET_PROMPT

    if scenario == "demo":
        manifest = paths.load_manifest()
        return {c.phrase: c.count for c in manifest.canaries} | {
            SECRET_PROMPT: manifest.config.secret_count}
    summary = presets.scenario_build(scenario)
    from core.demo.realistic import CONFIGS
    config = CONFIGS[scenario]()
    return {phrase: count for phrase, count in summary["canaries"]} | {
        SECRET_PROMPT: config.secret_count}


def _pair_row(pair, copies: dict[str, int]) -> dict:
    """A phrase or pair: its copies (a canary after its first word counts the canary's)."""
    whole = pair.prefix + pair.suffix
    count = next((n for text, n in copies.items() if whole.startswith(text)
                  or text == pair.prefix), None)
    return {"prefix": pair.prefix, "suffix": pair.suffix, "copies": count, "b": pair.b,
            "log2_p": pair.log2_p, "samples": pair.samples_50, "bound": pair.dp_bound_bits,
            "prior": pair.log2_p_reference, "learnt": pair.learnt_bits,
            "prior_bound": pair.prior_bound_bits}


def measure_inextractability(scenario: str = "demo") -> dict:
    from core import sources

    preset = sources.preset("inextractability", scenario)
    started = time.perf_counter()
    result = run_preset("inextractability", scenario, sigma=SIGMA)
    return {"scenario": scenario, "reference": preset.get("reference", ""),
            "window": result.window, "m": result.rank_threshold,
            "q": preset["q"], "steps": preset["steps"], "sigma": SIGMA, "b": result.b,
            "windows": result.windows, "texts": result.texts, "skipped": result.skipped,
            "greedy_windows": result.greedy_windows, "greedy_fraction": result.greedy_fraction,
            "pairs": [_pair_row(pair, _copies(scenario)) for pair in result.pairs],
            "seconds": round(time.perf_counter() - started, 1)}


def _short(text: str, words: int = 3) -> str:
    parts = text.strip().split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def _pair_cell(row: dict) -> str:
    if not row["prefix"]:
        return f"\"{_short(row['suffix'])}\", whole"
    return f"\"{_short(row['prefix'])}\" → \"{_short(row['suffix'])}\""


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def markdown_inextractability(f: dict) -> str:
    preset = f"--preset {f['scenario']}"
    reference = f"`{f.get('reference') or 'no reference'}`"
    corpus = (f"{f['texts']:,} texts ({f['skipped']:,} shorter than l), {f['windows']:,} windows of "
              f"l = {f['window']} tokens (m = {f['m']}): b = {f['b']:.2f} bits, "
              f"{f['greedy_windows']:,} greedy-extractable ({f['greedy_fraction']:.1%})"
              if f["windows"] else "no window")
    rows = "\n".join(
        f"| {_pair_cell(r)} | {r['copies'] if r['copies'] is not None else '—'} | {r['b']:.2f} | "
        f"{r['log2_p']:.2f} | {r['samples']:.3g} | {_cell(r['bound'])} | "
        f"{_cell(r.get('prior'))} | {_cell(r.get('learnt'))} | {_cell(r.get('prior_bound'))} |"
        for r in f["pairs"])
    return (f"`python -m core inextractability {preset} --sigma {f['sigma']:g} --json` "
            f"(q = {f['q']:.4g}, {f['steps']:,} steps; {f['seconds']} s): {corpus}.\n\n"
            "| phrase or pair | copies in training | b (bits) | log2 p_z | n for P ≥ 0.5 | "
            f"L(p0 = 2^−b) at σ = {f['sigma']:g} | log2 p0 under {reference} | bits learnt | "
            f"L(p0) of that prior at σ = {f['sigma']:g} |\n|---|---|---|---|---|---|---|---|---|"
            f"\n{rows}\n")
