"""The app's pages, by section: (file under app_pages/, title, icon, one-line description)."""

from __future__ import annotations

from typing import NamedTuple


class PageEntry(NamedTuple):
    path: str
    title: str
    icon: str
    blurb: str


SECTIONS: dict[str, list[PageEntry]] = {
    "Theory": [
        PageEntry("app_pages/bound_explorer.py", "Bound Explorer", ":material/functions:",
                  "RDP guarantees against reconstruction of a b-bit secret vs the usual ε"),
    ],
    "Models and runs": [
        PageEntry("app_pages/models.py", "Models", ":material/neurology:",
                  "load models to audit (folder, zip, GGUF, built-in, hub) and see their cards"),
        PageEntry("app_pages/runs.py", "Runs", ":material/history:",
                  "past runs: reopen, compare, download or delete them"),
    ],
    "Attack lab": [
        PageEntry("app_pages/audit.py", "Audit a model", ":material/verified_user:",
                  "run the attacks on one model in one job and download the report: verdicts, "
                  "figures, DP bound, provenance"),
        PageEntry("app_pages/extraction.py", "Training-data extraction", ":material/output:",
                  "what training text can be pulled out of a model? generate, rank by "
                  "membership metrics, verify (Carlini et al. 2021); memorisation in bits "
                  "beside the DP bound (Liu et al. 2026, Hayes et al. 2025)"),
        PageEntry("app_pages/pii_probe.py", "PII probing", ":material/badge:",
                  "does the model give a person's PII back from their name? twins and "
                  "triplets through the chat template, exact extraction in k samples, the true "
                  "value's likelihood against fresh ones (ProPILE, Kim et al. 2023)"),
        PageEntry("app_pages/lazy_risk.py", "Lazy-sampling risk", ":material/casino:",
                  "which training sentences would a sampler reproduce? generation probability "
                  "vs calibrated loss (Stock et al. 2022)"),
        PageEntry("app_pages/user_inference.py", "User inference", ":material/person_search:",
                  "was this person's data used for fine-tuning? T̂, ROC, canary users, "
                  "mitigations (Kandpal et al. 2023)"),
        PageEntry("app_pages/mia.py", "Membership inference", ":material/fact_check:",
                  "was this document in the training set? loss, reference, zlib, Min-K%++, "
                  "ReCaLL, DC-PDD, EZ-MIA beside a blind baseline; secret-sharer exposure in "
                  "bits"),
        PageEntry("app_pages/diffrank.py", "Differential rank", ":material/difference:",
                  "what changed between two model snapshots? beam search for the phrases an "
                  "update exposes (Zanella-Béguelin, Tople et al. 2020)"),
        PageEntry("app_pages/plugins.py", "Plug-in attacks", ":material/extension:",
                  "the attacks that installed packages add (entry points), with their forms"),
    ],
    "DP lab": [
        PageEntry("app_pages/dp_lab.py", "DP lab", ":material/science:",
                  "is the bound tight? n-gram canary Monte Carlo vs L(p0), and DP fine-tuning "
                  "with a secret credit-card canary (Stock et al. 2022)"),
    ],
    "Other systems": [
        PageEntry("app_pages/lab_model_extraction.py", "Model extraction lab", ":material/key:",
                  "Privacy: recover a ReLU network's weights from black-box queries "
                  "(Rolnick & Körding 2020)"),
        PageEntry("app_pages/lab_gradient_leakage.py", "Gradient leakage lab", ":material/blur_on:",
                  "Privacy: rebuild training digits from one shared gradient (DLG, Zhu et al. 2019)"),
        PageEntry("app_pages/lab_label_only.py", "Label-only membership lab", ":material/label:",
                  "Privacy: tell members from labels alone (Choquette-Choo et al. 2021)"),
        PageEntry("app_pages/lab_trojan.py", "Trojaning lab", ":material/bug_report:",
                  "Integrity: plant a trojan trigger in a digits classifier (Liu et al. 2018) "
                  "or poison its training data (BadNets)"),
        PageEntry("app_pages/lab_contrastive_poisoning.py", "Contrastive poisoning lab",
                  ":material/link_off:",
                  "Integrity: backdoor a mini CLIP with a few poisoned image-caption pairs "
                  "(Carlini & Terzis 2022)"),
    ],
}
