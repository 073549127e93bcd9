"""Training-data extraction (Carlini et al., USENIX Security 2021): generate, rank by
membership metrics, verify against a corpus. The spec is ``spec.SPEC``."""
