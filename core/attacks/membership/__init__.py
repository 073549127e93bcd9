"""Membership inference: the sequence-level suite on labelled texts (``mia.SPEC``, its scores in
``scores``: one function per attack) and the secret-sharer exposure of canaries
(``exposure.SPEC``)."""
