"""The readers of the data a user brings: ``data`` (the one reader of text, JSON, JSONL, CSV,
Parquet files and ``datasets`` folders, bounded as it reads), ``stream`` (line by line),
``arrow`` (pyarrow batches) and ``rows`` (TRL's dataset types without a model: which one a
table is, its turns and completions, what training learnt from). ``core.chat`` turns rows into
the tokens training read."""
