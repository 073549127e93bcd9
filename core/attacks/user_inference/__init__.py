"""User inference (Kandpal et al. 2023): ``spec.SPEC``; canary users (``canaries.SPEC``), the
mitigations and the user-samples files."""
