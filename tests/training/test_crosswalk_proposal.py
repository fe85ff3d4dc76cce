"""``papertrack crosswalk``: on a synthetic corpus of two taxonomies whose changes are known (a rename, a merge, a
split, a kept name, a vanished name no new paper resembles, and a new name with no old analog), the proposal finds
each; the file it writes reads back with read_crosswalk; bad --from/--to is one error line and exit status 2."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from papertrack.features.crosswalk import read_crosswalk
from papertrack.training import crosswalk_proposal as cp
from papertrack.training import crosswalk_render

COMMON = [f"common{i}" for i in range(15)]


def topic(name: str) -> list[str]:
    return [f"{name}{i}" for i in range(20)]


TOPICS = {t: topic(t) for t in ("alpha", "betaone", "betatwo", "gleft", "gright", "delta", "eps", "zeta", "theta")}

# old taxonomy (Venue 2024): label -> the topics its papers are drawn from (one topic per paper)
OLD = {
    "Alpha · Old": ["alpha"],  # renamed to Alpha · New
    "Beta · One": ["betaone"],  # merged with Beta · Two into Beta · Both
    "Beta · Two": ["betatwo"],
    "Gamma · Wide": ["gleft", "gright"],  # split into Gamma · Left and Gamma · Right
    "Delta · Same": ["delta"],  # kept
    "Epsilon · Same": ["eps"],  # kept
    "Zeta · Gone": ["zeta"],  # vanished: no new paper is about it
    "Theta": ["theta"],  # an area-only name, renamed to the area-only Iota: an area line
}
NEW = {
    "Alpha · New": ["alpha"],
    "Beta · Both": ["betaone", "betatwo"],
    "Gamma · Left": ["gleft"],
    "Gamma · Right": ["gright"],
    "Delta · Same": ["delta"],
    "Epsilon · Same": ["eps"],
    "Position · Stuff": ["delta", "eps"],  # new area: its papers look like kept names only
    "Iota": ["theta"],
}


def corpus(spec: dict[str, list[str]], per_label: int, venue: str, year: int, rng: random.Random) -> list[dict]:
    records = []
    for label, topics in spec.items():
        for k in range(per_label):
            words = rng.choices(TOPICS[topics[k % len(topics)]], k=25) + rng.choices(COMMON, k=10)
            records.append({"abstract": " ".join(words), "label": label, "venue": venue, "year": year})
    return records


@pytest.fixture(scope="module")
def records() -> list[dict]:
    rng = random.Random(7)
    return corpus(OLD, 40, "Venue", 2024, rng) + corpus(NEW, 30, "Venue", 2025, rng)


@pytest.fixture(scope="module")
def proposal(records) -> cp.Proposal:
    old = [r for r in records if r["year"] == 2024]
    new = [r for r in records if r["year"] == 2025]
    return cp.propose(
        [r["abstract"] for r in old],
        [r["label"] for r in old],
        [r["abstract"] for r in new],
        [r["label"] for r in new],
        sources=["Venue 2024"],
        target="Venue 2025",
        seed=0,
    )


def relation(proposal: cp.Proposal, name: str) -> str:
    return next(n.relation for n in proposal.names if n.name == name)


def test_each_known_change_is_found(proposal):
    entries = {e.old: e for e in proposal.entries}
    assert set(entries) == {"Alpha · Old", "Beta · One", "Beta · Two", "Gamma · Wide", "Zeta · Gone", "Theta"}
    assert entries["Alpha · Old"].targets == (("Alpha · New", 1.0),)
    assert relation(proposal, "Alpha · New") == cp.RENAME
    assert entries["Theta"].targets == (("Iota", 1.0),) and entries["Theta"].by_name  # two area-only names
    assert relation(proposal, "Iota") == cp.RENAME
    assert entries["Beta · One"].targets == (("Beta · Both", 1.0),)
    assert entries["Beta · Two"].targets == (("Beta · Both", 1.0),)
    assert relation(proposal, "Beta · Both") == cp.MERGE
    split = dict(entries["Gamma · Wide"].targets)
    assert set(split) == {"Gamma · Left", "Gamma · Right"}
    assert all(0.3 <= share <= 0.7 for share in split.values()) and sum(split.values()) == pytest.approx(1.0)
    assert relation(proposal, "Gamma · Left") == relation(proposal, "Gamma · Right") == cp.SPLIT
    assert relation(proposal, "Delta · Same") == relation(proposal, "Epsilon · Same") == cp.SAME
    assert relation(proposal, "Position · Stuff") == cp.NO_ANALOG
    assert entries["Zeta · Gone"].targets == () and entries["Zeta · Gone"].top1 == 0
    assert proposal.summary() == {
        "renames": 2,
        "merges": 1,
        "splits": 1,
        "no_analog": 1,
        "same_name": 2,
        "unmapped_old": 1,
    }


def test_the_written_file_reads_back(proposal, tmp_path):
    path = tmp_path / "cw.yaml"
    path.write_text(
        crosswalk_render.render(proposal, "papertrack crosswalk --from 'Venue 2024' --to 'Venue 2025'"), "utf-8"
    )
    crosswalk = read_crosswalk(path)
    assert crosswalk.source == "Venue 2024" and crosswalk.target == "Venue 2025"
    tracks = {old: dict(pairs) for old, pairs in crosswalk.tracks.items()}
    assert tracks == {old: new for old, new in proposal.crosswalk_map().items() if old != "Theta"}
    assert crosswalk.areas == {"Theta": "Iota"}  # an area-only name to an area-only name is read as an area line
    assert crosswalk.apply("Theta · Anything") == (("Iota · Anything", 1.0),)
    assert "Delta · Same" not in crosswalk.tracks and "Zeta · Gone" not in crosswalk.tracks
    text = path.read_text("utf-8")
    header = text.split("\nfrom:")[0]
    assert "do NOT score a temporal holdout of those same Venue 2025 papers" in header
    assert "#   Position · Stuff (30 papers)" in header  # flagged at the top
    assert "#   Zeta · Gone: " in header  # unmapped old name: a commented-out suggestion


def test_round_shares_sum_to_exactly_one():
    assert cp.round_shares([1 / 3, 1 / 3, 1 / 3]) == [0.34, 0.33, 0.33]
    assert cp.round_shares([0.125, 0.125, 0.75]) == [0.13, 0.12, 0.75]  # 12.5 + 12.5 + 75: one remainder goes up
    assert cp.round_shares([2.0, 6.0]) == [0.25, 0.75]  # normalised first
    with pytest.raises(ValueError):
        cp.round_shares([0.0])


# --------------------------------------------------------------------------- the command


def invoke(tmp_path, monkeypatch, records, *args):
    from papertrack.cli import app

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return CliRunner().invoke(app, ["crosswalk", "--data", str(data), *args])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "Venue 2023", "--to", "Venue 2025"], "error: --from 'Venue 2023' is no source of the data"),
        (["--from", "Venue 2024", "--to", "Other 2025"], "error: --to 'Other 2025' is no source of the data"),
    ],
)
def test_a_name_that_is_no_source_is_one_error_line(tmp_path, monkeypatch, records, args, message):
    result = invoke(tmp_path, monkeypatch, records, *args, "--no-log")
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(message), result.output
    assert "the sources are: Venue 2024 (320), Venue 2025 (240)" in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not list(tmp_path.glob("crosswalk-*.yaml"))


def test_an_existing_output_needs_force_and_an_input_is_never_written(tmp_path, monkeypatch, records):
    (tmp_path / "mine.yaml").write_text("keep me\n", encoding="utf-8")
    result = invoke(tmp_path, monkeypatch, records, "--from", "Venue 2024", "--to", "Venue 2025", "-o", "mine.yaml")
    assert result.exit_code == 2 and "mine.yaml exists; --force overwrites it" in result.output
    assert (tmp_path / "mine.yaml").read_text("utf-8") == "keep me\n"
    args = ["--from", "Venue 2024", "--to", "Venue 2025", "-o", "data.jsonl", "--force", "--no-log"]
    result = invoke(tmp_path, monkeypatch, records, *args)
    assert result.exit_code == 2 and "is one of the inputs" in result.output


def test_an_unchanged_taxonomy_writes_no_crosswalk(tmp_path, monkeypatch):
    same = {label: topics for label, topics in OLD.items() if label in ("Delta · Same", "Epsilon · Same")}
    rng = random.Random(3)
    records = corpus(same, 20, "Venue", 2024, rng) + corpus(same, 10, "Venue", 2025, rng)
    result = invoke(tmp_path, monkeypatch, records, "--from", "Venue 2024", "--to", "Venue 2025", "--no-log")
    assert result.exit_code == 1, result.output
    assert "Nothing to map: every old name is kept; no crosswalk written" in " ".join(result.output.split())
    assert not list(tmp_path.glob("crosswalk-*.yaml"))


def test_one_old_name_is_a_usage_error(tmp_path, monkeypatch):
    rng = random.Random(3)
    records = corpus({"Delta · Same": ["delta"]}, 10, "Venue", 2024, rng) + corpus(NEW, 5, "Venue", 2025, rng)
    result = invoke(tmp_path, monkeypatch, records, "--from", "Venue 2024", "--to", "Venue 2025", "--no-log")
    assert result.exit_code == 2, result.output
    assert "error: the --from papers carry 1 name(s) (Delta · Same)" in " ".join(result.output.split())


@pytest.mark.slow  # fits a model and logs an MLflow run (a few seconds)
def test_the_command_writes_the_crosswalk_and_logs_a_run(tmp_path, monkeypatch, records):
    result = invoke(tmp_path, monkeypatch, records, "--from", "Venue 2024", "--to", "Venue 2025", "--seed", "3")
    assert result.exit_code == 0, result.output
    written = tmp_path / "crosswalk-venue2024-to-venue2025.yaml"
    crosswalk = read_crosswalk(written)
    assert dict(crosswalk.tracks["Alpha · Old"]) == {"Alpha · New": 1.0}
    output = " ".join(result.output.split())
    assert "2 renames, 1 merges, 1 splits, 1 new names with no old analog" in output
    from papertrack import store

    client = store.open(create=False).client()  # the store the command used (the test's PAPERTRACK_HOME)
    experiments = [e.experiment_id for e in client.search_experiments()]
    (run,) = client.search_runs(experiments, filter_string="tags.`papertrack.kind` = 'crosswalk'")
    params = run.data.params
    assert params["from"] == "Venue 2024" and params["to"] == "Venue 2025" and params["seed"] == "3"
    assert run.info.status == "FINISHED"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"crosswalk.yaml", "crosswalk_heatmap.png", "crosswalk_matrix.csv"} <= artifacts
