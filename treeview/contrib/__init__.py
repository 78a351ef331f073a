"""Extensions that ship with Arbor, off unless listed in ``ARBOR_EXTENSIONS`` (see docs/extensions.md)."""
