"""Readers and writers: files in, one Arrow table out; results into an atomic output directory.

Inputs may be JSON Lines (or a ``.json`` array of records), CSV/TSV, Parquet, plain
text or HTML, named as files, directories or glob patterns; frames held in memory
(pyarrow, polars, duckdb, pandas, Hugging Face datasets) become a table with
:func:`arrow_table`::

    corpus = read_corpus(["data/*.jsonl"], ReadOptions(text_column="body"))
    with OutputDir("out") as out:
        out.write("annotated", corpus.table, default_output_format(corpus.family))
"""

from neardup.io.frames import arrow_table
from neardup.io.html import html_to_text
from neardup.io.inputs import (
    INPUT_EXTENSIONS,
    Corpus,
    ReadOptions,
    expand_inputs,
    read_corpus,
)
from neardup.io.writers import OUTPUT_FORMATS, OutputDir, default_output_format, write_table

__all__ = [
    "INPUT_EXTENSIONS",
    "OUTPUT_FORMATS",
    "Corpus",
    "OutputDir",
    "ReadOptions",
    "arrow_table",
    "default_output_format",
    "expand_inputs",
    "html_to_text",
    "read_corpus",
    "write_table",
]
