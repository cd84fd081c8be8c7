"""``neardup index ...``: build, grow, query, inspect, back up and restore a persistent index."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Literal

import click

from neardup import interrupts
from neardup.cli import (
    _MAX_SKIP_LINES,
    _NEED_KEYS,
    EXIT_INPUT,
    EXIT_USAGE,
    _band_layers,
    _count,
    _errors,
    _fail,
    _fp_weight,
    _given_settings,
    _index_option,
    _index_settings_options,
    _key_column,
    _lines,
    _on_error,
    _print_shape,
    _progress,
    _quiet,
    _read_options,
    _report_skipped,
    _settings_options,
    _size,
    _text_column,
    main,
)
from neardup.cli_console import QuietConsole, new_console
from neardup.config import DedupConfig, ShingleMode, Sketch, Tokenizer
from neardup.redaction import redact_url

if TYPE_CHECKING:
    from rich.console import Console

# -- the index -----------------------------------------------------------------------------------


def _open_index(url: str, *, given: dict[str, Any] | None = None, readonly: bool = False) -> Any:
    """The index at ``url``, its settings checked against those ``given`` (read only: never
    written to); errors exit."""
    from neardup.jobs import open_index

    with _errors():
        return open_index(url, settings=given, readonly=readonly)


def _read_for_index(inputs: tuple[str, ...], options: Any) -> Any:
    from neardup.io import read_corpus

    with _errors():
        corpus = read_corpus(list(inputs), options)
    _report_skipped(corpus.skipped)
    return corpus


def _insert_corpus(index: Any, corpus: Any, console: Console | QuietConsole) -> int:
    """Insert every row, in all-or-nothing chunks, with a progress bar; return how many."""
    from neardup.jobs import index_corpus

    if isinstance(console, QuietConsole):
        with _errors():
            return index_corpus(index, corpus, lambda _, done, total: None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description:<20}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    with bar:
        task = bar.add_task("Indexing", total=max(corpus.table.num_rows, 1))
        with _errors():
            return index_corpus(index, corpus, lambda _, done, total: bar.update(task, completed=done))


@main.group()
def index() -> None:
    """Build, grow, query, inspect and back up a persistent LSH index.

    An index lives in an SQLite file (idx.db, sqlite:///abs/idx.db) or on a
    Redis server (redis://host:port/db). It stores its settings, and every
    later command uses them.
    """


@index.command("build")
@click.argument("inputs", nargs=-1, required=True, metavar="CORPUS...")
@_index_option
@_text_column
@_key_column
@_lines
@_settings_options
@_fp_weight
@_band_layers
@click.option(
    "--keep-shingles", is_flag=True, help="Also store each document's shingles, for exact similarity."
)
@click.option(
    "--containment",
    is_flag=True,
    help="Also file documents for containment search (index query --containment).",
)
@click.option(
    "--replace",
    "replace_existing",
    is_flag=True,
    help="Empty an index that already holds documents and build it anew with these settings.",
)
@_on_error
@_quiet
def index_build(
    inputs: tuple[str, ...],
    index_url: str,
    text_column: str,
    id_column: str | None,
    lines: bool,
    shingle: ShingleMode | None,
    ngram: int | None,
    tokenizer: Tokenizer | None,
    num_perm: int | None,
    seed: int | None,
    sketch: Sketch | None,
    threshold: float | None,
    bands: int | None,
    rows: int | None,
    nfkc: bool | None,
    keep_accents: bool,
    keep_case: bool,
    keep_punctuation: bool,
    fp_weight: float | None,
    layers: int | None,
    keep_shingles: bool,
    containment: bool,
    replace_existing: bool,
    on_error: Literal["stop", "skip"],
    quiet: bool,
) -> None:
    """Create an index of CORPUS files with these settings; keys are --id-column values.

    An index that already holds documents is refused unless --replace is given,
    which removes them and their settings first (not atomically: an interrupted
    --replace leaves a partly built index; run it again). An existing empty
    index takes the new settings. Every chunk of 50,000 rows is added whole or
    not at all.
    """
    from neardup.jobs import build_index

    if id_column is None:
        _fail(_NEED_KEYS.format(what="index build"), EXIT_USAGE)
    given = _given_settings(
        shingle=shingle,
        ngram=ngram,
        tokenizer=tokenizer,
        num_perm=num_perm,
        seed=seed,
        sketch=sketch,
        threshold=threshold,
        bands=bands,
        rows=rows,
        nfkc=nfkc,
        keep_accents=keep_accents,
        keep_case=keep_case,
        keep_punctuation=keep_punctuation,
    )
    with _errors():
        config = DedupConfig.create(**given, fp_weight=fp_weight, layers=layers)
        options = _read_options(text_column, id_column, lines, on_error)
    corpus = _read_for_index(inputs, options)
    err = new_console(stderr=True, quiet=quiet)
    with _errors():
        idx = build_index(
            index_url, config, keep_shingles=keep_shingles, containment=containment, replace=replace_existing
        )
    _print_shape(err, config)
    with _errors(), idx:
        added = _insert_corpus(idx, corpus, err)
        total = len(idx)
    if not quiet:
        click.echo(
            f"Indexed {_count(added, 'document')} into {redact_url(index_url)} ({total:,} in the index)"
        )


@index.command("add")
@click.argument("inputs", nargs=-1, required=True, metavar="CORPUS...")
@_index_option
@_text_column
@_key_column
@_lines
@_index_settings_options
@_on_error
@_quiet
def index_add(
    inputs: tuple[str, ...],
    index_url: str,
    text_column: str,
    id_column: str | None,
    lines: bool,
    shingle: ShingleMode | None,
    ngram: int | None,
    tokenizer: Tokenizer | None,
    num_perm: int | None,
    seed: int | None,
    sketch: Sketch | None,
    threshold: float | None,
    bands: int | None,
    rows: int | None,
    nfkc: bool | None,
    keep_accents: bool,
    keep_case: bool,
    keep_punctuation: bool,
    on_error: Literal["stop", "skip"],
    quiet: bool,
) -> None:
    """Add CORPUS files to an existing index, with the index's settings.

    Settings options are not needed; one that differs from the index's is
    refused. A key already in the index is replaced by the new text.
    """
    if id_column is None:
        _fail(_NEED_KEYS.format(what="index add"), EXIT_USAGE)
    given = _given_settings(
        shingle=shingle,
        ngram=ngram,
        tokenizer=tokenizer,
        num_perm=num_perm,
        seed=seed,
        sketch=sketch,
        threshold=threshold,
        bands=bands,
        rows=rows,
        nfkc=nfkc,
        keep_accents=keep_accents,
        keep_case=keep_case,
        keep_punctuation=keep_punctuation,
    )
    with _errors():
        options = _read_options(text_column, id_column, lines, on_error)
    with _errors(), _open_index(index_url, given=given) as idx:  # a storage error exits, named
        corpus = _read_for_index(inputs, options)
        err = new_console(stderr=True, quiet=quiet)
        before = len(idx)
        added = _insert_corpus(idx, corpus, err)
        total = len(idx)
    if not quiet:
        click.echo(
            f"Added {_count(added, 'document')} to {redact_url(index_url)} "
            f"({total - before:,} new, {total:,} in the index)"
        )


@index.command("query")
@_index_option
@click.option("--text", default=None, help="The query text [default: read standard input].")
@click.option(
    "--file",
    "query_file",
    default=None,
    metavar="FILE",
    help="A file of queries (JSONL, CSV, Parquet, text, HTML), one per record.",
)
@click.option("--text-column", default="text", show_default=True, help="With --file: the text column.")
@click.option("--id-column", default=None, help="With --file: the query id column [default: row number].")
@click.option("--lines", is_flag=True, help="With --file: plain text, one query per line.")
@click.option(
    "--threshold", type=float, default=None, help="Lowest similarity returned [default: the index's]."
)
@click.option(
    "--containment",
    "min_containment",
    type=float,
    default=None,
    metavar="C",
    help="Search by containment instead: documents sharing at least C of the query's shingles "
    "(needs an index built with --containment).",
)
@click.option(
    "--direction",
    type=click.Choice(["query_in_doc", "doc_in_query"]),
    default="query_in_doc",
    show_default=True,
    help="With --containment: the share of the query found in a document, or of a document in the query.",
)
@click.option("--top-k", type=int, default=None, help="At most K matches per query.")
@click.option(
    "--exact",
    is_flag=True,
    help="Exact scores (needs an index built with --keep-shingles; with --containment, the default there).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per match on standard output.")
def index_query(
    index_url: str,
    text: str | None,
    query_file: str | None,
    text_column: str,
    id_column: str | None,
    lines: bool,
    threshold: float | None,
    min_containment: float | None,
    direction: Literal["query_in_doc", "doc_in_query"],
    top_k: int | None,
    exact: bool,
    as_json: bool,
) -> None:
    """Print the indexed documents similar to a query, best first.

    The query is --text, or the texts of --file, or else all of standard input
    (one query). Matches are printed as a table (query, key, similarity, exact)
    or, with --json, one line per match: {"query": ..., "key": ...,
    "similarity": ..., "exact": ...}. "query" is the query's id: its
    --id-column value, its row number (from 0) in --file, or 0. No match is not
    an error: the exit code is 0.

    With --containment C the score is containment, not Jaccard: with
    --direction query_in_doc (the default) the share of the query's shingles
    found in a document (is this text copied from one?), with doc_in_query the
    share of a document's found in the query (which documents does it copy?).
    Matches are never below C; "containment" replaces "similarity" in --json.
    """
    if text is not None and query_file is not None:
        _fail("give either --text or --file, not both", EXIT_USAGE)
    if min_containment is not None and threshold is not None:
        _fail("--threshold is a Jaccard similarity; with --containment give only C", EXIT_USAGE)
    if query_file is not None:
        from neardup.io import read_corpus

        with _errors():
            corpus = read_corpus([query_file], _read_options(text_column, id_column, lines, "stop"))
        query_ids: list[Any] = corpus.table.column(corpus.id_column).to_pylist()
        texts = [t or "" for t in corpus.table.column(corpus.text_column).to_pylist()]
    else:
        query_ids = [0]
        texts = [text if text is not None else sys.stdin.read()]
    score = "similarity" if min_containment is None else "containment"
    with _open_index(index_url, readonly=True) as idx, _errors():
        if min_containment is None:
            found = idx.query_many(texts, threshold=threshold, top_k=top_k, exact=exact)
        else:
            found = idx.query_containment_many(
                texts, min_containment, direction=direction, top_k=top_k, exact=True if exact else None
            )
    rows = [
        (q, m.key, getattr(m, score), m.exact) for q, ms in zip(query_ids, found, strict=True) for m in ms
    ]
    if as_json:
        for q, key, value, is_exact in rows:
            record = {"query": q, "key": key, score: round(value, 6), "exact": is_exact}
            click.echo(json.dumps(record, ensure_ascii=False))
        return
    if not rows:
        click.echo("no matches", err=True)
        return
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    for name, justify in (("query", "left"), ("key", "left"), (score, "right"), ("exact", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for q, key, value, is_exact in rows:
        table.add_row(str(q), key, f"{value:.4f}", "yes" if is_exact else "no")
    new_console(soft_wrap=True).print(table)


@index.command("remove")
@click.argument("keys", nargs=-1, required=True, metavar="KEY...")
@_index_option
@_quiet
def index_remove(keys: tuple[str, ...], index_url: str, quiet: bool) -> None:
    """Remove documents by key.

    Keys not in the index are listed on standard error. The exit code is 0 when
    at least one key was removed, and 1 when none of the keys was in the index.
    """
    with _errors(), _open_index(index_url) as idx:
        unknown = [k for k in dict.fromkeys(keys) if k not in idx]
        removed = idx.remove_many(list(dict.fromkeys(keys)))
        total = len(idx)
    if unknown:
        shown = ", ".join(unknown[:_MAX_SKIP_LINES]) + (" ..." if len(unknown) > _MAX_SKIP_LINES else "")
        click.echo(f"neardup: not in the index: {shown}", err=True)
    if not quiet:
        click.echo(f"Removed {_count(removed, 'document')} from {redact_url(index_url)} ({total:,} left)")
    if removed == 0:
        sys.exit(EXIT_INPUT)


@index.command("stats")
@_index_option
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def index_stats(index_url: str, as_json: bool) -> None:
    """Documents, LSH shape, settings, size on disk and backend of an index."""
    with _open_index(index_url, readonly=True) as idx, _errors():
        stats = idx.stats()
    if as_json:
        click.echo(json.dumps(stats, indent=2, ensure_ascii=False))
        return
    s = stats["settings"]
    size = stats["size_bytes"]
    from rich.table import Table

    from neardup.core.params import second_layer_bands

    table = Table(title="neardup index", show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value", overflow="fold")  # a long path folds, never cut
    second = second_layer_bands(stats["bands"], stats["rows"], s["num_perm"])
    for name, value in (
        ("Location", stats["url"]),
        ("Backend", stats["backend"]),
        ("Documents", f"{stats['documents']:,}"),
        ("LSH shape", f"{stats['bands']} bands x {stats['rows']} rows ({s['num_perm']} permutations)"),
        *([("Second layer", f"{second} of the {stats['bands']} bands")] if second else []),
        ("Threshold", f"{s['threshold']}"),
        ("Shingles", f"{s['shingle_mode']} {s['ngram']}-grams" + _words_and_kept(s)),
        (
            "Containment",
            f"searchable ({len(s['partitions'])} size partitions hold documents)"
            if s["containment"]
            else "not searchable (build with --containment)",
        ),
        ("Seed", f"{s['seed']}"),
        ("Sketch", s["sketch"]),
        (
            "Normalisation",
            ", ".join(name for name in ("nfkc", "strip_accents", "lowercase", "strip_punctuation") if s[name])
            or "none",
        ),
        ("Format version", f"{s['format_version']} (hash version {s['hash_version']})"),
        ("Size on disk", "unknown" if size is None else f"{size:,} bytes"),
    ):
        table.add_row(name, value)
    new_console(soft_wrap=True).print(table)


def _copy_index(
    restore: bool, source: str, dest: str, replace_existing: bool, as_json: bool, quiet: bool
) -> None:
    """Run a backup or a restore with progress bars, then print its summary or figures."""
    from neardup.jobs import BackupNotFoundError, IndexExistsError, backup_index, restore_index

    copy = restore_index if restore else backup_index
    err = new_console(stderr=True, quiet=quiet)
    with _errors():
        try:
            with interrupts.DeferredInterrupt(), _progress(err) as on_progress:
                figures = copy(source, dest, replace=replace_existing, progress=on_progress)
        except BackupNotFoundError as exc:
            _fail(str(exc), EXIT_INPUT)
        except IndexExistsError as exc:
            _fail(f"{exc}; pass --replace to overwrite it, or choose another DEST", EXIT_INPUT)
    if as_json:
        click.echo(json.dumps(figures, indent=2, ensure_ascii=False))
        return
    if not quiet:
        size = figures["size_bytes"]
        details = [figures["method"], *([] if size is None else [_size(size)]), f"{figures['seconds']:.2f} s"]
        if figures["attempts"] > 1:
            details.append(f"{figures['attempts']} attempts")
        if figures["replaced"]:
            details.append(f"replaced {_count(figures['replaced'], 'document')}")
        verb = "Restored" if restore else "Backed up"
        documents = _count(figures["documents"], "document")
        click.echo(
            f"{verb} {documents} from {redact_url(source)} to {redact_url(dest)} ({', '.join(details)})"
        )


_replace_dest = click.option(
    "--replace", "replace_existing", is_flag=True, help="Overwrite a DEST that already holds an index."
)
_copy_json = click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")


@index.command("backup")
@click.argument("source", metavar="SRC")
@click.argument("dest", metavar="DEST")
@_replace_dest
@_copy_json
@_quiet
def index_backup(source: str, dest: str, replace_existing: bool, as_json: bool, quiet: bool) -> None:
    """Copy the index at SRC to DEST, consistently, while SRC stays in use.

    SRC and DEST are SQLite files (idx.db, sqlite:///abs/idx.db) or Redis
    locations (redis://host:port/db?prefix=name). An SQLite SRC is copied with
    SQLite's online backup API from one snapshot, while other processes keep
    reading and writing it; any other SRC is read in batches, and read again if
    a write came meanwhile (a few times, then the backup fails). DEST appears
    only complete: a file is written beside it and renamed, a Redis index is
    written under a prefix of its own and moved onto DEST's in one step; a
    failed backup leaves DEST as it was.

    A DEST that holds documents is refused unless --replace is given; an SQLite
    DEST that another process has open is always refused. --json prints the
    figures: documents, source, destination, their backends, method, attempts,
    replaced (documents DEST held), seconds and size_bytes.
    """
    _copy_index(False, source, dest, replace_existing, as_json, quiet)


@index.command("restore")
@click.argument("source", metavar="BACKUP")
@click.argument("dest", metavar="DEST")
@_replace_dest
@_copy_json
@_quiet
def index_restore(source: str, dest: str, replace_existing: bool, as_json: bool, quiet: bool) -> None:
    """Copy the backup at BACKUP to DEST, an SQLite file or a Redis location.

    BACKUP is what neardup index backup wrote (any index location will do).
    The copy is made as a backup is, with the same guarantees: DEST appears
    only complete, in one step (a Redis service using DEST sees the old index,
    then the restored one), and a failed restore leaves DEST as it was. A DEST
    that holds documents is refused unless --replace is given; an SQLite DEST
    that another process has open is always refused (stop it first). --json
    prints the figures, as for neardup index backup.
    """
    _copy_index(True, source, dest, replace_existing, as_json, quiet)


def _words_and_kept(settings: dict[str, Any]) -> str:
    """What the Shingles row says after the n-grams: the segmenter, and whether shingles are kept."""
    words = f" of {settings['tokenizer']} words" if settings.get("tokenizer", "builtin") != "builtin" else ""
    return words + (", kept" if settings["keep_shingles"] else "")
