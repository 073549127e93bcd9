"""The blind baseline (Das, Zhang & Tramèr 2024, "Blind Baselines Beat Membership Inference
Attacks for Foundation Models"): a classifier that sees only the texts, never a model.

If it separates members from non-members as well as the attacks do, the data set's split
leaks (e.g. members and non-members written at different times or by different people), and
the attacks' success says nothing about the model. Here: a bag of word 1-2-grams (TF-IDF) and
of character 3-5-grams, plus the text's length, into a logistic regression (scikit-learn);
every text is scored by a model fitted on the other folds (stratified k-fold, seeded), so no
text is scored by a classifier that saw its label.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

FOLDS = 5
FEATURES = "TF-IDF of word 1-2-grams and character 3-5-grams, and log length"
AS_GOOD_MARGIN = 0.02   # the baseline "does as well" when its AUROC is within this of the best


def _features(train: list[str], test: list[str]) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, min_df=2)

    def length(texts: list[str]) -> sparse.csr_matrix:
        return sparse.csr_matrix(np.log1p([[len(t)] for t in texts]))

    fitted = [words.fit_transform(train), chars.fit_transform(train), length(train)]
    return (sparse.hstack(fitted).tocsr(),
            sparse.hstack([words.transform(test), chars.transform(test), length(test)]).tocsr())


def blind_scores(texts: list[str], members: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """Out-of-fold decision values of the text-only classifier (higher: member)."""
    members = np.asarray(members, dtype=int)
    folds = min(FOLDS, int(np.bincount(members, minlength=2).min()))
    scores = np.zeros(len(texts))
    if folds < 2:
        return scores   # too few of one class to hold any out: no information
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for train, test in splitter.split(np.zeros(len(texts)), members):
        x_train, x_test = _features([texts[i] for i in train], [texts[i] for i in test])
        classifier = LogisticRegression(max_iter=1000, C=1.0)
        classifier.fit(x_train, members[train])
        scores[test] = classifier.decision_function(x_test)
    return scores


def blind_warning(blind_auroc: float, best_attack: str, best_auroc: float) -> str | None:
    """A warning when the text-only baseline does as well as the best attack."""
    if blind_auroc < best_auroc - AS_GOOD_MARGIN or blind_auroc <= 0.55:
        return None
    return (f"The blind baseline (no model: {FEATURES}) reaches AUROC {blind_auroc:.3f}, as "
            f"good as the best attack ({best_attack}: {best_auroc:.3f}): the members and "
            "non-members differ in their text alone, so this data set cannot show what the "
            "model leaks (Das, Zhang & Tramèr 2024). Draw both from one distribution.")
