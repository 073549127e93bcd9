"""Differential privacy in practice: does real DP-SGD training come close to the bounds of
``core.bounds``? (Stock et al. 2022, Section 4.)"""
