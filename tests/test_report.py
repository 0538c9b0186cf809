"""`simsubjects report`: the HTML report of run folders built by hand (no model needed)."""

from __future__ import annotations

import hashlib
import json
import re

import pandas as pd
import pytest

from simsubjects.publish import report as rp
from simsubjects.cli.commands import main
from simsubjects.collect.store import RunStore
from simsubjects.errors import UserError
from tests.test_ultimatum import fixture_responses


def ultimatum_run(path, model="m"):
    store = RunStore.open(path, {"x": model})
    df = fixture_responses().assign(model=model)
    items = pd.DataFrame({"item": ["offer-01", "offer-02", "offer-05"], "offer": [1, 2, 5]})
    store.finish(df, items, {
        "study": "ultimatum", "created": "2024-01-01T00:00:00+00:00",
        "versions": {"simsubjects": "0.1.0", "python": "3.11"},
        "model": {"spec": model, "revision": "sha256:abc"}, "parameters": {"pairs": 12, "seed": 0, "method": "exact"},
        "counts": {"trials": 36, "answered": 36, "mean_validity": 0.75}, "failures": [],
        "timings": {"collection_seconds": 1.5}})
    return path


def test_fmt_reads_like_a_table():
    assert rp.fmt(97.6) == "97.6" and rp.fmt(0.12345) == "0.123" and rp.fmt(3.0) == "3"
    assert rp.fmt(2.5e-7) == "2.50e-07" and rp.fmt(float("nan")) == "–" and rp.fmt(None) == "–"
    assert rp.fmt(299792458.0) == "299792458" and rp.fmt(1234.56) == "1,234.6" and rp.fmt(True) == "yes"


def test_table_escapes_and_cuts_long_tables():
    html = rp.table(pd.DataFrame({"who": ["<b>x</b>"] * 50, "p": [0.5] * 50}), max_rows=10, csv="a/b.csv")
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x" not in html
    assert html.count("<tr>") == 11 and "first 10 of 50 rows" in html and 'href="a/b.csv"' in html
    assert '<td class="n">0.5</td>' in html  # numbers right-aligned


def test_published_table4_as_printed():
    from simsubjects.studies.survey_bias.report import BIAS_NAMES, table4_published

    t = table4_published()
    assert len(t) == 45 and t["model"].nunique() == 9 and set(t["bias"]) == set(BIAS_NAMES.values())
    row = t[(t["model"] == "Llama2 70b") & (t["bias"] == "odd_even")].iloc[0]
    assert row["delta_b"] == 12.191 and row["p_letter_swap"] == 0.618 and row["pearson_r"] == 0.12


