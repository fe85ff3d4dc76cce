"""``papertrack crosswalk``: propose a crosswalk (old taxonomy's names -> new taxonomy's) from the papers.

The proposal itself is :mod:`papertrack.training.crosswalk_proposal`; this module reads the data, picks the two
taxonomies' papers, writes the file, prints the table and logs the MLflow run (``papertrack.kind=crosswalk``).
"""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from papertrack import settings
from papertrack.errors import UsageError
from papertrack.features.ingest import FORMATS

SHORT_HELP = "Propose a crosswalk (old names -> new names) from the papers, to edit for train --crosswalk."
HELP = (
    "Propose a crosswalk from the papers: fit a model of the --from taxonomy's names on its papers, predict the "
    "--to taxonomy's labeled papers, and write which old names became which new ones (renames, merges, splits; "
    "new names with no old analog flagged) to a file you edit and pass to `papertrack train --crosswalk FILE`. "
    "HONESTY: the proposal is made from the --to taxonomy's own labels, so a model trained through it must not "
    "be scored on a temporal holdout of those same papers."
)


def crosswalk(
    sources: Annotated[
        list[str],
        typer.Option(
            "--from",
            metavar="TAXONOMY",
            help='The old taxonomy, as "venue year" (e.g. "ICML 2024"); repeat it for sources that share one '
            'set of names (--from "ICLR 2024" --from "ICML 2024").',
            show_default=False,
        ),
    ],
    target: Annotated[
        str,
        typer.Option("--to", metavar="TAXONOMY", help='The new taxonomy (e.g. "ICML 2025").', show_default=False),
    ],
    data: Annotated[
        list[Path] | None,
        typer.Option(
            "--data",
            "-d",
            help="Labeled file(s) (repeatable). Default: every labeled *_topics.jsonl in $PAPERTRACK_DATA_DIR.",
        ),
    ] = None,
    fmt: Annotated[str | None, typer.Option("--format", help=f"Force the input format: {', '.join(FORMATS)}.")] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where to write the crosswalk. Default: crosswalk-<from>-to-<to>.yaml."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file (never an input).")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the model.")] = settings.DEFAULT_SEED,
    log: Annotated[
        bool, typer.Option("--log/--no-log", help="Log an MLflow run (heatmap, the proposal, params).")
    ] = True,
) -> None:
    from papertrack.console import console, err_console
    from papertrack.training import crosswalk_proposal as cp
    from papertrack.training import crosswalk_render
    from papertrack.training.data import default_data_paths, source_of
    from papertrack.training.dataset import load_dataset
    from papertrack.training.taxonomies import taxonomy_slug

    sources = list(dict.fromkeys(s.strip() for s in sources))
    target = target.strip()
    if target in sources:
        raise UsageError(f"--to {target!r} is also a --from; the crosswalk maps one taxonomy's names to another's")
    paths = list(data) if data else default_data_paths(settings.current().data_dir)
    out = (
        output
        if output is not None
        else Path(f"crosswalk-{'+'.join(map(taxonomy_slug, sources))}-to-{taxonomy_slug(target)}.yaml")
    )
    check_output(out, paths, force)
    with err_console.status(f"reading {len(paths)} file(s)"):
        records, summary = load_dataset([str(p) for p in paths], fmt, labeled=True)
    present: dict[str, int] = {}
    for record in records:
        present[source_of(record)] = present.get(source_of(record), 0) + 1
    listing = ", ".join(f"{name} ({n:,})" for name, n in present.items())
    for option, name in [*(("--from", s) for s in sources), ("--to", target)]:
        if name not in present:
            raise UsageError(f"{option} {name!r} is no source of the data; the sources are: {listing}")
    old = [r for r in records if source_of(r) in sources]
    new = [r for r in records if source_of(r) == target]
    status(f"{summary.kept:,} labeled papers ({listing}); old: {len(old):,}, new: {len(new):,}")
    old_names = {cp.canonical(r.label) for r in old if r.label}
    if len(old_names) < 2:
        raise UsageError(
            f"the --from papers carry {len(old_names)} name(s) ({', '.join(sorted(old_names))}); a model of the "
            "old taxonomy needs at least 2"
        )
    with err_console.status("fitting") as spinner:
        proposal = cp.propose(
            [r.abstract for r in old],
            [r.label for r in old],
            [r.abstract for r in new],
            [r.label for r in new],
            sources=sources,
            target=target,
            seed=seed,
            progress=lambda message: (spinner.update(message), status(message)),
        )
    command = "papertrack crosswalk " + " ".join(
        [*(f"--from {shlex.quote(s)}" for s in sources), f"--to {shlex.quote(target)}"]
    )
    console.print(proposal_table(proposal))
    if not proposal.mapped:
        why = (
            f"no new name looks like the {len(proposal.entries)} old name(s) that vanished"
            if proposal.entries
            else "every old name is kept"
        )
        say(f"Nothing to map: {why}; no crosswalk written (a crosswalk needs an entry).")
        raise typer.Exit(1)
    text = crosswalk_render.render(proposal, command)
    write_text(out, text)
    s = proposal.summary()
    say(
        f"{s['renames']} renames, {s['merges']} merges, {s['splits']} splits, {s['no_analog']} new names with no "
        f"old analog (flagged), {s['same_name']} kept, {s['unmapped_old']} old names unmapped -> {out}"
    )
    say(
        f"Edit it, then: papertrack train --crosswalk {out} (not to be scored on {target}'s own papers: see its header)"
    )
    if log:
        from papertrack import store

        run_id, uri = log_run(store.open(), proposal, text)
        say(f"MLflow run {run_id} ({uri})")


