"""Errors that carry a message meant for the person using the app or the CLI."""


class UserError(ValueError):
    """Bad input: the message says what is wrong and how to fix it (shown as is, no traceback)."""
