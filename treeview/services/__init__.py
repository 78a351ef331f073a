"""The only code that writes sessions: import and sync (``sync``), appends (``append``), export (``export``).

Views, consumers and management commands call these; each user action is one transaction.
"""