def check_output(path: Path, inputs: list[Path], force: bool) -> None:
    """UsageError when writing ``path`` would replace an input, or an existing file without ``force``."""
    if path.is_dir():
        raise UsageError(f"-o {path} is a folder; name a file in it, e.g. {path / 'crosswalk.yaml'}")
    for source in inputs:
        if _same_file(Path(source), path):
            raise UsageError(f"-o {path} is one of the inputs (writing the crosswalk would replace it)")
    if path.exists() and not force:
        raise UsageError(f"{path} exists; --force overwrites it, or choose another -o")


def say(message: str) -> None:
    """A result line on stdout, as written (no markup)."""
    from papertrack.console import console

    console.print(message, soft_wrap=True, markup=False, highlight=False)


def status(message: str) -> None:
    """A status line on stderr, as written."""
    from papertrack.console import err_console

    err_console.print(message, soft_wrap=True, markup=False, highlight=False)


def _same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name one file (same resolved path, or the same inode through a link)."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in its folder (no half-written crosswalk)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def proposal_table(proposal):
    """One row per new name that is not kept: its relation, papers, the old names mapped to it and where its
    papers fall (share and count of their top-1 answers)."""
    from rich.table import Table

    from papertrack.training import crosswalk_proposal as cp

    order = {cp.RENAME: 0, cp.MERGE: 1, cp.SPLIT: 2, cp.NO_ANALOG: 3}
    rows = sorted((n for n in proposal.names if n.relation != cp.SAME), key=lambda n: (order[n.relation], n.name))
    kept = proposal.relation_count(cp.SAME)
    table = Table(
        title=f"{' + '.join(proposal.sources)} -> {proposal.target}: {len(rows)} new names "
        f"({kept} kept names not shown)",
        title_justify="left",
        box=None,
        pad_edge=False,
    )
    table.add_column("new name", overflow="fold")
    table.add_column("relation", no_wrap=True)
    table.add_column("papers", justify="right")
    table.add_column("from (crosswalk)", overflow="fold")
    table.add_column("its papers fall into (top-1 share, count)", overflow="fold")
    shares = {e.old: dict(e.targets) for e in proposal.entries}
    for n in rows:
        mapped = "; ".join(f"{old} ({shares[old][n.name]:.2f})" for old in n.sources) or "-"
        falls = "; ".join(f"{old} {share:.0%} ({count})" for old, share, count in n.falls_into[:2])
        style = "bold yellow" if n.relation == cp.NO_ANALOG else None
        table.add_row(n.name, n.relation, str(n.papers), mapped, falls, style=style)
    return table


