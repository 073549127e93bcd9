"""Memorisation in bits: (l, b)-inextractability (Liu, Evans & Xiong, IEEE S&P 2026) and
probabilistic discoverable extraction (Hayes et al. 2025), beside the DP bound's L(p0). The spec
is ``spec.SPEC``; ``probabilistic`` holds p_z for prefix/suffix pairs."""

# its registry entries (core.registry.Entry's fields), read by core.registry
ATTACKS = {"inextractability": dict(
    module="core.attacks.inextractability.spec",
    help="memorisation in bits: (l, b)-inextractability (Liu, Evans & Xiong 2026) and "
         "probabilistic extraction (Hayes et al. 2025) beside the DP bound",
    aliases=("memorisation-bits",), audited=True)}
