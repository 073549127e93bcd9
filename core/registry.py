"""The registry of every spec: name -> where it lives, its CLI aliases and one line of help.

The table names modules, not specs, so that the CLI can list and route commands without
importing any attack (torch, transformers): a spec's module is imported only when that spec is
used. A test checks that each entry's module defines a spec of that name. An attack family in
``core/attacks/`` declares its own entries, in its package's ``ATTACKS`` (``family_entries``);
the services (the audit, the DP tools, the labs, the scenario builds) are listed here. An
attack that lives elsewhere (a third party's package) is a plug-in: its package declares an entry point in the
group ``leakage_lab.attacks`` naming a function that calls ``register``::

    # the plug-in's pyproject.toml
    [project.entry-points."leakage_lab.attacks"]
    my-attack = "mypackage.plugin:register_attacks"

    # mypackage/plugin.py (imports nothing heavy: the spec's module is imported when used)
    from core.registry import register
    def register_attacks():
        register("my-attack", "mypackage.attack", "one line of help", renderer="mypackage.render")

``load_plugins`` calls each one once (the CLI and the app at start, any lookup here before its
first answer, so the job runner too), as lm-evaluation-harness finds its plug-ins; a name that
is taken is refused with the plug-in's distribution named.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import NamedTuple

from core.errors import UserError
from core.specs import AttackSpec


class Entry(NamedTuple):
    module: str
    help: str
    aliases: tuple[str, ...] = ()
    attr: str = "SPEC"
    renderer: str | None = None   # the module of its renderer, if not ui.render.<name>
    audited: bool = False         # its spec declares audit hooks: the audit imports it


def family_entries(package: str = "core.attacks") -> dict[str, Entry]:
    """The entries the attack families declare, each in its package's ``ATTACKS`` (spec name ->
    ``Entry``'s fields), by package name: adding a family edits no table here."""
    import pkgutil

    found: dict[str, Entry] = {}
    for info in sorted(pkgutil.iter_modules(importlib.import_module(package).__path__),
                       key=lambda info: info.name):
        declared = getattr(importlib.import_module(f"{package}.{info.name}"), "ATTACKS", {})
        taken = sorted(set(declared) & set(found))
        if taken:
            raise ValueError(f"{package}.{info.name} declares {', '.join(taken)} again")
        found |= {name: Entry(**fields) for name, fields in declared.items()}
    return found


SERVICES: dict[str, Entry] = {
    "audit": Entry("core.audit.audit", "audit one model: the chosen attacks in order, each "
                   "recorded, and one HTML report with verdicts, DP bound and provenance"),
    "audit-series": Entry("core.audit.series", "the same audit on each checkpoint of one training "
                          "run, each leakage measure against the training step",
                          ("checkpoint-audit",)),
    "domain-reference": Entry("core.calibration.reference", "fine-tune the base briefly on "
                              "public in-domain text: the reference that cancels domain learning"),
    "user-inference-mitigate": Entry("core.demo.whatif", "retrain the demo with dedup or a "
                                     "per-user limit and compare AUROC", attr="MITIGATION_SPEC"),
    "user-inference-canary-retrain": Entry("core.demo.whatif", "retrain the demo with canary "
                                           "users and compare them as real and canary users",
                                           attr="CANARY_RETRAIN_SPEC"),
    "ngram-canary": Entry("core.dp.ngram_canary", "is the bound tight? n-gram canary Monte Carlo "
                          "(Stock et al. 2022, §4.1)"),
    "dp-audit": Entry("core.dp.audit", "audit DP with canaries: a lower bound on epsilon from "
                      "member/non-member scores (Jagielski et al. 2020; Steinke et al. 2023)"),
    "dp-canary-audit": Entry("core.dp.canary_audit", "audit a DP fine-tuning run with canaries: "
                             "the one-run epsilon lower bound beside the accountant's epsilon "
                             "(Steinke et al. 2023)"),
    "nid-audit": Entry("core.dp.nid_audit", "post-hoc DP audit of a trained model with the "
                       "natural identifiers of its corpus (hashes, UUIDs): an epsilon lower "
                       "bound without retraining (NIDs, ICLR 2026)", audited=True),
    "dp-finetune": Entry("core.dp.finetune", "DP fine-tuning with a secret canary (Stock et al. "
                         "2022, §4.3)"),
    "user-level-dp-compare": Entry("core.demo.user_level_dp", "example- vs user-level DP "
                                   "fine-tuning at the same epsilon under user inference "
                                   "(Kandpal et al. 2023, §4.4)"),
    "model-extraction": Entry("core.labs.model_extraction", "lab: recover a ReLU network from "
                              "black-box queries (Rolnick & Körding 2020)"),
    "gradient-leakage": Entry("core.labs.gradient_leakage", "lab: deep leakage from gradients "
                              "(Zhu et al. 2019)"),
    "label-only-mi": Entry("core.labs.label_only_mi", "lab: label-only membership inference "
                           "(Choquette-Choo et al. 2021)"),
    "trojan": Entry("core.labs.trojan", "lab: trojaning (Liu et al. 2018) vs BadNets"),
    "contrastive-poisoning": Entry("core.labs.contrastive_poisoning", "lab: poisoning a mini "
                                   "CLIP (Carlini & Terzis 2022)"),
    "demo-build": Entry("core.demo.scenario", "train the demo scenario's two GPT-2 snapshots "
                        "(cached)"),
    "realistic-build": Entry("core.demo.realistic", "fine-tune SmolLM2-135M (LoRA) on private "
                             "plays with planted secrets: the realistic scenario (cached)"),
    "chat-build": Entry("core.demo.chat_scenario", "fine-tune SmolLM2-135M-Instruct (LoRA) on "
                        "conversations, assistant tokens only, with planted PII doses: the "
                        "chat scenario (cached)"),
    "technical-build": Entry("core.demo.realistic", "fine-tune all weights of SmolLM2-135M on "
                             "Python's documentation with planted secrets: the technical "
                             "scenario (cached)", attr="TECHNICAL_SPEC",
                             renderer="ui.render.realistic_build"),
    "shift-build": Entry("core.demo.realistic", "fine-tune all weights of SmolLM2-135M for an "
                         "epoch on private plays, secrets planted inside speeches: the shift "
                         "scenario (cached)", attr="SHIFT_SPEC",
                         renderer="ui.render.realistic_build"),
}



