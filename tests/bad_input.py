"""The bad-input contract of a study or session file, shared by the corpora of tests/test_studyfile.py and
tests/test_sessions.py: `study check` and `collect` each exit 2 with one line that names the file (and
its line), and `collect` writes nothing."""

from __future__ import annotations

from simsubjects.cli.commands import main


def assert_one_line_exit_2(path, tmp_path, capsys, expected: str, with_line: bool = True) -> None:
    name = path.stem
    for argv in (["study", "check", str(path)], ["collect", str(path), "--out", str(tmp_path / "run")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert expected in err, err
        assert f"{name}.yaml" in err
        if with_line:
            assert f"{name}.yaml:" in err and err.split(f"{name}.yaml:")[1].split(":")[0].isdigit(), err
    assert not (tmp_path / "run").exists()
