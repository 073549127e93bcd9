"""Lazy-sampling risk of training sentences (Stock et al. 2022). The spec is ``spec.SPEC``."""

# its registry entries (core.registry.Entry's fields), read by core.registry
ATTACKS = {"lazy-risk": dict(module="core.attacks.lazy_risk.spec",
                        help="rank training sentences by lazy-sampling risk (Stock et al. 2022)",
                        audited=True)}
