"""Evaluation of membership attacks: ROC, AUROC, TPR at low FPR, bootstrap intervals
(``membership``)."""
