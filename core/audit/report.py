"""The audit report: one self-contained HTML file (plotly.js inlined once, no network), with a
verdict per attack in plain words, each attack's key tables and figures, the training run's DP
guarantee and reconstruction bound when its σ, q and steps are given, and the provenance: model
file hashes and cards, data hashes, every config, package versions, seeds, the tool's commit
and the timings. For a PDF, the browser's Print → Save as PDF (the page has print styles):
no PDF library is added for a file every browser prints.

The report travels with a model release, so it names no path of the server: a file under the lab
home as ``$LEAKAGE_LAB_HOME/...`` (its rerun command works as pasted on that server, in the
tool's folder, with the interpreter that ran it: ``provenance.interpreter``), any other as a
variable the reader sets (``$CORPUS_FILE``; the file tables give each file's SHA-256), and
paths in messages and configs are scrubbed the same way.
"""

from __future__ import annotations

import html
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import plotly.offline

from core import paths
from core.audit import plan
from core.audit.provenance import interpreter
from core.reporting.html import table
from core.runtime import is_cache_note

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #e8590c; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .9em; width: 100%; }
th, td { border: 1px solid #ddd; padding: .3em .5em; text-align: left; vertical-align: top; }
td:last-child { overflow-wrap: anywhere; }  /* a SHA-256 wraps instead of widening the page */
th { background: #f6f6f6; } .verdict { background: #fff4e6; padding: .6em .8em; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: .8em; }
pre.rerun { white-space: pre-wrap; font-size: .9em; }
.muted { color: #666; font-size: .9em; }
p.heat { font-family: ui-monospace, monospace; white-space: pre-wrap; line-height: 1.8; }
@media print { .noprint { display: none; } section { break-inside: avoid-page; } }
"""
DP_BITS = (16, 32, 64, 128)
HOME_VARIABLE = "LEAKAGE_LAB_HOME"
# the variable that names each file of an audit the report cannot name (e.g. outside the lab home)
VARIABLES = {"model": "MODEL_PATH", "reference": "REFERENCE_PATH", "corpus": "CORPUS_FILE",
             "users": "USERS_FILE", "members": "MEMBERS_FILE"}
NEEDS = {  # what each variable holds, as the report tells its reader
    HOME_VARIABLE: "the lab's home folder on the server that ran the audit (its uploads and "
                   "demo; .leakage-lab in the folder the app started in, unless set there)",
    "MODEL_PATH": "the audited model's folder or file (its files under Model files)",
    "MODEL_BASE_PATH": "the base model of the audited LoRA adapter",
    "REFERENCE_PATH": "the reference model's folder or file (its files under Model files)",
    "REFERENCE_BASE_PATH": "the base model of the reference LoRA adapter",
    "CORPUS_FILE": "the training corpus (its SHA-256 under Data files)",
    "USERS_FILE": "the user samples (their SHA-256 under Data files)",
    "MEMBERS_FILE": "the member / non-member texts (their SHA-256 under Data files)"}
# an absolute path in free text (not in a URL, not after $VARIABLE, not inside a word)
_ABSOLUTE = re.compile(r"(?<![\w.~$/\\<:-])/[^\s'\"<>|;,()\[\]{}`]+")


@dataclass(frozen=True)
class Place:
    """A file as the report names it: ``$variable/rest``, ``$variable``, or ``rest`` as given."""

    variable: str
    rest: str

    def text(self) -> str:
        var = f"${self.variable}" if self.variable else ""
        return "/".join(part for part in (var, self.rest) if part)

    def shell(self) -> str:
        """As one shell word that expands the variable (the rest quoted as needed)."""
        rest = shlex.quote(self.rest) if self.rest else ""
        return f'"${self.variable}"' + (f"/{rest}" if rest else "") if self.variable else rest


def _homes() -> list[Path]:
    home = paths.home()
    return list(dict.fromkeys([home.absolute(), home.resolve()]))


def place(value: str, variable: str) -> Place:
    """Where ``value`` (a path or source) is, as the report names it: under the lab home
    relative to ``$LEAKAGE_LAB_HOME``; any other absolute path as ``$variable``; anything else
    (a named source, a hub id, a relative path) as given."""
    path = Path(value).expanduser()
    if not (path.is_absolute() or path.exists()):
        return Place("", value)
    for home in _homes():
        for candidate in dict.fromkeys([path.absolute(), path.resolve()]):
            if candidate.is_relative_to(home):
                return Place(HOME_VARIABLE, candidate.relative_to(home).as_posix())
    return Place(variable, "") if path.is_absolute() else Place("", value)


def places(value: str, field: str) -> list[Place]:
    """``place`` of a source, an adapter's base after its ``@`` apart (``ADAPTER@BASE``)."""
    variable = VARIABLES[field]
    adapter, at, base = value.rpartition("@")
    if not at or not adapter or not base or Path(value).exists():
        return [place(value, variable)]
    return [place(adapter, variable), place(base, variable.replace("_PATH", "_BASE_PATH"))]


def home_as_variable(text: str) -> str:
    """``text`` (also HTML) with the lab home's path as ``$LEAKAGE_LAB_HOME``."""
    for home in sorted(map(str, _homes()), key=len, reverse=True):
        text = re.sub(re.escape(home) + r"(?![\w.-])", f"${HOME_VARIABLE}", text)
    return text


def scrub(text: str) -> str:
    """Plain ``text`` without a server path: the lab home as ``$LEAKAGE_LAB_HOME``, any other
    absolute path as ``…/`` and its last part."""
    return _ABSOLUTE.sub(lambda m: "…/" + m.group().rstrip("/").rsplit("/", 1)[-1],
                         home_as_variable(text))


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
        args += ["--sigma", f"{config.sigma:g}", "--q", f"{config.q:g}", "--steps",
                 str(config.steps), "--delta", f"{config.delta:g}"]
    return args + ["--seed", str(config.seed)]


def rerun_command(result) -> tuple[str, dict[str, str]]:
    """The shell command that reruns the audit, its files named by ``places`` (a loaded model by
    the source it was loaded from), and the variables to set first (name -> what it holds)."""
    config, loaded_from = result.config, result.provenance.loaded_from
    words = ["--model", config.model, *input_arguments(config)]
    if config.device != "auto":
        words += ["--device", config.device]
    shell, needs = [], {}
    for flag, word in zip(["", *words], words):
        if flag.removeprefix("--") not in VARIABLES:
            shell.append(shlex.quote(word))
            continue
        found = places(loaded_from.get(word, word), flag.removeprefix("--"))
        shell.append("@".join(p.shell() for p in found))
        needs |= {p.variable: NEEDS[p.variable] for p in found if p.variable}
    return (f"{shlex.quote(interpreter())} -m core audit "
            + " ".join([*shell, "--out", "report.html"]), needs)


def _named(config, loaded_from: dict[str, str]) -> dict[str, str]:
    """Each source of the audit (and the source a loaded model came from) -> its name in the
    report (``places``)."""
    named = {}
    for field in VARIABLES:
        value = getattr(config, field)
        if value:
            for source in dict.fromkeys([value, loaded_from.get(value, value)]):
                named[source] = "@".join(p.text() for p in places(source, field))
    return named


def _shown(value, named: dict[str, str]):
    """A config's or card's value with each path as the report names it (``_named``, ``scrub``)."""
    if isinstance(value, dict):
        return {k: _shown(v, named) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v, named) for v in value]
    return (named.get(value) or scrub(value)) if isinstance(value, str) else value


def _rerun(result) -> str:
    """The rerun command on a line of its own, the variables to set first, and where it ran."""
    p = result.provenance
    command, needs = rerun_command(result)
    first = ("" if not needs else "<p>Set first: " + "; ".join(
        f"<code>{html.escape(name)}</code>: {html.escape(what)}" for name, what in needs.items())
        + ".</p>")
    return (f"<p>To rerun:</p><pre class='rerun'>{html.escape(command)}</pre>{first}"
            "<p class='muted'>Run it in the tool's folder (its commit was "
            f"<code>{html.escape(p.commit or 'unknown')}</code>); Python {html.escape(p.python)}; "
            f"{html.escape(p.machine)}; started {html.escape(p.started or 'unknown')}, finished "
            f"{html.escape(p.finished or 'unknown')}; {result.seconds:.0f} s in all.</p>")


def _input(field: str, source: str) -> str:
    """A data input by its field, with its source's name when it is one (not a path)."""
    path = Path(source).expanduser()
    return field if path.is_absolute() or path.exists() else f"{field} ({source})"


def _provenance(result) -> str:
    p, config = result.provenance, result.config
    named = _named(config, p.loaded_from)
    fields = {getattr(config, f): f for f in VARIABLES if getattr(config, f)}

    def model(value: str) -> str:   # a loaded model by its name and where it was loaded from
        loaded = p.loaded_from.get(value, value)
        where = named.get(loaded) or scrub(loaded)
        return where if loaded == value else f"{value}: {where}"

    files = [(model(s), scrub(f.path), f"{f.bytes:,}", f.sha256) for s, hashes in p.models.items()
             for f in hashes]
    data = [(_input(fields.get(s, "corpus"), s), place(f.path, VARIABLES[fields.get(s, "corpus")])
             .text(), f"{f.bytes:,}", f.sha256) for s, f in p.data.items()]
    entries = [(e.attack, e.run_id, e.status, f"{e.seconds:.1f} s") for e in result.entries]

    def dumped(title: str, value) -> str:
        return (f"<h4>{html.escape(title)}</h4><pre>"
                f"{html.escape(json.dumps(_shown(value, named), indent=1, sort_keys=True))}</pre>")

    return (_rerun(result)
            + "<h3>Model files</h3>" + table(("source", "file", "bytes", "SHA-256"), files)
            + "<h3>Data files</h3>" + table(("input", "file", "bytes", "SHA-256"), data)
            + "<h3>Runs</h3>" + table(("attack", "stored run", "status", "time"), entries)
            + "<h3>Packages</h3>" + table(("package", "version"), sorted(p.packages.items()))
            + "<h3>Configs (every setting, seeds included)</h3>"
            + "".join(dumped(e.attack, e.config) for e in result.entries)
            + "<h3>Model cards</h3>" + "".join(dumped(model(s), c) for s, c in p.cards.items()))


def render_report(result, results: dict) -> str:
    """The report's HTML: ``results`` maps each attack that finished to its typed result; no
    server path in it (see the module's doc)."""
    config = result.config
    summary = table(("attack", "verdict", "status"),
                    [(e.title, scrub(e.verdict), e.status) for e in result.entries])
    parts = []
    for entry in result.entries:
        found = results.get(entry.attack)
        body = ("" if found is None else notes_html(result_notes(found))
                + plan.steps()[entry.attack].section(found))
        parts.append(f"<section id='{html.escape(entry.attack)}'><h2>"
                     f"{html.escape(entry.title)}</h2><p class='verdict'>"
                     f"{html.escape(scrub(entry.verdict))}</p>{body}</section>")
    stopped = ("<p class='verdict'>The audit was stopped early: only the attacks below ran.</p>"
               if result.stopped_early else "") + notes_html(result.notes)
    body = (f"{stopped}<section id='summary'><h2>Summary</h2>{summary}</section>"
            + "".join(parts) + "<section id='dp'><h2>DP guarantee of the training run</h2>"
            f"{dp_section(config)}</section><section id='provenance'><h2>Provenance</h2>"
            f"{_provenance(result)}</section>")
    return html_page(f"Privacy audit of {scrub(config.model)}",
                     f"Reference: {scrub(config.reference) or 'none'}", body)


def result_notes(result) -> list[str]:
    """An attack result's notes (e.g. the tokens it scored), but the score cache's, which are
    about the run's time: the same audit gives the same report."""
    return [note for note in getattr(result, "notes", ()) if not is_cache_note(note)]


def notes_html(notes: list[str]) -> str:
    """The result's notes (e.g. the inputs no attack read), one paragraph each."""
    return "".join(f"<p class='verdict'>Note: {html.escape(scrub(note))}</p>" for note in notes)


def html_page(title: str, subtitle: str, body: str) -> str:
    """A self-contained page: the reports' style and plotly.js inlined once (no network), the
    title and ``subtitle`` (plain text, escaped) above ``body`` (HTML); the lab home's path
    wherever it appears as ``$LEAKAGE_LAB_HOME``."""
    title, subtitle, body = map(home_as_variable, (title, subtitle, body))
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
    from core.jobs import get_store, load_result

    store, found = get_store(), {}
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
