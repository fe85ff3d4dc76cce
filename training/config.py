"""What a training sweep is asked to do: one :class:`SweepConfig`, shared by ``papertrack train`` (whose options
take their defaults and help from it) and any Python caller::

    from papertrack import store
    from papertrack.training.config import SweepConfig
    from papertrack.training.sweep import run_sweep

    config = SweepConfig(candidate_names=["tfidf-word-cnb"], folds=3, seed=1, register=False)
    result = run_sweep(config, store.open())
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

from papertrack import settings
from papertrack.errors import UsageError

if TYPE_CHECKING:
    from papertrack.models.candidates import Candidate

DEFAULT_BUDGET_MS = 5.0  # predict cost per abstract the default sweep stays within (a fast service)
MIN_FOLDS, MAX_FOLDS = 2, 20


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class SweepConfig:
    data_paths: Sequence[Path] = field(
        default=(),
        metadata=_help(
            "Labeled file(s): JSONL/JSON/CSV(.gz) or a text dump. Default: every labeled file named *_topics.jsonl "
            "in $PAPERTRACK_DATA_DIR (../shared/data), one venue and year each (a file that is not labeled data is "
            "skipped, with a warning)."
        ),
    )
    fmt: str | None = field(default=None, metadata=_help("Force the input format"))
    candidate_names: Sequence[str] | None = field(
        default=None, metadata=_help("Only these candidates (repeatable). Default: the whole sweep.")
    )
    folds: int = field(default=5, metadata=_help("Cross-validation folds."))
    seed: int = field(default=settings.DEFAULT_SEED, metadata=_help("Seed of the folds and of the models."))
    use_title: bool = field(default=False, metadata=_help("Put titles in front of abstracts (default: abstract only)."))
    register: bool = field(default=True, metadata=_help("Register the winner as papertrack@champion/challenger."))
    accept_suggested: bool = field(
        default=False,
        metadata=_help(
            "Also train on labels still left as `papertrack suggest` guessed them "
            "(skipped by default: never train on the model's own guesses silently)."
        ),
    )
    budget_ms: float | None = field(
        default=DEFAULT_BUDGET_MS,
        metadata=_help(
            "Predict cost per abstract (ms) the default sweep stays within: costlier "
            "candidates are left out (listed), and one measured over it cannot win. Named candidates (-c) run "
            "whatever they cost."
        ),
    )
    renames: Sequence[str] = field(
        default=(),
        metadata=_help(
            "OLD=NEW: train OLD's examples as the track NEW (repeatable; added to the built-in "
            "map of renamed tracks, e.g. 2024's 'Applications · Genetics, Cell Biology, etc')."
        ),
    )
    shift_holdout: bool = field(
        default=False,
        metadata=_help(
            "Also score the cross-venue shift holdout when there is a temporal one (informational: the temporal "
            "holdout chooses; costs about half the sweep's fits)."
        ),
    )
    force: bool = field(
        default=False,
        metadata=_help(
            "Retrain even when nothing changed since the champion (same data, options, code and crosswalks), and "
            "let the winner become champion although it knows far fewer labels than the champion (the other "
            "promotion checks still apply)."
        ),
    )
    crosswalks: Sequence[Path] | None = field(
        default=None,
        metadata=_help(
            "Crosswalk file(s) (YAML: old name -> new name(s), renames, merges, splits with shares): its 'to' "
            "taxonomy gets a head of its own, taught by the older papers through it (repeatable). Default: the "
            "crosswalk files (*-to-*.yaml) beside the labeled data, and the shipped ones, used when the data has their "
            "target's papers (a file beside the data replaces a shipped one of the same target)."
        ),
    )
    extra_candidates: Sequence[Candidate] = field(
        default=(),
        metadata=_help("Candidates besides the catalogue's, known to this sweep only (tests, experiments)."),
    )
    plots: str | None = field(
        default=None,
        metadata=_help(
            "Which candidates' runs get the four evaluation plots (confusion matrices, F1 per label, reliability; "
            "about 1 s of drawing each): top2 (the winner and the runner-up), all or none (no plots at all, the "
            "winner's risk-coverage plot neither). Every run gets its per-class report. Default: $PAPERTRACK_PLOTS, "
            "else top2."
        ),
    )
    jobs: int | None = field(
        default=None,
        metadata=_help(
            "Fits run side by side (worker processes). Default: one per core, at most 2; the results do not "
            "depend on it. Fits on fewer than 300 records run in one process (a worker costs more to start)."
        ),
    )

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "data_paths", tuple(Path(p) for p in self.data_paths))
        set_(self, "candidate_names", tuple(self.candidate_names) if self.candidate_names else None)
        set_(self, "renames", tuple(self.renames))
        set_(self, "extra_candidates", tuple(self.extra_candidates))
        if self.crosswalks is not None:
            set_(self, "crosswalks", tuple(Path(p) for p in self.crosswalks))
        if not MIN_FOLDS <= self.folds <= MAX_FOLDS:
            raise UsageError(f"folds must be between {MIN_FOLDS} and {MAX_FOLDS}, not {self.folds}")
        if self.budget_ms is not None and self.budget_ms < 0:
            raise UsageError(f"budget_ms must be at least 0, not {self.budget_ms:g}")
        if self.plots is not None:
            set_(self, "plots", settings.plot_choice("plots", self.plots))
        if self.jobs is not None and self.jobs < 1:
            raise UsageError(f"jobs must be at least 1, not {self.jobs}")

    @property
    def paths(self) -> list[Path]:
        """The labeled files to read: ``data_paths``, else the default sources in the data folder."""
        from papertrack.training.data import default_data_paths

        return list(self.data_paths) or default_data_paths(settings.current().data_dir)

    @property
    def crosswalk_paths(self) -> list[Path]:
        """The crosswalks to read: ``crosswalks``, else the ones beside the labeled files, then the shipped ones
        (features/crosswalks)."""
        from papertrack.features.crosswalk import shipped_crosswalks

        return list(self.crosswalks) if self.crosswalks is not None else self.beside_crosswalks + shipped_crosswalks()

    @property
    def beside_crosswalks(self) -> list[Path]:
        """The crosswalk files (``*-to-*.yaml``) in the folders of the labeled files (the data folder by default)."""
        from papertrack.features.crosswalk import crosswalks_beside

        folders = dict.fromkeys(p.parent for p in self.paths)
        return [path for folder in folders for path in crosswalks_beside(folder)]

    @property
    def budget(self) -> float | None:
        """The cost budget in force: none when candidates are named (they run and may win whatever they cost)."""
        return None if self.candidate_names else self.budget_ms

    @property
    def plot_choice(self) -> str:
        """Whose candidate runs get the evaluation plots: ``plots``, else $PAPERTRACK_PLOTS, else top2."""
        return self.plots or settings.plot_choice(settings.PLOTS_ENV, settings.current().plots)

    @property
    def n_jobs(self) -> int:
        from papertrack.training.fits import default_jobs

        return self.jobs or default_jobs()


def option_help(name: str) -> str:
    """The help text of a :class:`SweepConfig` field (the ``train`` command's option of that name)."""
    return next(f.metadata["help"] for f in fields(SweepConfig) if f.name == name)


DEFAULTS = SweepConfig()
