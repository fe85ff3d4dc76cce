"""Which abstracts of a dump a person should label next, and the file they edit to label them.

:func:`choose` ranks a pool by how much its labels would teach the model:

* ``uncertainty`` — the most uncertain predictions first (``margin``: 1 − (p1 − p2); ``entropy``:
  the normalised entropy of the label probabilities);
* ``diverse`` — uncertainty spread over the pool: among the ``POOL_FACTOR`` × n most uncertain, a
  greedy maximal-marginal-relevance pick, ``(1 − λ)·uncertainty − λ·max cosine to the picks so far``
  over the model's own text features, so near-duplicates are not asked twice;
* ``random`` — the baseline every strategy must beat.

The probabilities come from :meth:`TrackPredictor.predict_proba` and the top-3 from
:meth:`TrackPredictor.rank` — the one prediction path. :func:`write_suggestions` writes the picks in the
labeled text-dump layout (``.txt``: label line pre-filled with the model's best guess, a
``# model-suggested:`` marker and a ``# top-3:`` comment above it, authors line if known, abstract), or
as JSONL/CSV (field ``model_suggested``). Fed back to ``papertrack train --data``, a label still equal
to the guess is left out of training unless ``--accept-suggested`` (see :mod:`papertrack.features.ingest`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from papertrack.errors import UsageError
from papertrack.features.ingest import SUGGESTED_FIELD, SUGGESTED_MARKER, BadRecord, Record, iter_records, make_id
from papertrack.serving.batch.labeler import outputs

STRATEGIES = ("diverse", "uncertainty", "random")
MEASURES = ("margin", "entropy")
POOL_FACTOR = 10  # diverse: MMR chooses among the POOL_FACTOR * n most uncertain
DIVERSITY = 0.5  # diverse: λ, the weight of "unlike the picks so far" against uncertainty
NEAR_DUPLICATE = 0.95  # diverse: a candidate this close (cosine) to a pick is taken only when nothing else is left
TOP_K = 3


# --------------------------------------------------------------------------- scores and picks


def uncertainty(proba: np.ndarray, measure: str = "margin") -> np.ndarray:
    """Per row, how unsure the model is, in [0, 1] (higher = more uncertain)."""
    proba = np.asarray(proba, dtype=np.float64)
    if measure == "margin":
        if proba.shape[1] < 2:
            return np.zeros(len(proba))
        top2 = -np.partition(-proba, 1, axis=1)[:, :2]
        return 1.0 - (top2[:, 0] - top2[:, 1])
    if measure == "entropy":
        p = np.clip(proba, 1e-12, 1.0)
        return -(proba * np.log(p)).sum(axis=1) / np.log(max(proba.shape[1], 2))
    raise UsageError(f"unknown uncertainty measure {measure!r}; known: {', '.join(MEASURES)}")


def choose(
    proba: np.ndarray,
    n: int,
    strategy: str = "diverse",
    *,
    features=None,
    measure: str = "margin",
    seed: int = 42,
    pool_factor: int = POOL_FACTOR,
    diversity: float = DIVERSITY,
) -> list[int]:
    """Row indices of the ``n`` picks, best first. ``features`` (rows of unit length, sparse or dense)
    are needed by ``diverse`` only."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    size = len(proba)
    n = min(n, size)
    if n <= 0:
        return []
    if strategy == "random":
        return [int(i) for i in np.random.default_rng(seed).choice(size, n, replace=False)]
    scores = uncertainty(proba, measure)
    order = np.argsort(-scores, kind="stable")
    if strategy == "uncertainty":
        return [int(i) for i in order[:n]]
    if features is None:
        raise ValueError("the diverse strategy needs the pool's text features")
    return mmr(scores, features, n, candidates=order[: max(n, n * pool_factor)], diversity=diversity)


