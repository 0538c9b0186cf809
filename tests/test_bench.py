"""`simsubjects bench` end to end on the toy findings (tests/data/bench_toy) with the embedded model: the run,
its resumption after a kill, the report, and every scorecard statistic against a recomputation from the
run's responses. Unit of every statistic: the finding."""

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simsubjects.bench import run as bench_run
from simsubjects.bench import score
from simsubjects.cli.commands import main

TOY = Path(__file__).parent / "data" / "bench_toy"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory, smollm2):
    """`bench run` through the CLI (cli/collection.collect_study per finding), on the session's model."""
    out = tmp_path_factory.mktemp("bench") / "run"
    loads = []

    def loaded(spec, **kw):
        loads.append(spec)
        return smollm2
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("simsubjects.collect.models.load_model", loaded)
        assert main(["bench", "run", str(TOY), "--model", "smollm2", "--out", str(out), "--quiet"]) == 0
        assert len(loads) == 1  # the model loads once for the corpus
        assert main(["bench", "run", str(TOY), "--model", "smollm2", "--out", str(out), "--quiet"]) == 0
        assert len(loads) == 1  # every finding finished: rerun loads nothing
    assert main(["bench", "report", str(out), "--cutoff", "2000"]) == 0
    return out


def _cli(args, capsys):
    code = main(args)
    got = capsys.readouterr()
    return code, got.out + got.err


def _subject_p(folder: Path, item: str, option: str, labels: list[str], level_col=None) -> pd.DataFrame:
    """Recomputed from responses.parquet: each subject's probability of `option` among `labels`."""
    r = pd.read_parquet(folder / "responses.parquet")
    r = r[(r["item"] == item) & r["response"].isin(labels)]
    r = r.assign(p=r["weight"] / r.groupby("trial")["weight"].transform("sum"))
    keys = ["subject"] + ([level_col] if level_col else [])
    return r[r["response"] == option].groupby(keys)["p"].mean().reset_index()


def _grid_power(p1, p2, n1, n2, direction):
    """A direct double sum over every 2 x 2 table (numpy grid, no truncation)."""
    x1, x2 = np.arange(n1 + 1)[:, None], np.arange(n2 + 1)[None, :]
    pool = (x1 + x2) / (n1 + n2)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (x1 / n1 - x2 / n2) / np.sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2))
    rej = (np.nan_to_num(z) ** 2 > stats.chi2.isf(0.05, 1)) & (np.sign(x1 / n1 - x2 / n2) == direction)
    return float(stats.binom.pmf(np.arange(n1 + 1), n1, p1) @ rej @ stats.binom.pmf(np.arange(n2 + 1), n2, p2))


def test_report_files_and_columns(bench_dir):
    card = pd.read_csv(bench_dir / "scorecard.csv")
    assert sorted(card["finding"]) == ["toy.coin", "toy.framing", "toy.warmth"]
    assert set(card["unit"]) == {"finding"}
    across = pd.read_csv(bench_dir / "across.csv")
    assert set(across["unit"]) == {"finding"}
    assert {"all", "corpus=toy", "year<=2000", "year>2000"} <= set(across["split"])
    assert {"model", "original", "zero"} <= set(across["predictor"])
    page = (bench_dir / "bench_report.html").read_text()
    assert "Forest plot" in page and "data:image/png;base64" in page and "Tversky" not in page.split("<main>")[0]
    for col in score.COLUMNS:
        assert col in card.columns


