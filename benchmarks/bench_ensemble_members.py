"""The default ensemble with and without the bigram naive Bayes, on the temporal holdout (seeds 42, 7, 123).

Dropping tfidf-word12-cnb would let one word vectorizer serve every member (faster labeling); this measures
what it costs on next year's papers. Temporal holdout only (plus a 2-fold CV for the refit weights):

    PAPERTRACK_DATA_DIR=../shared/data taskset -c 1 .venv/bin/python benchmarks/bench_ensemble_members.py
"""

from __future__ import annotations

import numpy as np

from papertrack import settings
from papertrack.models.catalogue import CANDIDATES
from papertrack.models.ensemble import ensemble_of
from papertrack.training.champion import paired_bootstrap
from papertrack.training.cv import fold_indices
from papertrack.training.data import TrainingSet, default_data_paths, temporal_direction
from papertrack.training.dataset import load_dataset
from papertrack.training.evaluation import evaluate_candidates
from papertrack.training.renames import RenameMap


def main() -> None:
    records, _ = load_dataset([str(p) for p in default_data_paths(settings.current().data_dir)])
    data = TrainingSet.from_records(records, renames=RenameMap())
    temporal, _ = temporal_direction(data)
    singles = [CANDIDATES[n] for n in ("tfidf-word-logreg", "tfidf-word-svm", "tfidf-word-cnb", "tfidf-word12-cnb")]
    four = ensemble_of("four", singles, rule="geometric")
    three = ensemble_of("three", singles[:3], rule="geometric")
    out = {}
    for seed in (42, 7, 123):
        res = evaluate_candidates(
            [*singles, four, three], data, fold_indices(data.y, data.space, 2, seed), seed, temporal=temporal, n_jobs=1
        )
        by = {r.candidate.name: r for r in res}
        for n in ("four", "three"):
            m = by[n].metrics
            out.setdefault(n, []).append(
                (m["temporal_label_top3"], m["temporal_label_top1"], m["temporal_area_top1"], by[n].selection_hits(3))
            )
        print(
            seed,
            {n: [round(x, 3) for x in out[n][-1][:3]] for n in out},
            by["three"].member_weights if by["three"].member_weights else "",
            flush=True,
        )
    for n in out:
        a = np.array([o[:3] for o in out[n]])
        print(n, a.mean(0).round(3), a.std(0).round(3))
    d = paired_bootstrap(np.mean([o[3] for o in out["three"]], 0), np.mean([o[3] for o in out["four"]], 0))
    print("three - four top3:", [round(x, 3) for x in d])


if __name__ == "__main__":
    main()
