# No tables yet: session storage (AgentSession and its append-only entries) comes in the next issue.
# Until then the session list reads *.jsonl files straight from disk (treeview/session_files.py).