def test_framing_recomputed(bench_dir):
    card = pd.read_csv(bench_dir / "scorecard.csv").set_index("finding")
    row = card.loc["toy.framing"]
    p = _subject_p(bench_dir / "toy.framing", "choice", "sure", ["sure", "risky"], "frame")
    p_gain, p_loss = p[p["frame"] == "gain"]["p"].mean(), p[p["frame"] == "loss"]["p"].mean()
    lor = math.log(p_gain / (1 - p_gain)) - math.log(p_loss / (1 - p_loss))
    assert row["model_effect"] == pytest.approx(lor, rel=1e-9, abs=1e-12)
    assert row["model_d"] == pytest.approx(lor * math.sqrt(3) / math.pi, rel=1e-9, abs=1e-12)
    assert row["sig_at_original_n"] == pytest.approx(_grid_power(p_gain, p_loss, 152, 155, 1), abs=1e-12)
    assert row["sig_at_replication_n"] == pytest.approx(_grid_power(p_gain, p_loss, 3135, 3136, 1), abs=1e-12)
    assert row["in_original_ci"] == float(1.71 <= lor <= 2.71)
    assert row["direction_vs_original"] == float(lor > 0)
    d_rep = 1.02 * math.sqrt(3) / math.pi
    assert row["ratio_d"] == pytest.approx(row["model_d"] / d_rep)
    r_m, r_r = (d / math.sqrt(d * d + 4) for d in (row["model_d"], d_rep))
    assert row["ratio_z"] == pytest.approx(np.arctanh(r_m) / np.arctanh(r_r))


def test_likert_and_one_sample_recomputed(bench_dir):
    card = pd.read_csv(bench_dir / "scorecard.csv").set_index("finding")
    r = pd.read_parquet(bench_dir / "toy.warmth" / "responses.parquet")
    r = r[r["item"] == "liking"]
    r = r.assign(p=r["weight"] / r.groupby("trial")["weight"].transform("sum"))
    pos = {lab: k + 1 for k, lab in enumerate(["Strongly disagree", "Disagree", "Neither agree nor disagree",
                                               "Agree", "Strongly agree"])}
    assert set(r["response"]) <= set(pos), set(r["response"])
    r = r.assign(x=r["response"].map(pos))
    mom = {}
    for level, g in r.groupby("trait"):
        m_s = (g["p"] * g["x"]).groupby(g["subject"]).sum()
        e2 = (g["p"] * g["x"] ** 2).groupby(g["subject"]).sum()
        mom[level] = (m_s.mean(), e2.mean() - m_s.mean() ** 2)
    d = (mom["warm"][0] - mom["cold"][0]) / math.sqrt((mom["warm"][1] + mom["cold"][1]) / 2)
    row = card.loc["toy.warmth"]
    assert row["model_effect"] == pytest.approx(d, rel=1e-9, abs=1e-12)
    nc = d * math.sqrt(55 * 55 / 110)
    assert row["sig_at_original_n"] == pytest.approx(stats.nct.sf(stats.t.isf(0.025, 108), 108, nc), abs=1e-9)
    assert row["in_replication_ci"] == float(-0.05 <= d <= 0.25)
    p = _subject_p(bench_dir / "toy.coin", "heads", "Yes", ["Yes", "No"])["p"].mean()
    coin = card.loc["toy.coin"]
    assert coin["model_effect"] == pytest.approx(2 * math.asin(math.sqrt(p)) - 2 * math.asin(math.sqrt(0.5)))
    want = sum(stats.binom.pmf(x, 50, p) for x in range(51) if stats.binomtest(x, 50, 0.5).pvalue <= 0.05 and x > 25)
    assert coin["sig_at_original_n"] == pytest.approx(want, abs=1e-12)


