"""The drift report at the end of ``papertrack label``: how the labeled dump differs from the training data.

Computed after the run from the finished output (each row's top track, its probability and the top
area) and the input abstracts (for the vocabulary share), so it covers resumed runs exactly and adds
nothing to the labeling loop. The numbers are :func:`papertrack.models.drift.drift_report`'s; they are
printed and written beside the output as ``OUT.drift.json``. The service's ``POST /drift`` reports on one batch of
papers with the same numbers (:mod:`papertrack.serving.http.drift_api`).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from pathlib import Path

from papertrack.features.ingest import Record, iter_records
from papertrack.features.text import model_text
from papertrack.models.drift import DumpStats, TrainingProfile, analyzer, drift_report, summary_lines
from papertrack.serving.size_limits import MAX_BATCH

CHUNK = 5_000


def drift_path(output: Path) -> Path:
    name = output.name
    for suffix in (".jsonl", ".ndjson", ".csv"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return output.with_name(name + ".drift.json")


def _top_of_rows(output: Path) -> Iterator[tuple[str, float, str]]:
    """(top label, its probability, top area) of every row of a labeling output (.jsonl or .csv)."""
    with open(output, encoding="utf-8", newline="") as f:
        if output.suffix.lower() == ".csv":
            for row in csv.DictReader(f):
                yield row["track_1"], float(row["probability_1"]), row["area"]
        else:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    yield row["tracks"][0]["label"], float(row["tracks"][0]["probability"]), row["area"]


def _labeled_keys(output: Path) -> Iterator[tuple[str, int]]:
    """(source, line) of every row of a labeling output, in output order (= input order)."""
    with open(output, encoding="utf-8", newline="") as f:
        if output.suffix.lower() == ".csv":
            for row in csv.DictReader(f):
                yield row["source"], int(row["line"])
        else:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    yield row["source"], int(row["line"])


def _labeled_records(
    inputs: Sequence[Path], formats: Sequence[str | None], labeled: Iterator[tuple[str, int]] | None = None
) -> Iterator[Record]:
    """The input records; with ``labeled`` (the output's (source, line) keys, in input order), only the records
    that have a row: a record the run rejected (an error row) is left out."""
    wanted = next(labeled, None) if labeled is not None else None
    for path, fmt in zip(inputs, formats):
        for item in iter_records(path, fmt, labeled=None):
            if not isinstance(item, Record):
                continue
            if labeled is not None:
                if wanted != (item.source, item.line):
                    continue
                wanted = next(labeled, None)
            yield item
            if labeled is not None and wanted is None:
                return


def _texts(
    inputs: Sequence[Path],
    formats: Sequence[str | None],
    use_title: bool,
    labeled: Iterator[tuple[str, int]] | None = None,
    given: Counter[str] | None = None,
) -> Iterator[str]:
    """The model texts of the input records (of those with a row: :func:`_labeled_records`); ``given`` counts the
    labels those records carry (labeled dumps)."""
    for item in _labeled_records(inputs, formats, labeled):
        if given is not None and item.label:
            given[item.label] += 1
        yield model_text(item.abstract, item.title, use_title)


def output_drift(
    output: Path,
    inputs: Sequence[Path],
    profile: TrainingProfile,
    *,
    fmt: str | None = None,
    use_title: bool = False,
    known_labels: Sequence[str] | None = None,
    taxonomy: str = "",
) -> dict:
    """The drift report of a finished labeling output and its inputs; with ``known_labels`` (the labels of the
    taxonomy the model answered in), also the labels the input records carry that it cannot answer."""
    given: Counter[str] = Counter()
    stats = DumpStats.for_profile(profile)
    tokenize = analyzer()
    rows = _top_of_rows(output)
    while chunk := list(islice(rows, CHUNK)):
        stats.add(profile, [r[0] for r in chunk], [r[1] for r in chunk], [r[2] for r in chunk])
    if stats.n == 0:
        return drift_report(stats, profile)  # no record labeled: nothing to compare, not even the vocabulary
    texts = _texts(inputs, [fmt] * len(inputs), use_title, _labeled_keys(output), given)
    while chunk := list(islice(texts, CHUNK)):
        stats.add(profile, [], [], [], chunk, tokenize)
    report = drift_report(stats, profile)
    if known_labels is not None and given:
        report["given_labels"] = given_labels_report(given, known_labels, taxonomy)
        if report["given_labels"]["unknown"]:
            line = given_labels_warning(report["given_labels"])
            report["warning"] = f"{report['warning']}; {line}" if report["warning"] else line
    return report


def service_drift(service, output: Path, inputs: Sequence[Path], fmt: str | None = None) -> tuple[dict | None, str]:
    """(the drift report of a run labeled through a service (``--url``; ``service``: its HTTP backend), why not
    when None): ``POST /drift`` with the labeled records — all of them, or an evenly spaced sample of ``MAX_BATCH``
    (one request's most) when there are more, said in the report's ``sample``. The labels the records carry are
    counted here, over every labeled record, as a local run does."""
    total = sum(1 for _ in _labeled_keys(output))
    if total == 0:
        return None, "no record was labeled"
    step = max(1.0, total / MAX_BATCH)
    picked = {int(i * step) for i in range(min(total, MAX_BATCH))}
    given: Counter[str] = Counter()
    papers = []
    for i, record in enumerate(_labeled_records(inputs, [fmt] * len(inputs), _labeled_keys(output))):
        if record.label:
            given[record.label] += 1
        if i in picked:
            papers.append(record)
    report, why = service.drift(papers)
    if report is None:
        return None, why
    if len(papers) < total:
        report["sample"] = {"records": len(papers), "of": total}
    if given:
        report["given_labels"] = given_labels_report(given, sorted(service.labels), service.taxonomy)
        if report["given_labels"]["unknown"]:
            line = given_labels_warning(report["given_labels"])
            report["warning"] = f"{report['warning']}; {line}" if report.get("warning") else line
    return report, ""


def given_labels_report(given: Counter[str], known: Sequence[str], taxonomy: str = "") -> dict:
    """How many of the labels the input records carry the model can answer (in ``taxonomy``), and which it
    cannot (largest first): a dump labeled in another taxonomy's names."""
    from papertrack.features.labels import canonical_label

    known_set = set(known)
    unknown: Counter[str] = Counter()
    for label, n in given.items():
        try:
            canonical = canonical_label(label)
        except ValueError:
            canonical = label
        if canonical not in known_set:
            unknown[canonical] += n
    return {
        "taxonomy": taxonomy or None,
        "records": sum(given.values()),
        "unknown": sum(unknown.values()),
        "unknown_names": [{"label": label, "records": n} for label, n in unknown.most_common(20)],
    }


def given_labels_warning(given: dict) -> str:
    names = ", ".join(f"{u['label']!r} ({u['records']:,})" for u in given["unknown_names"][:3])
    more = len(given["unknown_names"]) - 3
    where = f" in {given['taxonomy']}" if given["taxonomy"] else ""
    return (
        f"{given['unknown']:,} of {given['records']:,} given labels are names the model cannot answer{where}: "
        f"{names}{f', … ({more} more)' if more > 0 else ''} — label with --taxonomy naming theirs "
        f"(papertrack taxonomies), or train with a crosswalk to it"
    )


def report_run(
    predictor,
    output: Path,
    inputs: Sequence[Path],
    *,
    fmt: str | None = None,
    say: Callable[[str], None],
    note: Callable[[str], None],
    service=None,
) -> dict | None:
    """Report the drift of a finished run (its lines through ``say``, the command's console) and write it to
    ``OUT.drift.json``: computed here from the model's training profile, or (labeling with --url: ``service``, the
    HTTP backend) by the service's ``POST /drift``. None (with a ``note``) when the model carries no training
    profile (trained before drift reports)."""
    if service is not None:
        report, why = service_drift(service, output, inputs, fmt)
    else:
        profile = getattr(predictor, "training_profile", None)
        why = "the model was trained before drift reports existed; retrain it to get one"
        report = (
            None
            if profile is None
            else output_drift(
                output,
                inputs,
                profile,
                fmt=fmt,
                use_title=bool(getattr(predictor, "use_title", False)),
                known_labels=predictor.space.labels,
                taxonomy=getattr(predictor, "taxonomy", ""),
            )
        )
    if report is None:
        note(f"no drift report ({why})")
        return None
    for line in summary_lines(report):
        say(line)
    path = drift_path(output)
    if path.resolve() in {Path(p).resolve() for p in inputs}:
        note(f"drift report not written: {path} is an input")
        return report
    path.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    say(f"drift report: {path}")
    return report
