"""The audit report: one self-contained HTML file (plotly.js inlined once, no network), with a
verdict per attack in plain words, each attack's key tables and figures, the training run's DP
guarantee and reconstruction bound when its σ, q and steps are given, and the provenance: model
file hashes and cards, data hashes, every config, package versions, seeds, the tool's commit
and the timings. For a PDF, the browser's Print → Save as PDF (the page has print styles):
no PDF library is added for a file every browser prints.
"""

from __future__ import annotations

import html
import json
import shlex
from pathlib import Path

import plotly.offline

from core.audit.sections import BUILDERS, table

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #e8590c; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .9em; width: 100%; }
th, td { border: 1px solid #ddd; padding: .3em .5em; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } .verdict { background: #fff4e6; padding: .6em .8em; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: .8em; }
.muted { color: #666; font-size: .9em; }
@media print { .noprint { display: none; } section { break-inside: avoid-page; } }
"""
DP_BITS = (16, 32, 64, 128)


def dp_section(config) -> str:
    """ε at δ, L(p0) and min h for a few secret lengths, and what the run caps for any attack."""
    if not config.sigma:
        return ("<p class='muted'>The training run's σ, q and steps were not given: no DP "
                "guarantee to report.</p>")
    from core.bounds.risk import advantage_cap, tpr_cap
    from core.bounds.summary import summarize

    rows = []
    for bits in DP_BITS:
        s = summarize(sigma=config.sigma, q=config.q, steps=config.steps, bits=bits,
                      delta=config.delta)
        rows.append((bits, f"{s.leakage_bits:.2f}", f"{s.traditional_bits:.2f}",
                     f"2^{s.posterior_log2_bound:.1f}"))
    caps = tpr_cap(config.sigma, config.q, config.steps, [0.001, 0.01, 0.05])
    return (f"<p>DP-SGD with σ = {config.sigma:g}, q = {config.q:g}, {config.steps:,} steps: "
            f"<b>ε = {s.epsilon:.3g}</b> at δ = {config.delta:g} (Balle et al. 2020, at the "
            "optimal order).</p>"
            + table(("secret bits b", "L(p0) bits (Stock et al.)", "min h bits (Mironov et al.)",
                     "attacker's chance ≤"), rows)
            + "<p>No membership attack on this run can reach a TPR above "
            + ", ".join(f"{c:.4f} at {f:.1%} FPR" for f, c in zip((0.001, 0.01, 0.05), caps))
            + f"; its advantage (TPR − FPR) is at most "
            f"{advantage_cap(config.sigma, config.q, config.steps):.4f}.</p>")


def input_arguments(config) -> list[str]:
    """The command-line words of an audit's shared inputs (``AuditInputs``), the seed included."""
    args = [a for name, value in (("--reference", config.reference), ("--corpus", config.corpus),
                                  ("--users", config.users), ("--members", config.members))
            if value for a in (name, value)]
    if config.attacks:
        args += ["--attacks", ",".join(config.attacks)]
    for setting in config.settings:
        args += ["--set", setting]
    if config.sigma:
        args += ["--sigma", f"{config.sigma:g}", "--q", f"{config.q:g}", "--steps", str(config.steps)]
    return args + ["--seed", str(config.seed)]


def _provenance(result) -> str:
    p, config = result.provenance, result.config
    files = [(source, f.path, f"{f.bytes:,}", f.sha256) for source, hashes in p.models.items()
             for f in hashes]
    data = [(source, f.path, f"{f.bytes:,}", f.sha256) for source, f in p.data.items()]
    entries = [(e.attack, e.run_id, e.status, f"{e.seconds:.1f} s") for e in result.entries]
    command = "python -m core audit " + " ".join(
        shlex.quote(a) for a in ["--model", config.model, *input_arguments(config), "--out",
                                 "report.html"])
    configs = "".join(f"<h4>{html.escape(e.attack)}</h4><pre>"
                      f"{html.escape(json.dumps(e.config, indent=1, sort_keys=True))}</pre>"
                      for e in result.entries)
    cards = "".join(f"<h4>{html.escape(s)}</h4><pre>{html.escape(json.dumps(c, indent=1))}</pre>"
                    for s, c in p.cards.items())
    packages = table(("package", "version"), sorted(p.packages.items()))
    return (f"<p>To rerun: <code>{html.escape(command)}</code> (tool commit "
            f"<code>{html.escape(p.commit or 'unknown')}</code>; Python {html.escape(p.python)}; "
            f"{html.escape(p.machine)}; started {html.escape(p.started)}; "
            f"{result.seconds:.0f} s in all).</p>"
            + "<h3>Model files</h3>" + table(("source", "file", "bytes", "SHA-256"), files)
            + "<h3>Data files</h3>" + table(("source", "file", "bytes", "SHA-256"), data)
            + "<h3>Runs</h3>" + table(("attack", "stored run", "status", "time"), entries)
            + "<h3>Packages</h3>" + packages + "<h3>Configs (every setting, seeds included)</h3>"
            + configs + "<h3>Model cards</h3>" + cards)


def render_report(result, results: dict) -> str:
    """The report's HTML: ``results`` maps each attack that finished to its typed result."""
    config = result.config
    summary = table(("attack", "verdict", "status"),
                    [(e.title, e.verdict, e.status) for e in result.entries])
    parts = []
    for entry in result.entries:
        body = BUILDERS[entry.attack](results[entry.attack]) if entry.attack in results else ""
        parts.append(f"<section id='{html.escape(entry.attack)}'><h2>"
                     f"{html.escape(entry.title)}</h2><p class='verdict'>"
                     f"{html.escape(entry.verdict)}</p>{body}</section>")
    title = f"Privacy audit of {config.model}"
    stopped = ("<p class='verdict'>The audit was stopped early: only the attacks below ran.</p>"
               if result.stopped_early else "")
    return html_page(title, f"Reference: {config.reference or 'none'}",
                     f"{stopped}<section id='summary'><h2>Summary</h2>{summary}</section>"
                     + "".join(parts)
                     + "<section id='dp'><h2>DP guarantee of the training run</h2>"
                     f"{dp_section(config)}</section><section id='provenance'><h2>Provenance"
                     f"</h2>{_provenance(result)}</section>")


def html_page(title: str, subtitle: str, body: str) -> str:
    """A self-contained page: the reports' style and plotly.js inlined once (no network), the
    title and ``subtitle`` (plain text, escaped) above ``body`` (HTML)."""
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style>"
            f"<script>{plotly.offline.get_plotlyjs()}</script></head><body>"
            f"<header><h1>{html.escape(title)}</h1><p>{html.escape(subtitle)} · Leakage Lab</p>"
            "<p class='noprint muted'>A PDF: the browser's Print → Save as PDF.</p></header>"
            f"{body}</body></html>")


def write_report(path: Path, result, results: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(result, results), encoding="utf-8")
    return path


def stored_results(result) -> dict:
    """The typed result of each attack of ``result`` from its stored run (a deleted run, or one
    without a result, is left out)."""
    from core.errors import UserError
    from core.jobs.store import Store
    from core.jobs.typed import load_result

    store, found = Store(), {}
    for entry in result.entries:
        if entry.run_id is None:
            continue
        try:
            loaded = load_result(store.get(entry.run_id))
        except UserError:
            continue
        if loaded is not None:
            found[entry.attack] = loaded
    return found
