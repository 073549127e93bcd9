"""Differential score and rank between two snapshots of a model (Zanella-Béguelin, Tople et al.
2020). The spec is ``spec.SPEC``; the searches are in ``search``, ``strategies`` and ``windows``."""
