"""The function the entry point ``leakage_lab.attacks`` names: it registers the attack (its
modules are imported only when used)."""

from core.registry import register


def register_attacks() -> None:
    register("canary-count", "canary_count.spec",
             "copies of a planted string in the training data, and the model's loss on it",
             renderer="canary_count.render", audited=True)
