"""How far a dump is from the training data: the facts kept at training time and the report.

:class:`TrainingProfile` is stored on the :class:`TrackPredictor` when the winner is refit
(:func:`build_profile`): the training label counts, the training vocabulary (terms of the word
analyzer found in at least two training abstracts), and per training record what the *holdout* — the
cross-validated out-of-fold predictions — said: its top label and area, its top-1 probability, and how
many of its terms were outside the vocabulary of the other folds.

:class:`DumpStats` accumulates the same facts over a labeled dump (from the ranked answers of the one
prediction path), and :func:`drift_report` compares them with the training data:

* predicted label and area distributions vs the training labels: Jensen–Shannon distance (base 2,
  0 = same, 1 = disjoint) and the labels whose share moved most;
* the share of unsure predictions vs the holdout's (:func:`unsure`);
* the share of out-of-vocabulary terms vs the holdout's.

"Far outside what the holdout showed" is measured, not guessed: the holdout rows are resampled
(``RESAMPLES`` times, with replacement) at the size of the dump and each statistic gets the range the
resamples covered; a dump value above the ``WARN_QUANTILE`` of its resamples is flagged, and any flag
gives the one-line warning. Small dumps therefore get wide, honest ranges.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

PROFILE_VERSION = 1
RESAMPLES = 300
WARN_QUANTILE = 0.99
MOVED = 5  # labels listed as "moved most"


def analyzer():
    """The word analyzer of the TF-IDF word features (lower case, accents stripped, English stop words out).

    scikit-learn's, except that an ASCII text is cut with ``bytes.translate`` (every character that is not an
    ASCII letter, digit or ``_`` becomes a space; letters lower-cased) instead of the token pattern: on ASCII both
    give the runs of two or more word characters, so the terms are the same (``tests/models/test_drift_analyzer.py``
    checks it against scikit-learn on every labeled abstract), about four times faster."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from papertrack.features.text import FEATURE_SETTINGS
    from papertrack.models.fast_predict import ascii_table

    vectorizer = TfidfVectorizer(**FEATURE_SETTINGS["word"])
    assert vectorizer.token_pattern == r"(?u)\b\w\w+\b" and vectorizer.lowercase and vectorizer.ngram_range == (1, 1)
    slow = vectorizer.build_analyzer()
    stop_words = vectorizer.get_stop_words() or frozenset()
    table = ascii_table(vectorizer)  # the fast prediction path's tokenising table (same settings)

    def analyze(text: str) -> list[str]:
        if table is None or not text.isascii():
            return slow(text)
        words = text.encode("ascii").translate(table).decode("ascii").split()
        return [word for word in words if len(word) > 1 and word not in stop_words]

    return analyze


MEDIAN_SOURCE = "the holdout's median"  # the default unsure_below's source


@dataclass(frozen=True)
class TrainingProfile:
    labels: tuple[str, ...]  # the label space, in order
    areas: tuple[str, ...]
    label_counts: np.ndarray  # training records per label
    area_counts: np.ndarray
    vocabulary: frozenset[str]  # terms in >= 2 training abstracts
    holdout_label: np.ndarray  # per training record: out-of-fold top label (index)
    holdout_area: np.ndarray  # ... top area (index)
    holdout_top1: np.ndarray  # ... top-1 probability
    holdout_oov: np.ndarray  # ... terms outside the other folds' vocabulary
    holdout_terms: np.ndarray  # ... terms
    unsure_below: float  # a top-1 probability below this is "unsure" (see unsure())
    unsure_source: str = MEDIAN_SOURCE  # where unsure_below comes from, for the report
    version: int = PROFILE_VERSION

    @property
    def n(self) -> int:
        return len(self.holdout_label)


