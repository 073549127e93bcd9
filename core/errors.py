"""Errors that carry a message meant for the person using the app or the CLI."""


class UserError(ValueError):
    """Bad input: the message says what is wrong and how to fix it (shown as is, no traceback)."""


class NotApplicable(UserError):
    """The attack does not apply to these inputs (e.g. data holding no PII): the audit skips
    it rather than failing it."""


class DataError(UserError):
    """The data is unusable as given (a file, its columns or rows, or rows the model cannot
    render): a run would fail the same way, so a page keeps Run disabled and says why."""
