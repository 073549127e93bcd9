"""Attacks and labs behind one interface (see ``core.attacks.base``) and their registry."""
