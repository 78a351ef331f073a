"""Sessions pushed from teammates' machines: personal API tokens and the ingest API (issue 14).

A small Django app of its own (tables, token checks, the writers and the JSON views), beside ``treeview``:
it calls ``treeview.access`` and ``treeview.services.sync`` and adds nothing to them.
"""
