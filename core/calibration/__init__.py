"""Domain calibration: the domain reference (the base briefly fine-tuned on public in-domain
text) that the attacks comparing a fine-tune with its base use to cancel domain learning."""
