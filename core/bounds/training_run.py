"""Config fields for the DP-SGD parameters of the training run a result is compared with: its
noise multiplier σ (0: not known, or not a DP run), sampling rate q and steps. A spec that
takes them shows the accountant's guarantee for that run beside what it measured."""

from __future__ import annotations

from core.specs import param


def sigma_param() -> float:
    return param(0.0, ge=0.0, le=1000.0, label="training run's σ",
                 help="the run's DP-SGD noise multiplier, to show its guarantee beside the "
                      "measurement; 0: unknown (or no DP)")


def q_param() -> float:
    return param(0.01, gt=0.0, le=1.0, label="training run's q",
                 help="the run's sampling rate (used with σ)")


def steps_param() -> int:
    return param(1000, ge=1, le=10**9, label="training run's steps",
                 help="the run's number of steps (used with σ)")
