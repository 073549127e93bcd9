"""The demo scenario: a tiny GPT-2 family trained on Shakespeare, with known ground truth."""
