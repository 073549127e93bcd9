"""Sampling documents from a language model (``sampling``) and the sequence metrics that rank
them (``metrics``: perplexity, zlib, lower-case, window; Carlini et al. 2021)."""