def build_profile(
    texts: Sequence[str],
    y: np.ndarray,
    space,
    oof_proba: np.ndarray,
    seed: int = 0,
    folds: int = 5,
    unsure_below: float | None = None,
    unsure_source: str | None = None,
) -> TrainingProfile:
    """The profile of a training set from its model texts, encoded labels and the winner's out-of-fold
    probabilities. ``unsure_below``: the top-1 probability under which a prediction is unsure — by
    default the holdout's median; pass the confident threshold of issue 11 (``confidence.top1_threshold``,
    with ``unsure_source="not confident"``) to make "unsure" mean "not confident" everywhere."""
    from sklearn.model_selection import KFold

    tokenize = analyzer()
    doc_terms = [tokenize(text) for text in texts]
    doc_sets = [set(terms) for terms in doc_terms]
    df = Counter(term for terms in doc_sets for term in terms)
    oov = np.zeros(len(texts), dtype=np.int32)
    for _train, test in KFold(min(folds, len(texts)), shuffle=True, random_state=seed).split(np.arange(len(texts))):
        fold_df = df.copy()
        fold_df.subtract(term for i in test for term in doc_sets[i])
        for i in test:
            oov[i] = sum(fold_df[term] < 2 for term in doc_terms[i])
    oof = np.asarray(oof_proba, dtype=np.float64)
    top1 = oof.max(axis=1)
    y = np.asarray(y)
    return TrainingProfile(
        labels=tuple(space.labels),
        areas=tuple(space.areas),
        label_counts=np.bincount(y, minlength=space.n_labels).astype(np.int64),
        area_counts=np.bincount(space.label_area[y], minlength=len(space.areas)).astype(np.int64),
        vocabulary=frozenset(term for term, count in df.items() if count >= 2),
        holdout_label=oof.argmax(axis=1).astype(np.int32),
        holdout_area=space.area_proba(oof).argmax(axis=1).astype(np.int32),
        holdout_top1=top1.astype(np.float32),
        holdout_oov=oov,
        holdout_terms=np.array([len(terms) for terms in doc_terms], dtype=np.int32),
        unsure_below=float(np.median(top1)) if unsure_below is None else float(unsure_below),
        unsure_source=unsure_source or MEDIAN_SOURCE,
    )


def unsure(top1_probability: np.ndarray, profile: TrainingProfile) -> np.ndarray:
    """Which predictions are unsure: top-1 probability below ``profile.unsure_below`` (by default the
    holdout's median). The one rule: the dump's share and the holdout's both come from it, so setting
    ``unsure_below`` at refit (see :func:`build_profile`) switches every number of the report."""
    return np.asarray(top1_probability) < profile.unsure_below


def unsure_rule(profile: TrainingProfile) -> str:
    return f"top-1 probability below {profile.unsure_below:.3f} ({profile.unsure_source})"


# --------------------------------------------------------------------------- a dump's statistics


@dataclass
class DumpStats:
    """Counts over a labeled dump; :meth:`add` per chunk of answers."""

    n_labels: int
    n_areas: int
    label_counts: np.ndarray = field(init=False)
    area_counts: np.ndarray = field(init=False)
    n: int = 0
    unsure: int = 0
    oov_terms: int = 0
    terms: int = 0
    unknown: int = 0  # answers naming a label the profile does not know (another model's answers)

    def __post_init__(self) -> None:
        self.label_counts = np.zeros(self.n_labels, dtype=np.int64)
        self.area_counts = np.zeros(self.n_areas, dtype=np.int64)

    @classmethod
    def for_profile(cls, profile: TrainingProfile) -> DumpStats:
        return cls(len(profile.labels), len(profile.areas))

    def add(
        self,
        profile: TrainingProfile,
        top_labels: Sequence[str],
        top_probabilities: Sequence[float],
        top_areas: Sequence[str],
        texts: Iterable[str] | None = None,
        tokenize=None,
    ) -> None:
        """One chunk: each answer's top label, its probability and the top area; ``texts`` for the
        vocabulary share (the model texts)."""
        label_index = {label: i for i, label in enumerate(profile.labels)}
        area_index = {area: i for i, area in enumerate(profile.areas)}
        for label, area in zip(top_labels, top_areas):
            if label in label_index and area in area_index:
                self.label_counts[label_index[label]] += 1
                self.area_counts[area_index[area]] += 1
            else:
                self.unknown += 1
        self.n += len(top_labels)
        self.unsure += int(unsure(np.asarray(top_probabilities, dtype=np.float64), profile).sum())
        if texts is not None:
            tokenize = tokenize or analyzer()
            vocabulary = profile.vocabulary
            for text in texts:
                terms = tokenize(text)
                self.terms += len(terms)
                self.oov_terms += sum(term not in vocabulary for term in terms)

    def add_answers(
        self, profile: TrainingProfile, answers: Sequence[dict], texts: Iterable[str] | None = None, tokenize=None
    ) -> None:
        """One chunk of :meth:`TrackPredictor.rank` answers (and their texts)."""
        self.add(
            profile,
            [a["tracks"][0]["label"] for a in answers],
            [a["tracks"][0]["probability"] for a in answers],
            [a["areas"][0]["area"] for a in answers],
            texts,
            tokenize,
        )


