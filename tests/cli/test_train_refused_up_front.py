"""`papertrack train` refuses up front, in one ``error:`` line: more distinct labels than training can hold (one a
record, or more than fit in memory, naming the fix), and a PAPERTRACK_HOME that cannot be created."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.serving.label_cli import error_lines


def many_labels(tmp_path: Path, n: int, labels: int) -> Path:
    import random

    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 10))) for _ in range(4000)]
    path = tmp_path / "many_labels.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "abstract": " ".join(rng.choice(words) for _ in range(120)) + ".",
                    "label": f"Theory · Topic {i % labels}",
                }
            )
            + "\n"
            for i in range(n)
        )
    )
    return path


@pytest.mark.slow  # `papertrack train` in a fresh interpreter
def test_train_with_a_label_per_record_is_refused_up_front(tmp_path):
    """1,500 records with 1,500 distinct labels grew past 18 GB and were OOM-killed without a word."""
    data = many_labels(tmp_path, 1500, 1500)
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
        "from papertrack.cli import main; sys.argv = ['papertrack'] + sys.argv[1:]; main()"
    )
    env = {**__import__("os").environ, "PAPERTRACK_HOME": str(tmp_path / "home")}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, "train", "--data", str(data), "-c", "tfidf-word-cnb"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("train was still running after 120 s instead of refusing up front")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-3000:]
    assert "Traceback" not in output
    (line,) = error_lines(output)
    assert "many_labels.jsonl" in line and "1,500 distinct labels for 1,500 labeled records" in line
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.pkl"))


@pytest.mark.slow  # 1.5 s (--durations)
def test_a_label_count_that_does_not_fit_in_memory_is_refused_naming_the_fix(tmp_path):
    from papertrack.errors import UsageError
    from papertrack.training import preflight
    from papertrack.training.dataset import load_dataset

    records, _ = load_dataset(many_labels(tmp_path, 3000, 300))
    preflight.check(records, ["d.jsonl"], jobs=2, available=64 << 30)
    with pytest.raises(UsageError) as caught:
        preflight.check(records, ["d.jsonl"], jobs=2, available=1 << 30)
    message = str(caught.value)
    assert message.startswith("d.jsonl: 300 distinct labels need about") and "Train with --jobs 1" in message
    ordinary = [r for r in records if int(r.label.rsplit(" ", 1)[1]) < 20]
    preflight.check(ordinary, ["d.jsonl"], jobs=2, available=1 << 30)  # 20 labels: trains


@pytest.mark.slow  # `papertrack train` in a fresh interpreter
def test_a_read_only_home_is_one_error_line(tmp_path):
    import os

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder should be")
    env = {**os.environ, "PAPERTRACK_HOME": str(blocker / "home")}
    env.pop("MLFLOW_TRACKING_URI", None)
    data = many_labels(tmp_path, 40, 4)
    done = subprocess.run(
        [sys.executable, "-m", "papertrack.cli", "train", "--data", str(data), "-c", "tfidf-word-cnb"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in output, output[-3000:]
    (line,) = error_lines(output)
    assert str(blocker) in line and "PAPERTRACK_HOME" in line