def mmr(
    scores: np.ndarray, features, n: int, *, candidates: np.ndarray | None = None, diversity: float = DIVERSITY
) -> list[int]:
    """Greedy maximal marginal relevance: each step takes the candidate maximising
    ``(1 − diversity)·score − diversity·(highest cosine to an earlier pick)``; scores are rescaled to
    [0, 1] over the candidates, ``features`` rows have unit length. A near-duplicate of a pick (cosine
    ≥ ``NEAR_DUPLICATE``) comes only after every other candidate."""
    candidates = np.arange(len(scores)) if candidates is None else np.asarray(candidates)
    rows = features[candidates]
    relevance = scores[candidates].astype(np.float64)
    spread = relevance.max() - relevance.min()
    relevance = (relevance - relevance.min()) / spread if spread > 0 else np.ones_like(relevance)
    closest = np.zeros(len(candidates))  # highest cosine to any pick so far
    taken = np.zeros(len(candidates), dtype=bool)
    picks: list[int] = []
    for _ in range(min(n, len(candidates))):
        gain = (1.0 - diversity) * relevance - diversity * closest
        gain = np.where(closest >= NEAR_DUPLICATE, gain - 2.0, gain)  # below any other candidate's gain
        gain = np.where(taken, -np.inf, gain)
        best = int(np.argmax(gain))
        taken[best] = True
        picks.append(int(candidates[best]))
        cosine = rows @ rows[best].T
        cosine = np.asarray(cosine.todense() if hasattr(cosine, "todense") else cosine).ravel()
        closest = np.maximum(closest, cosine)
    return picks


# --------------------------------------------------------------------------- a pool from dumps


@dataclass
class Pool:
    records: list[Record]
    bad: list[BadRecord] = field(default_factory=list)  # unusable records (reported, never dropped silently)
    duplicates: int = 0  # records whose abstract an earlier record already had
    headers: int = 0  # first paragraphs of text dumps taken as the page's header


def read_pool(paths: Sequence[Path], fmt: str | None = None) -> Pool:
    """Every usable record of the dumps (given labels are ignored), exact duplicates once; an abstract or title
    over the service's limits is a bad record (its text is not kept)."""
    from papertrack.serving.batch.labeler.backends import over_limits

    pool = Pool([])
    seen: set[str] = set()
    for path in paths:
        for item in iter_records(path, fmt, labeled=False):
            if isinstance(item, BadRecord) and item.kind == "header":
                pool.headers += 1
            elif isinstance(item, BadRecord):
                pool.bad.append(item)
            elif (why := over_limits(item)) is not None:  # as `label` and the service: not held in the pool
                pool.bad.append(BadRecord(item.source, item.line, why, item.id, "rejected"))
            elif (key := make_id(item.abstract)) in seen:
                pool.duplicates += 1
            else:
                seen.add(key)
                pool.records.append(item)
    return pool


@dataclass
class Suggestion:
    record: Record
    rank: int
    uncertainty: float
    tracks: list[dict]  # the top-3: label, probability

    @property
    def guess(self) -> str:
        return self.tracks[0]["label"]


def suggest(
    predictor,
    records: Sequence[Record],
    n: int,
    strategy: str = "diverse",
    *,
    measure: str = "margin",
    seed: int = 42,
    notice=lambda message: None,
) -> list[Suggestion]:
    """The ``n`` records to label next, with the model's top-3 for each."""
    abstracts, titles = [r.abstract for r in records], [r.title for r in records]
    proba = predictor.predict_proba(abstracts, titles)
    features = None
    if strategy == "diverse":
        features = pool_features(predictor, abstracts, titles, notice)
    picks = choose(proba, n, strategy, features=features, measure=measure, seed=seed)
    scores = uncertainty(proba, measure)
    answers = predictor.rank(proba[picks], min(TOP_K, predictor.space.n_labels)) if picks else []
    return [
        Suggestion(
            records[i],
            rank,
            float(scores[i]),
            [{"label": t["label"], "probability": float(t["probability"])} for t in answer["tracks"]],
        )
        for rank, (i, answer) in enumerate(zip(picks, answers), start=1)
    ]


def pool_features(predictor, abstracts: Sequence[str], titles: Sequence[str | None], notice=lambda message: None):
    """The model's own text features of the pool; TF-IDF of the pool itself when the model has none."""
    try:
        return predictor.text_features(abstracts, titles)
    except NotImplementedError as exc:
        from sklearn.feature_extraction.text import TfidfVectorizer

        from papertrack.features.text import FEATURE_SETTINGS

        notice(f"{exc}; diversity uses TF-IDF features of the pool instead")
        settings = {**FEATURE_SETTINGS["word"], "min_df": 1, "max_df": 1.0}
        return TfidfVectorizer(**settings).fit_transform(abstracts)


# --------------------------------------------------------------------------- output


def output_kind(path: Path) -> str:
    return outputs.output_kind(
        path, ("text", "jsonl", "csv"), "the output must end in .txt (labeled text dump), .jsonl or .csv", UsageError
    )


