"""PII probing of data subjects (ProPILE): ``spec`` runs it."""
