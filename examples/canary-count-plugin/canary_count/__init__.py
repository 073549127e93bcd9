"""Canary count, a plug-in attack for Leakage Lab: how many copies of a planted string (a
canary) the training data holds, and how much better the trained model predicts it than the
same words in a shuffled order. A canary the model predicts far better than its shuffle was
learnt as a string, not as words (Carlini et al. 2019, "The Secret Sharer", measure the same
memorisation by the canary's rank among random ones)."""