def merged(*tables: dict[str, Entry]) -> dict[str, Entry]:
    """The tables as one, refusing a name or alias that two of them (or one entry's aliases and
    another's name) take: a family cannot shadow a service, nor the reverse."""
    found: dict[str, Entry] = {}
    for table in tables:
        for name, entry in table.items():
            taken = sorted({name, *entry.aliases} & names_and_aliases(found))
            if taken:
                raise ValueError(f"{name}: already registered: {', '.join(taken)}")
            found[name] = entry
    return found


def names_and_aliases(entries: dict[str, Entry]) -> set[str]:
    """Every name and alias of ``entries``."""
    return set(entries) | {alias for entry in entries.values() for alias in entry.aliases}


ENTRIES: dict[str, Entry] = merged(family_entries(), SERVICES)
ALIASES: dict[str, str] = {alias: name for name, entry in ENTRIES.items() for alias in entry.aliases}


def register(name: str, module: str, help: str, *, aliases: tuple[str, ...] = (),
             attr: str = "SPEC", renderer: str | None = None, audited: bool = False) -> None:
    """Add the spec ``attr`` of ``module`` (imported when first used) under ``name``, with its
    CLI ``aliases`` and the module of its renderer (``render(result, *, key)``; default
    ``ui.render.<name>``); ``audited``: its spec declares audit hooks (``AttackSpec.audit``) for
    the audit to run it. A name or alias already taken is refused (``ValueError``)."""
    taken = sorted({name, *aliases} & names_and_aliases(ENTRIES))
    if taken:
        raise ValueError(f"already registered: {', '.join(taken)}")
    if not name or not module:
        raise ValueError("a spec is registered with its name and its module")
    ENTRIES[name] = Entry(module, help, tuple(aliases), attr, renderer, audited)
    ALIASES.update(dict.fromkeys(aliases, name))


PLUGIN_GROUP = "leakage_lab.attacks"
_loaded_plugins: list[str] | None = None   # the entry points' names, once loaded
PLUGIN_SPECS: list[str] = []               # the specs the plug-ins registered


def load_plugins() -> list[str]:
    """Call every installed plug-in's registration (entry points of ``PLUGIN_GROUP``), once;
    the entry points' names. A plug-in that registers a taken name, or fails to import, is a
    ``UserError`` naming it and its distribution."""
    global _loaded_plugins
    if _loaded_plugins is not None:
        return _loaded_plugins
    points = sorted(entry_points(group=PLUGIN_GROUP), key=lambda p: p.name)
    _loaded_plugins = [p.name for p in points]
    before = set(ENTRIES)
    for point in points:
        where = f"plug-in {point.name!r} ({point.value}" + (
            f", from {point.dist.name} {point.dist.version})" if point.dist else ")")
        try:
            point.load()()
        except ValueError as err:   # register refuses a taken name
            raise UserError(f"{where} is refused: {err}") from None
        except Exception as err:   # a third party's bug: named, not a traceback
            raise UserError(f"{where} failed to load: {type(err).__name__}: {err}") from None
        finally:
            PLUGIN_SPECS.extend(name for name in ENTRIES if name not in before
                                and name not in PLUGIN_SPECS)
    return _loaded_plugins


def spec_name(command: str) -> str | None:
    """The spec a command names (its name or an alias), or None."""
    load_plugins()
    return command if command in ENTRIES else ALIASES.get(command)


def get_spec(name: str) -> AttackSpec:
    """The spec registered under ``name`` (or an alias); imports its module."""
    key = spec_name(name)
    if key is None:
        raise UserError(f"unknown attack {name!r}; known: {', '.join(sorted(ENTRIES))}")
    entry = ENTRIES[key]
    return getattr(importlib.import_module(entry.module), entry.attr)


def find_spec(name: str) -> AttackSpec | None:
    """The spec of a stored run's kind, or None for a kind that is not a spec."""
    return get_spec(name) if spec_name(name) else None


def all_specs() -> dict[str, AttackSpec]:
    """Name -> spec for every registered spec (imports them all)."""
    load_plugins()
    return {name: get_spec(name) for name in ENTRIES}
