"""Membership inference: the sequence-level suite on labelled texts (``mia.SPEC``, its scores in
``scores``: one function per attack) and the secret-sharer exposure of canaries
(``exposure.SPEC``)."""

# its registry entries (core.registry.Entry's fields), read by core.registry
ATTACKS = {
    "exposure": dict(module="core.attacks.membership.exposure",
                     help="secret-sharer exposure of planted canaries, in bits (Carlini et al. "
                          "2019)"),
    "mia": dict(module="core.attacks.membership.mia",
                help="membership inference on labelled texts: loss, reference, zlib, min-k%, "
                     "min-k%++, ReCaLL, DC-PDD, EZ-MIA and a blind baseline",
                aliases=("membership",), audited=True),
}
