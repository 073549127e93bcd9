"""Differential score and rank between two snapshots of a model (Zanella-Béguelin, Tople et al.
2020). The spec is ``spec.SPEC``; the searches are in ``search``, ``strategies`` and ``windows``."""

# its registry entries (core.registry.Entry's fields), read by core.registry
ATTACKS = {"diffrank": dict(module="core.attacks.diffrank.spec",
                       help="differential score and rank of what an update exposes "
                            "(Zanella-Béguelin, Tople et al. 2020)",
                       audited=True)}
