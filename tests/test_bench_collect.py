"""`bench run` goes through the one collection of every collect entry point (cli/collection.collect_study):
its batch files, one per finding, on the toy findings (tests/data/bench_toy). No model loads here (an API
model's requests are only written). Unit: the finding's request file."""

import json
from pathlib import Path

from simsubjects.cli.commands import main

TOY = Path(__file__).parent / "data" / "bench_toy"
IDS = ("toy.coin", "toy.framing", "toy.warmth")


def _cli(args, capsys):
    code = main(args)
    got = capsys.readouterr()
    return code, got.out + got.err


def test_batch_export_writes_one_file_per_finding(tmp_path, capsys):
    out = tmp_path / "o"
    code, text = _cli(["bench", "run", str(TOY), "--model", "openai:gpt-4o-mini", "--out", str(out),
                       "--batch-export", str(tmp_path / "req.jsonl")], capsys)
    assert code == 0, text
    for i in IDS:
        lines = (tmp_path / f"req-{i}.jsonl").read_text().splitlines()
        assert lines and all(len(json.loads(x)["custom_id"].split("/")[0]) == 64 for x in lines)
    assert "RESULTS-<finding id>.jsonl" in text
    assert not (out / "bench.json").exists()  # nothing is collected, nothing recorded


def test_batch_import_reads_each_findings_file(tmp_path, capsys):
    args = ["bench", "run", str(TOY), "--model", "openai:gpt-4o-mini", "--out", str(tmp_path / "o")]
    code, text = _cli([*args, "--batch-import", str(tmp_path / "res.jsonl")], capsys)
    assert code == 2 and f"{tmp_path / 'res-toy.coin.jsonl'} does not exist" in text
    assert len(text.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    # a line that is no request of the finding's run: the import's own check names the finding's file
    bogus = json.dumps({"id": "x", "custom_id": "0" * 64, "response": {"status_code": 200, "body": {}}})
    for i in IDS:
        (tmp_path / f"res-{i}.jsonl").write_text(bogus + "\n")
    code, text = _cli([*args, "--batch-import", str(tmp_path / "res.jsonl")], capsys)
    assert code == 2 and "res-toy.coin.jsonl" in text and "not a request of this run" in text
