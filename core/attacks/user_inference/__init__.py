"""User inference (Kandpal et al. 2023): ``spec.SPEC``; canary users (``canaries.SPEC``), the
mitigations and the user-samples files."""

# its registry entries (core.registry.Entry's fields), read by core.registry
ATTACKS = {
    "user-inference": dict(module="core.attacks.user_inference.spec",
                           help="was a user's data used to fine-tune the model? (Kandpal et al. "
                                "2023)",
                           audited=True),
    "user-inference-canaries": dict(module="core.attacks.user_inference.canaries",
                                    help="copy a user-samples file with canary users sharing a "
                                         "substring (Algorithm 1)"),
}