def log_run(store, proposal, text: str) -> tuple[str, str]:
    """One MLflow run in papertrack's experiment of ``store``: params, the summary as metrics, the heatmap, the
    proposal. (run id, tracking URI)."""
    from papertrack import __version__
    from papertrack.training.run_log import RunLog, open_experiment
    from papertrack.training.taxonomies import taxonomy_slug

    experiment = open_experiment(store)
    name = f"crosswalk-{'+'.join(map(taxonomy_slug, proposal.sources))}-to-{taxonomy_slug(proposal.target)}"
    run = RunLog.start(
        store, experiment.experiment_id, name, {"papertrack.kind": "crosswalk", "papertrack.version": __version__}
    )
    failed = True
    try:
        run.params(
            {
                "from": " + ".join(proposal.sources),
                "to": proposal.target,
                "seed": proposal.seed,
                "candidate": proposal.candidate,
                **proposal.thresholds,
            }
        )
        run.metrics(
            {
                **proposal.summary(),
                "old_papers": int(proposal.old_papers.sum()),
                "new_papers": int(proposal.new_papers.sum()),
            }
        )
        run.text(text, "crosswalk.yaml")
        run.text(matrix_csv(proposal), "crosswalk_matrix.csv")
        figure = heatmap(proposal)
        run.figure(figure, "crosswalk_heatmap.png")
        import matplotlib.pyplot as plt

        plt.close(figure)
        failed = False
    finally:
        run.end(failed=failed)
    return run.run_id, store.tracking_uri


def matrix_csv(proposal) -> str:
    """new name, old name, top-1 count, mean probability share, lift: every nonzero-count or >= 1% pair (the csv
    module's quoting; names spreadsheet-safe, as ``label``'s CSV)."""
    import csv
    import io

    from papertrack.features.spreadsheet import spreadsheet_safe

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["new", "old", "top1", "share", "lift"])
    for i, new in enumerate(proposal.new_names):
        for j, old in enumerate(proposal.old_names):
            if proposal.counts[i, j] or proposal.shares[i, j] >= 0.01:
                writer.writerow(
                    [
                        spreadsheet_safe(new),
                        spreadsheet_safe(old),
                        int(proposal.counts[i, j]),
                        f"{proposal.shares[i, j]:.4f}",
                        f"{proposal.lift[i, j]:.2f}",
                    ]
                )
    return out.getvalue()


def heatmap(proposal):
    """New names (rows; kept names left out) x the old names that matter to them (columns: every vanished old name
    and each new name's top old names): the mean probability share, with the top-1 count written in the cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from papertrack.training import crosswalk_proposal as cp

    rows = [i for i, n in enumerate(proposal.names) if n.relation != cp.SAME] or list(range(len(proposal.names)))
    wanted = {e.old for e in proposal.entries} | {old for i in rows for old, _, _ in proposal.names[i].falls_into}
    cols = [j for j, old in enumerate(proposal.old_names) if old in wanted]
    values = proposal.shares[np.ix_(rows, cols)]
    counts = proposal.counts[np.ix_(rows, cols)]
    width, height = 0.24 * len(cols) + 5.5, 0.24 * len(rows) + 5.0
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    image = ax.imshow(values, cmap="Blues", vmin=0, vmax=max(0.05, float(values.max())), aspect="auto")
    ax.set_xticks(range(len(cols)), [proposal.old_names[j] for j in cols], rotation=90, fontsize=7)
    ax.set_yticks(
        range(len(rows)),
        [f"{proposal.names[i].name} ({proposal.names[i].relation}, {proposal.names[i].papers})" for i in rows],
        fontsize=7,
    )
    for r in range(len(rows)):
        for c in range(len(cols)):
            if counts[r, c]:
                dark = values[r, c] > 0.6 * values.max()
                ax.text(
                    c, r, str(counts[r, c]), ha="center", va="center", fontsize=5.5, color="white" if dark else "black"
                )
    ax.set_xlabel(f"old name ({' + '.join(proposal.sources)}): the model's answer")
    ax.set_ylabel(f"new name ({proposal.target}): the papers' label")
    ax.set_title(
        f"Where {proposal.target}'s new names fall in a model of {' + '.join(proposal.sources)}\n"
        "colour: mean probability share; number: top-1 answers",
        fontsize=9,
    )
    fig.colorbar(image, ax=ax, fraction=0.02, label="mean probability share")
    return fig


def add_commands(app: typer.Typer) -> None:
    app.command(help=HELP, short_help=SHORT_HELP)(crosswalk)
