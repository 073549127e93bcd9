"""Small interactive labs on scikit-learn's 8x8 digits: privacy attacks (model extraction,
gradient leakage, label-only membership inference) and integrity attacks (trojans,
contrastive poisoning). Each module defines a ``SPEC`` (``core.specs.AttackSpec``): a config
dataclass in, a result dataclass out, run as a recorded, cancellable job or from the CLI."""
