"""Synthetic oh-my-pi (v15-style) session files for tests and benchmarks.

:func:`generate_session` yields the JSONL lines of a realistic, fully deterministic session: a version-3
header followed by user / assistant / toolResult turns with heavy-tailed tool output, thinking blocks, tool
calls, usage with float costs, model and thinking-level changes, rewinds and excursions (so the tree
branches), branch summaries, compactions, labels (set and cleared) and custom entries. Every entry is
serialized with :func:`treeview.session.jsonl.dumps`, with keys in the order the v15 writer uses (spec
§4–§6), so the files look byte-for-byte like something omp could have written.

Only ``random.Random(seed)`` is used as a source of randomness and no set is ever iterated, so the same
``(entries, seed)`` always gives the same bytes, on any machine and under any ``PYTHONHASHSEED``.

Sizes are tuned so that a 100,000-entry session is about 250 MB with a current path tens of thousands of
entries deep, which is what a long-lived omp session that has been compacted many times looks like.

The generator is one class, ``_Generator`` (driver.py), built from layers in their own modules: primitives.py,
content.py and conversation.py; vocabulary.py and corpus.py hold what it draws from.
"""

from treeview.session.generate.driver import generate_session, write_session

__all__ = ["generate_session", "write_session"]
