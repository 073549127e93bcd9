"""Lazy-sampling risk of training sentences (Stock et al. 2022). The spec is ``spec.SPEC``."""
