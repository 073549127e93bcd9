"""Small interactive labs on scikit-learn's 8x8 digits: privacy attacks (model extraction,
gradient leakage, label-only membership inference) and integrity attacks (trojans,
contrastive poisoning). Each module follows the attack interface of ``core.attacks.base``."""
