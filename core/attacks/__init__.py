"""The attack families, one package each; a package holds its spec or specs
(``core.specs.AttackSpec``), their configs, costs, audit hooks and helpers, and declares its
registry entries in its ``ATTACKS`` (read by ``core.registry.family_entries``):

* ``extraction``: training-data extraction, with verification against a corpus;
* ``lazy_risk``: lazy-sampling risk of training sentences;
* ``inextractability``: memorisation in bits, (l, b)-inextractability and probabilistic
  extraction;
* ``pii_probe``: probing data subjects for their PII (ProPILE);
* ``diffrank``: differential score and rank between two snapshots;
* ``membership``: membership inference on labelled texts and canary exposure;
* ``user_inference``: was a user's data used to fine-tune the model?

The services they share sit below them: ``core.generation`` (sampling and sequence metrics),
``core.scoring`` (log-probabilities), ``core.calibration`` (the domain reference) and
``core.evaluation`` (ROC, bootstrap)."""
