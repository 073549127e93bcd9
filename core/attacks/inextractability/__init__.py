"""Memorisation in bits: (l, b)-inextractability (Liu, Evans & Xiong, IEEE S&P 2026) and
probabilistic discoverable extraction (Hayes et al. 2025), beside the DP bound's L(p0). The spec
is ``spec.SPEC``; ``probabilistic`` holds p_z for prefix/suffix pairs."""
