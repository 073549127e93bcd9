"""PII probing of data subjects (ProPILE): ``spec`` runs it."""

# its registry entries (core.registry.Entry's fields), read by core.registry
ATTACKS = {"pii-probe": dict(module="core.attacks.pii_probe.spec",
                        help="probe data subjects for their PII: exact extraction in k samples "
                             "and the true value's likelihood against fresh values and the base "
                             "(ProPILE, Kim et al. 2023)",
                        aliases=("propile",), audited=True)}