# --------------------------------------------------------------------------- the report


def js_distance(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen–Shannon distance (base 2) between two count or probability vectors; 0 when either is empty."""
    from scipy.spatial.distance import jensenshannon

    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    if p.sum() <= 0 or q.sum() <= 0:
        return 0.0
    return float(np.nan_to_num(jensenshannon(p, q, base=2)))


def _share(count: float, total: float) -> float:
    return float(count) / float(total) if total else 0.0


def holdout_ranges(profile: TrainingProfile, size: int, resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """What resamples of the holdout of ``size`` rows show: per statistic, its median and WARN_QUANTILE."""
    rng = np.random.default_rng(seed)
    values: dict[str, list[float]] = {"label_js": [], "area_js": [], "unsure_share": [], "oov_share": []}
    holdout_unsure = unsure(profile.holdout_top1, profile)
    for _ in range(resamples):
        idx = rng.integers(0, profile.n, size=max(size, 1))
        values["label_js"].append(
            js_distance(np.bincount(profile.holdout_label[idx], minlength=len(profile.labels)), profile.label_counts)
        )
        values["area_js"].append(
            js_distance(np.bincount(profile.holdout_area[idx], minlength=len(profile.areas)), profile.area_counts)
        )
        values["unsure_share"].append(float(holdout_unsure[idx].mean()))
        values["oov_share"].append(_share(profile.holdout_oov[idx].sum(), profile.holdout_terms[idx].sum()))
    return {
        key: {"median": float(np.median(v)), "high": float(np.quantile(v, WARN_QUANTILE))} for key, v in values.items()
    }


def drift_report(stats: DumpStats, profile: TrainingProfile, seed: int = 0) -> dict:
    """The report as plain JSON-ready data (see the module doc); ``warning`` is None or one line."""
    train_labels = profile.label_counts / max(profile.label_counts.sum(), 1)
    dump_labels = stats.label_counts / max(stats.label_counts.sum(), 1)
    moved = np.argsort(-np.abs(dump_labels - train_labels), kind="stable")[:MOVED]
    train_areas = profile.area_counts / max(profile.area_counts.sum(), 1)
    dump_areas = stats.area_counts / max(stats.area_counts.sum(), 1)
    holdout_unsure = float(unsure(profile.holdout_top1, profile).mean())
    if not stats.n:
        return _nothing_to_compare(profile, holdout_unsure)
    values = {
        "label_js": js_distance(stats.label_counts, profile.label_counts),
        "area_js": js_distance(stats.area_counts, profile.area_counts),
        "unsure_share": _share(stats.unsure, stats.n),
        "oov_share": _share(stats.oov_terms, stats.terms),
    }
    ranges = holdout_ranges(profile, stats.n, seed=seed) if stats.n else {}
    outside = [
        key
        for key, value in values.items()
        if stats.n and (key != "oov_share" or stats.terms) and value > ranges[key]["high"]
    ]
    report = {
        "records": stats.n,
        **{key: round(value, 4) for key, value in values.items()},
        "holdout": {
            "unsure_share": round(holdout_unsure, 4),
            "oov_share": round(_share(profile.holdout_oov.sum(), profile.holdout_terms.sum()), 4),
            "records": profile.n,
        },
        "expected_at_this_size": {key: {k: round(v, 4) for k, v in r.items()} for key, r in ranges.items()},
        "outside": outside,
        "labels_moved_most": [
            {
                "label": profile.labels[i],
                "training_share": round(float(train_labels[i]), 4),
                "dump_share": round(float(dump_labels[i]), 4),
                "change": round(float(dump_labels[i] - train_labels[i]), 4),
            }
            for i in moved
        ],
        "areas": [
            {
                "area": area,
                "training_share": round(float(train_areas[i]), 4),
                "dump_share": round(float(dump_areas[i]), 4),
            }
            for i, area in enumerate(profile.areas)
        ],
        "unsure_rule": unsure_rule(profile),
        "unknown_labels": stats.unknown,
        "warning": None,
    }
    if outside:
        report["warning"] = warning_line(report)
    return report


NOTHING_TO_COMPARE = "no record to compare: every record was rejected (see the errors file)"


def _nothing_to_compare(profile: TrainingProfile, holdout_unsure: float) -> dict:
    """The report of a dump without any accepted record: no figure (a JS of 0 would read as "identical")."""
    return {
        "records": 0,
        "label_js": None,
        "area_js": None,
        "unsure_share": None,
        "oov_share": None,
        "holdout": {
            "unsure_share": round(holdout_unsure, 4),
            "oov_share": round(_share(profile.holdout_oov.sum(), profile.holdout_terms.sum()), 4),
            "records": profile.n,
        },
        "expected_at_this_size": {},
        "outside": [],
        "labels_moved_most": [],
        "areas": [],
        "unsure_rule": unsure_rule(profile),
        "unknown_labels": 0,
        "warning": None,
        "note": NOTHING_TO_COMPARE,
    }


_NAMES = {
    "label_js": "label distribution JS",
    "area_js": "area distribution JS",
    "unsure_share": "unsure share",
    "oov_share": "out-of-vocabulary share",
}


def warning_line(report: dict) -> str:
    parts = [
        f"{_NAMES[key]} {report[key]:.2f} (holdout resamples of this size: up to "
        f"{report['expected_at_this_size'][key]['high']:.2f})"
        for key in report["outside"]
    ]
    return (
        "this dump is far from the training data: "
        + "; ".join(parts)
        + " — predictions may be worse than the cross-validated figures; label some of it "
        "(papertrack suggest) and retrain"
    )


def summary_lines(report: dict) -> list[str]:
    """The report in a few printable lines (warning last)."""
    if not report["records"]:
        return [f"drift vs training data: {NOTHING_TO_COMPARE}"]
    moved = ", ".join(
        f"{m['label']} {m['training_share']:.1%}→{m['dump_share']:.1%}" for m in report["labels_moved_most"][:3]
    )
    lines = [
        f"drift vs training data ({report['records']:,} records): label JS {report['label_js']:.3f}, "
        f"area JS {report['area_js']:.3f} (holdout at this size: up to "
        f"{report['expected_at_this_size'].get('label_js', {}).get('high', 0):.3f} / "
        f"{report['expected_at_this_size'].get('area_js', {}).get('high', 0):.3f})",
        f"  moved most: {moved}",
        f"  unsure {report['unsure_share']:.1%} (holdout {report['holdout']['unsure_share']:.1%}; "
        f"{report['unsure_rule']}); out-of-vocabulary terms {report['oov_share']:.1%} "
        f"(holdout {report['holdout']['oov_share']:.1%})",
    ]
    given = report.get("given_labels")
    if given:
        lines.append(
            f"  given labels: {given['records'] - given['unknown']:,} of {given['records']:,} are names the model "
            f"answers{' in ' + given['taxonomy'] if given['taxonomy'] else ''}"
        )
    if report["warning"]:
        lines.append(f"warning: {report['warning']}")
    return lines
