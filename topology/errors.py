"""The one error type bad input raises: it names the field and the rule broken."""

from __future__ import annotations


class SpecError(ValueError):
    def __init__(self, field: str, rule: str):
        self.field = field
        self.rule = rule
        super().__init__(f"{field}: {rule}")


class SpecErrors(ValueError):
    """Several SpecErrors found at once (validation reports all it can)."""

    def __init__(self, errors: list[SpecError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


def plain(text: object) -> str:
    """`text` safe to print on a terminal: control characters (escape sequences, newlines in a
    key) shown as \\xNN escapes, so input can neither hide nor restyle an error line."""
    return "".join(
        c if c.isprintable() or c == " " else ascii(c)[1:-1] for c in str(text)
    )
