"""The ingest app's views: the JSON API (api.py) and the API tokens page (tokens.py)."""
