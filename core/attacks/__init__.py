"""Attacks on language models, each one module with a ``SPEC`` (``core.specs.AttackSpec``):
training-data extraction, lazy-sampling risk, differential rank, user inference."""