def test_single_run_report(tmp_path, capsys):
    run = ultimatum_run(tmp_path / "ug")
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out.strip()
    assert out == str(run / "report.html")
    page = (run / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count('<section id="ultimatum">') == 1
    assert "data:image/png;base64," in page and "<table>" in page
    assert "97.6" in page and "99.5" in page  # Aher et al. Table 1 beside the run's validity
    assert "simsubjects collect ultimatum --model m --pairs 12 --out" in page
    assert "sha256:abc" in page
    # self-contained: nothing fetched from elsewhere
    assert not re.search(r'<(script|link)\b', page) and not re.search(r'src="(?!data:)', page)
    assert (run / "analysis" / "acceptance_by_offer.csv").is_file()
    assert "short of --n valid answers" not in page  # said only where the sampling budget was reached


def test_report_counts_trials_short_of_n_valid_answers(tmp_path):
    run = ultimatum_run(tmp_path / "ug")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["short"] = [{"trial": "t1", "reason": "only 3 of 50 valid answers in 1000 draws (cap 1000)"}] * 2
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert main(["report", str(run)]) == 0
    assert "<dt>short of --n valid answers</dt><dd>2</dd>" in (run / "report.html").read_text(encoding="utf-8")


def test_folder_of_runs_and_a_broken_run(tmp_path):
    ultimatum_run(tmp_path / "a", "model-a")
    ultimatum_run(tmp_path / "b", "model-b")
    broken = tmp_path / "c"
    RunStore.open(broken, {"x": 1}).finish(pd.DataFrame({"study": ["ultimatum"], "trial": ["t"]}).iloc[:0],
                                           pd.DataFrame({"item": []}), {"study": "ultimatum", "counts": {}})
    path = rp.render_report(tmp_path)
    page = path.read_text(encoding="utf-8")
    assert page.count("<section id=") == 3
    assert "model-a" in page and "model-b" in page
    assert 'class="error"' in page  # the broken run says why, the others still render


def test_replication_manifest_drives_the_sections(tmp_path):
    from simsubjects.cli.replicate import KIND

    ultimatum_run(tmp_path / "ultimatum")
    (tmp_path / "manifest.json").write_text(json.dumps({
        "kind": KIND, "papers": ["aher2023"], "scale": 0.01, "seed": 0, "command": "simsubjects replicate aher2023 ...",
        "model": {"spec": "m", "revision": "sha256:abc"}, "created": "2024-01-01", "versions": {},
        "studies": [{"paper": "aher2023", "study": "ultimatum", "folder": "ultimatum", "status": "complete"},
                    {"paper": "aher2023", "study": "wisdom", "folder": "wisdom", "status": "skipped",
                     "error": "study not registered"}]}))
    page = rp.render_report(tmp_path).read_text(encoding="utf-8")
    assert "Aher, Arriaga &amp; Kalai (2023)" in page and "simsubjects replicate aher2023" in page
    assert page.count("<section id=") == 2 and "study not registered" in page


def test_missing_folder_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no such folder"):
        rp.render_report(tmp_path / "nope")


def _without_time(page: str) -> str:
    return re.sub(r"<dt>report written</dt><dd>[^<]*</dd>", "", page)


def test_report_reads_a_current_analysis_back_and_recomputes_a_stale_one(tmp_path, monkeypatch):
    """Issue 27: `report` reads the tables and figures the run folder holds when analysis/analysis.json
    says they were computed from the run's files as they are now; the page is the same either way.
    An edited table, a record that names a path, or a link is never read: the analysis is computed again."""
    import simsubjects.publish.analysis as an

    run = ultimatum_run(tmp_path / "ug")
    assert main(["report", str(run)]) == 0  # computes the analysis and writes it with its record
    computed = _without_time((run / "report.html").read_text(encoding="utf-8"))
    record = json.loads((run / "analysis" / "analysis.json").read_text())
    assert record["reusable"] is True and set(record["inputs"]) == {"manifest.json", "responses.parquet",
                                                                   "items.parquet"}
    calls = []
    real = an.analyze_runs
    monkeypatch.setattr(an, "analyze_runs", lambda *a, **k: calls.append(a) or real(*a, **k))

    def report() -> str:
        assert main(["report", str(run)]) == 0
        return _without_time((run / "report.html").read_text(encoding="utf-8"))

    assert report() == computed and calls == []  # read back: no analysis run, the same page
    table = run / "analysis" / "acceptance_by_offer.csv"
    table.write_text(table.read_text().replace("0.", "0.9", 1))  # a table edited by hand: stale
    assert report() == computed and len(calls) == 1
    record = json.loads((run / "analysis" / "analysis.json").read_text())
    bad = {**record, "tables": {**record["tables"], "x/../../manifest": record["tables"]["validity"]}}
    (run / "analysis" / "analysis.json").write_text(json.dumps(bad))  # a received folder's record names a path
    assert report() == computed and len(calls) == 2
    outside = tmp_path / "validity.csv"  # the same bytes, through a link: not read
    outside.write_bytes((run / "analysis" / "validity.csv").read_bytes())
    (run / "analysis" / "validity.csv").unlink()
    (run / "analysis" / "validity.csv").symlink_to(outside)
    assert report() == computed and len(calls) == 3
    # a table edited and its hash updated in the record, as a sender could: the record's signature fails
    record = json.loads((run / "analysis" / "analysis.json").read_text())
    table.write_text(table.read_text().replace("0.", "0.9", 1))
    record["tables"]["acceptance_by_offer"]["sha256"] = hashlib.sha256(table.read_bytes()).hexdigest()
    (run / "analysis" / "analysis.json").write_text(json.dumps(record))
    assert report() == computed and len(calls) == 4
    assert report() == computed and len(calls) == 4  # the record written by that computation is believed
    # the same folder on another machine (another key in another cache folder): computed there
    monkeypatch.setenv("SIMSUBJECTS_CACHE", str(tmp_path / "another-machine"))
    assert report() == computed and len(calls) == 5
    responses = pd.read_parquet(run / "responses.parquet")  # new responses: the old analysis is stale
    responses.loc[0, "weight"] = responses.loc[0, "weight"] * 0.5
    responses.to_parquet(run / "responses.parquet", index=False)
    assert report() != computed and len(calls) == 6