def _top3_text(tracks: list[dict]) -> str:
    return " | ".join(f"{t['label']} ({t['probability']:.2f})" for t in tracks)


TEXT_HEADER = """\
# papertrack suggest: {n} abstracts to label ({strategy}, model {model}).
# For each record, check the label line (it is the model's best guess) and fix it if it is wrong.
# The "{marker}" line above a label marks it as the model's guess: delete that line once you have
# checked a label that was right. A label still equal to the guess is NOT trained on unless you pass
# --accept-suggested; an edited label is yours. Lines starting with "# " are comments.
# Then: papertrack train --data <your training data> --data {name}
"""


def render(suggestions: Sequence[Suggestion], kind: str, *, strategy: str, model: str, name: str) -> str:
    if kind == "text":
        parts = [
            TEXT_HEADER.format(n=len(suggestions), strategy=strategy, model=model, marker=SUGGESTED_MARKER, name=name)
        ]
        for s in suggestions:
            r = s.record
            lines = [
                "",
                f"{SUGGESTED_MARKER} {s.guess}",
                f"# top-3: {_top3_text(s.tracks)}",
                f"# rank {s.rank}, uncertainty {s.uncertainty:.3f}, id {r.id}, from {r.source}:{r.line}",
            ]
            if r.title:
                lines.append(f"# title: {r.title}")
            lines.append(s.guess)
            if r.authors:
                lines += ["", r.authors]
            # an abstract starting with "#" would read as a comment: indent it (the reader strips it)
            lines += ["", (" " + r.abstract) if r.abstract.startswith("#") else r.abstract]
            parts.append("\n".join(lines) + "\n")
        return "".join(parts)
    rows = [
        {
            "id": s.record.id,
            **({"number": s.record.number} if s.record.number is not None else {}),  # an OpenReview note's
            "title": s.record.title,
            "authors": s.record.authors,
            "abstract": s.record.abstract,
            "label": s.guess,
            SUGGESTED_FIELD: s.guess,
            "top3": s.tracks,
            "uncertainty": round(s.uncertainty, 6),
            "rank": s.rank,
            "source": s.record.source,
            "line": s.record.line,
        }
        for s in suggestions
    ]
    if kind == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer,
        fieldnames=list(dict.fromkeys(key for row in rows for key in row)) if rows else ["id", "abstract", "label"],
        lineterminator="\n",
    )
    writer.writeheader()
    # a ' before =, +, -, @, tab, CR: text, no formula
    from papertrack.features.spreadsheet import spreadsheet_safe

    for row in rows:
        cells = {**row, "top3": _top3_text(row["top3"]), "title": row["title"] or "", "authors": row["authors"] or ""}
        writer.writerow({key: spreadsheet_safe(v) if isinstance(v, str) else v for key, v in cells.items()})
    return buffer.getvalue()


def check_output(path: Path, inputs: Sequence[Path]) -> None:
    """UsageError when ``path`` (or its temporary file) is one of ``inputs``, a folder or a special file (a FIFO,
    a device): writing the picks would replace it."""
    from papertrack.serving.batch.labeler.outputs import kind_of, same_file

    if path.is_dir():
        raise UsageError(f"-o {path} is a folder; name a file in it, e.g. {path / 'to_label.txt'}")
    if path.exists() and not path.is_file():
        raise UsageError(
            f"-o {path} is {kind_of(path)}, not a regular file: the picks are written to a temporary file renamed "
            f"to it at the end, which would replace it; name a regular file"
        )
    for source in inputs:
        for target in (path, _tmp_path(path)):
            if same_file(Path(source), target):
                raise UsageError(
                    f"-o {target} is one of the inputs (writing the picks would replace it); choose another output"
                )


def _tmp_path(path: Path) -> Path:
    return path.with_name(path.name + ".tmp")


def write_suggestions(path: Path, suggestions: Sequence[Suggestion], *, strategy: str, model: str) -> Path:
    """Write the picks to ``path`` (layout from its extension), atomically."""
    kind = output_kind(path)
    text = render(suggestions, kind, strategy=strategy, model=model, name=path.name)
    from papertrack.serving.batch.labeler.outputs import open_new

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_path(path)
    with open_new(tmp) as f:  # created exclusively, never through a link planted at the name
        f.write(text)
    tmp.replace(path)
    return path
