"""`anvil compare`: did NEW score worse than BASE? A regression gate between two results files.

`paired.py` holds the statistics of one metric (paired differences, a document bootstrap,
flipped cases), `provenance.py` what differed between the runs (from their metadata) and
which differences refuse a comparison, `compare.py` composes them (`compare_files`) and
`render.py` writes the Markdown and JSON. The statistics need scipy (the `bench` extra), as
`anvil bench`'s do; `provenance.py` does not, and `anvil view` uses it without.
"""
