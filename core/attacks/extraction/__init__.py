"""Training-data extraction (Carlini et al., USENIX Security 2021): generate, rank by
membership metrics, verify against a corpus. The spec is ``spec.SPEC``."""

# its registry entries (core.registry.Entry's fields), read by core.registry
ATTACKS = {"extraction": dict(module="core.attacks.extraction.spec",
                         help="extract training data: generate, rank by membership metrics, "
                              "verify (Carlini et al. 2021)",
                         aliases=("extract",), audited=True)}
