"""The attack families, one package each; a package holds its config (``config.py``), its
spec or specs (``core.specs.AttackSpec``, registered in ``core.registry``) and its helpers:

* ``extraction``: training-data extraction, with verification against a corpus;
* ``lazy_risk``: lazy-sampling risk of training sentences;
* ``diffrank``: differential score and rank between two snapshots;
* ``membership``: membership inference on labelled texts and canary exposure;
* ``user_inference``: was a user's data used to fine-tune the model?

The services they share sit below them: ``core.generation`` (sampling and sequence metrics),
``core.calibration`` (the domain reference) and ``core.evaluation`` (ROC, bootstrap)."""
