"""Fatal errors of `papertrack label`: exit codes with one clear message (a missing or undecodable input, a bad
output name or --top-k, no champion or no server), an output or errors file that is an input refused, an
unwritable output, and an early failure leaving an older output and no partial files."""

from __future__ import annotations

from tests.serving.label_cli import flat, run_cli


def test_fatal_errors_have_exit_codes_and_messages(dump, tmp_path):
    result = run_cli(str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "o.jsonl"))
    assert result.exit_code == 2 and "missing.jsonl: file not found" in flat(result.output)

    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(dump.read_bytes()[:4000].rsplit(b"\n", 1)[0] + b"\n" + b'{"abstract": "caf\xe9"}\n')
    result = run_cli(str(broken), "-o", str(tmp_path / "b.jsonl"))
    assert result.exit_code == 2
    assert "broken.jsonl:" in result.output and "not valid UTF-8" in flat(result.output)
    assert not (tmp_path / "b.jsonl").exists()

    result = run_cli(str(dump), "-o", str(tmp_path / "o.txt"))
    assert result.exit_code == 2 and ".jsonl or .csv" in flat(result.output)
    result = run_cli(str(dump), "-o", str(tmp_path / "o.jsonl"), "-k", "10000")
    assert result.exit_code == 2 and "--top-k must be between 1 and" in flat(result.output)


def test_missing_champion_exit_code(dump, tmp_path):
    result = run_cli(str(dump), "-o", str(tmp_path / "o.jsonl"), "--model", "models:/papertrack@no-such-alias")
    assert result.exit_code == 1 and "papertrack train" in flat(result.output)
    result = run_cli(str(dump), "-o", str(tmp_path / "o.jsonl"), "--url", "http://127.0.0.1:9")
    assert result.exit_code == 1 and "papertrack serve" in flat(result.output)


def test_output_or_errors_file_that_is_an_input_is_refused_and_the_input_kept(dump, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_bytes(dump.read_bytes())
    before = source.read_bytes()
    result = run_cli(str(source), "-o", str(source))
    assert result.exit_code == 2 and "would destroy it" in flat(result.output)
    result = run_cli(str(source), "-o", str(tmp_path / "out.jsonl"), "--errors", str(source))
    assert result.exit_code == 2 and "errors file" in flat(result.output)
    link = tmp_path / "link.jsonl"
    link.symlink_to(source)
    result = run_cli(str(link), "-o", str(source))
    assert result.exit_code == 2
    assert source.read_bytes() == before and not (tmp_path / "out.jsonl").exists()


def test_unwritable_output_is_a_clear_error_not_a_traceback(dump, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = run_cli(str(dump), "-o", str(blocker / "out.jsonl"))
    assert result.exit_code == 2 and "cannot write" in flat(result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_early_fatal_error_leaves_no_partial_files_beside_an_older_output(dump, tmp_path):
    out = tmp_path / "o.jsonl"
    assert run_cli(str(dump), "-o", str(out)).exit_code == 3
    older = out.read_bytes()
    before = sorted(p.name for p in tmp_path.iterdir())  # the output, its errors file and drift report
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b'{"abstract": "fine enough abstract"}\n{"abstract": "caf\xe9"}\n')
    result = run_cli(str(broken), "-o", str(out))
    assert result.exit_code == 2 and "not valid UTF-8" in flat(result.output)
    assert "from an earlier run and was left unchanged" in flat(result.output)
    assert out.read_bytes() == older
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "broken.jsonl"])