def test_across_recomputed(bench_dir):
    card = pd.read_csv(bench_dir / "scorecard.csv")
    a = pd.read_csv(bench_dir / "across.csv")
    a = a[a["split"] == "all"].set_index(["statistic", "predictor", "reference"])["estimate"]
    rep = card[card["replication_d"].notna()]
    x, y = rep["model_d"].to_numpy(), rep["replication_d"].to_numpy()
    assert a[("direction_share", "model", "replication")] == pytest.approx(np.mean(np.sign(x) == np.sign(y)))
    ccc = 2 * np.cov(x, y, ddof=0)[0, 1] / (x.var() + y.var() + (x.mean() - y.mean()) ** 2)
    assert a[("lins_ccc", "model", "replication")] == pytest.approx(ccc)
    xo = rep["original_d"].to_numpy()
    assert a[("direction_share", "original", "replication")] == pytest.approx(np.mean(np.sign(xo) == np.sign(y)))
    unsupported = card[card["replication_supported"].astype(str) == "False"]
    assert a[("false_positive_rate", "model", "replication")] == pytest.approx(unsupported["sig_at_original_n"].mean())
    assert a[("pas", "model", "original")] == pytest.approx(card["pas"].mean())
    xo, xm = card["original_d"].to_numpy(), card["model_d"].to_numpy()
    ecs = 2 * np.cov(xo, xm, ddof=0)[0, 1] / (xo.var() + xm.var() + (xo.mean() - xm.mean()) ** 2)
    assert a[("ecs", "model", "original")] == pytest.approx(ecs)


def test_kill_and_rerun_gives_identical_tables(bench_dir, tmp_path):
    """A `bench run` killed (SIGKILL) after its first finding finished resumes: the finished finding is not
    collected again, and the report equals the uninterrupted run's."""
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "simsubjects", "bench", "run", str(TOY), "--out", str(out), "-q"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = out / "toy.coin"
    deadline = time.time() + 300
    while not bench_run.done(first) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert bench_run.done(first)
    kept = (first / "responses.parquet").read_bytes()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert (first / "responses.parquet").read_bytes() == kept  # finished before the kill: not collected again
    rep = subprocess.run([sys.executable, "-m", "simsubjects", "bench", "report", str(out), "--cutoff", "2000"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr[-2000:]
    ours, theirs = pd.read_csv(out / "scorecard.csv"), pd.read_csv(bench_dir / "scorecard.csv")
    pd.testing.assert_frame_equal(ours, theirs, check_exact=False, rtol=1e-9, atol=1e-12)
    pd.testing.assert_frame_equal(pd.read_csv(out / "across.csv"), pd.read_csv(bench_dir / "across.csv"),
                                  check_exact=False, rtol=1e-9, atol=1e-12)


def test_bad_input_one_line_exit_2(tmp_path, capsys):
    code, text = _cli(["bench", "run", str(TOY), "--out", str(tmp_path / "o"), "--findings", "toy.nope"], capsys)
    assert code == 2 and "--findings toy.nope" in text and len(text.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
    bad = tmp_path / "bad"
    bad.mkdir()
    text = (TOY / "framing" / "study.yaml").read_text().replace("estimator: log_odds_ratio", "estimator: odds")
    (bad / "study.yaml").write_text(text)
    code, text = _cli(["bench", "run", str(bad), "--out", str(tmp_path / "o2")], capsys)
    assert code == 2 and "finding.estimator" in text and "study.yaml:" in text
    assert not (tmp_path / "o2").exists()
    code, text = _cli(["bench", "report", str(tmp_path)], capsys)
    assert code == 2 and "bench.json" in text


def test_list_and_dry_run(tmp_path, capsys):
    code, text = _cli(["bench", "list", str(TOY)], capsys)
    assert code == 0 and "toy.framing" in text and "3 findings (3 runnable)" in text
    code, text = _cli(["bench", "run", str(TOY), "--out", str(tmp_path / "d"), "--dry-run",
                       "--price-in", "1", "--price-out", "2"], capsys)
    assert code == 0, text
    assert "total" in text and "price_max" in text and not (tmp_path / "d").exists()


def test_check_r_agrees(bench_dir):
    """--check-r: R's effectsize, pwr and metafor (R/bench.R) give the scorecard's numbers."""
    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    assert main(["bench", "report", str(bench_dir), "--cutoff", "2000", "--check-r"]) == 0
    check = pd.read_csv(bench_dir / "check_r.csv")
    assert check["ok"].all(), check[~check["ok"]].to_string()
    assert len(check) == 3 * 4 + 7  # four numbers per finding, seven across findings
    assert check["python"].notna().sum() >= 15
