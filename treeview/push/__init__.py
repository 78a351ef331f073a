"""``./arbor push``: a small client that sends session files to an Arbor server's ingest API.

Depends on the core (``treeview/session``) and httpx (watchfiles for ``--watch``), never on Django: it runs
on a laptop with only Python and the project's requirements.
"""
