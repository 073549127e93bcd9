"""The audit: several attacks on one model and one report (core.audit.audit)."""
