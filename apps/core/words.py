"""Counted nouns in messages: "1 problem", "2 problems", never "2 problem(s)"."""


def counted(n: int, noun: str, plural: str = "") -> str:
    """``n`` and ``noun``, plural when ``n`` is not 1 (``plural`` when the noun does not simply
    take an s): ``counted(2, "problem")`` is "2 problems"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
