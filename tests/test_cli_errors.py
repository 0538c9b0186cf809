"""Bad input: one line on stderr that says what to fix, exit code 2, nothing left that looks complete."""

import pytest

from simsubjects.cli.commands import main


@pytest.mark.parametrize("argv, needle", [
    (["collect", "ultimatum", "--pairs", "0", "--out", "{tmp}/a"], "--pairs"),
    (["collect", "ultimatum", "--pairs", "20000", "--out", "{tmp}/a"], "--pairs"),
    (["collect", "ultimatum", "--model", "nosuch", "--out", "{tmp}/a"], "unknown model"),
    (["collect", "ultimatum", "--model", "openai:", "--out", "{tmp}/a"], "model"),
    (["collect", "ultimatum", "--model", "hf:/no/such/dir", "--out", "{tmp}/a"], "does not exist"),
    (["collect", "ultimatum", "--bogus", "--out", "{tmp}/a"], "--bogus"),
    (["collect", "nosuchstudy", "--out", "{tmp}/a"], "nosuchstudy"),
    (["collect", "ultimatum"], "--out"),
    (["analyze", "{tmp}/missing"], "no such run folder"),
    (["export", "{tmp}/missing", "--to", "rds"], "no such run folder"),
    (["datasets", "show", "nosuch"], "unknown dataset"),
])
def test_bad_input_exit_2_one_line(argv, needle, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert needle in err
    assert not (tmp_path / "a").exists()


def test_unfinished_and_corrupt_runs_are_refused(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text('{"status": "running"}')
    assert main(["analyze", str(run)]) == 2
    assert "did not finish" in capsys.readouterr().err
    (run / "manifest.json").write_text('{"status": "complete", "study": "ultimatum"}')
    (run / "responses.parquet").write_bytes(b"PAR1 truncated")
    (run / "items.parquet").write_bytes(b"")
    assert main(["analyze", str(run)]) == 2
    err = capsys.readouterr().err
    assert "responses.parquet" in err and len(err.strip().splitlines()) == 1
    (run / "manifest.json").write_text("{not json")
    assert main(["export", str(run), "--to", "csv"]) == 2
    assert "manifest.json" in capsys.readouterr().err
