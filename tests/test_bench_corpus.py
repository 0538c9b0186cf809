"""The bench's bundled corpora (issue 38): every original and replication effect equals an independent
reading of the raw files (the csv and json modules and hand formulas here; pandas and statsmodels in
readers.py), every runnable finding's study file passes `study check`'s validation, ids are unique, and a
user's own folder of finding files loads. Units: effects on the scale each Effect names (d, q, r, or a
difference of two proportions, in proportion points); Ns are people."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from simsubjects.bench.corpus import Finding, check_finding, corpora, load_corpus
from simsubjects.datasets.replications import readers
from simsubjects.errors import UserError

RAW = Path(readers.__file__).resolve().parent
ALL = load_corpus("all")
RUNNABLE = [f for f in ALL if f.runnable]


def num(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def rows(path, **kw):
    with open(path, newline="", encoding=kw.pop("encoding", "utf-8")) as fh:
        return list(csv.DictReader(fh, **kw))


def same(a, b, tol=1e-12):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=0, abs_tol=tol)


# ------------------------------------------------------------------------- independent readings

def ml2_original(key):
    t5 = {r["analysis"]: r for r in rows(RAW / "manylabs2/table5data_RM.csv")}
    row_key = t5[key]["ori_ML2analysis"] if key in t5 else key
    # the masterkey looked up by its `unique.id` order: the row whose study.name + "." + number matches
    mk = [r for r in rows(RAW / "manylabs2/ML2_OrignalEffects_Masterkey.csv", encoding="utf-8-sig")
          if "." in r["study.analysis"] and f"{r['study.name']}.{r['study.analysis'].split('.', 1)[1]}" == row_key]
    assert len(mk) == 1, row_key
    r = mk[0]
    d = num(r["orig.ES.d"])
    value, lo, hi = ((d, num(r["orig.ES.d.ciL"]), num(r["orig.ES.d.ciU"])) if d is not None else
                     (num(r["orig.ES.cohensQ"]), num(r["orig.ES.cohensQ.ciL"]), num(r["orig.ES.cohensQ.ciU"])))
    df = num(r["orig.stat.df2"]) if r["orig.stat.type"] == "f" and num(r["orig.stat.df2"]) is not None \
        else num(r["orig.stat.df1"])
    n1, n2 = num(r["orig.stat.n1"]), num(r["orig.stat.n2"])
    return dict(value=value, ci_low=lo, ci_high=hi, n=num(r["orig.stat.N"]), statistic=num(r["orig.stat.ncp"]),
                df=df, n_groups=(n1, n2) if n1 is not None and n2 is not None else None)


def ml2_replication(key):
    r = next(x for x in rows(RAW / "manylabs2/table5data_RM.csv") if x["analysis"] == key)
    d = num(r["ML2_d"])
    lo = hi = None
    g = RAW / "manylabs2/global_results" / (key.replace(".", "_") + "_study_global_include_all_RESULTS.csv")
    if d is not None and g.exists():
        gr = rows(g)[0]
        if num(gr["ESCI.d"]) is not None and abs(num(gr["ESCI.d"]) - d) <= 5e-4:
            lo, hi = num(gr["ESCI.l.d"]), num(gr["ESCI.u.d"])
    n1, n2 = num(r["ML2_n1"]), num(r["ML2_n2"])
    return dict(value=d if d is not None else num(r["ML2_Q"]), ci_low=lo, ci_high=hi, n=num(r["ML2_N"]),
                statistic=num(r["ML2_teststat"]), df=num(r["ML2_df"]), p=num(r["ML2_pval"]),
                n_groups=(n1, n2) if n1 is not None and n2 is not None else None)


def ml1_original(key):
    # looked up by position: study ids are the first column, in file order
    with open(RAW / "manylabs1/ML_Original_ES95CI.csv", newline="") as fh:
        table = list(csv.reader(fh))
    head, body = table[0], table[1:]
    r = dict(zip(head, next(x for x in body if x[0] == key)))
    n1, n2 = num(r["N1"]), num(r["N2"])
    return dict(value=num(r["d"]), ci_low=num(r["X95.Lower"]), ci_high=num(r["X95.Upper"]),
                n=None if n1 is None else n1 + (n2 or 0), statistic=num(r["Statistic"]),
                n_groups=(n1, n2) if n1 is not None and n2 is not None else None)


def ml1_replication(key):
    r = next(x for x in rows(RAW / "manylabs1/ML_ESCIfromR.csv") if x[".id"] == key and x["id1"].startswith("Overall"))
    sheet = rows(RAW / "manylabs1/MLforR_sheets" / f"{readers.ML1_SHEETS[key]}.csv")
    o = next(x for x in sheet if x["Site"].startswith("Overall"))
    if "t (unequal var)" in o:
        ns = [num(v) for k, v in o.items() if k.startswith("N (") and "Excluded" not in k]
        n, groups, stat, df = sum(ns), tuple(ns), num(o["t (unequal var)"]), num(o["df (unequal var)"])
    else:
        n, groups, stat, df = sum(num(v) for k, v in o.items() if k.startswith("Count")), None, num(o["X2(1)"]), 1.0
    return dict(value=num(r["smd"]), ci_low=num(r["Lower.Conf.Limit.smd"]), ci_high=num(r["Upper.Conf.Limit.smd"]),
                n=n, statistic=stat, df=df, n_groups=groups)


def hsb_original(key, cells):
    study, sub, finding, test = key.split(":")
    g = json.loads((RAW / "humanstudy_bench/studies" / study / "ground_truth.json").read_text(encoding="utf-8"))
    f = next(f for s in g["studies"] if s["study_id"] == sub for f in s["findings"] if f["finding_id"] == finding)
    data = f["original_data_points"]["data"]
    text = f["statistical_tests"][int(test)]["reported_statistics"]
    if cells and len(cells) == 2:
        (g1, k1), (g2, k2) = (c.rsplit("/", 1) for c in cells)
        p1, p2 = data[g1][k1] / 100, data[g2][k2] / 100
        n1, n2 = data[g1]["n"], data[g2]["n"]
        half = 1.959963984540054 * math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)  # Wald, by hand
        return dict(value=p1 - p2, ci_low=p1 - p2 - half, ci_high=p1 - p2 + half, n=n1 + n2, n_groups=(n1, n2))
    if cells:
        grp, field = cells[0].rsplit("/", 1)
        n1, n2 = [v for k, v in data[grp].items() if k.startswith("n_")][:2]
        return dict(value=math.sqrt(data[grp][field] * (1 / n1 + 1 / n2)), n=n1 + n2, n_groups=(n1, n2))
    if text.lstrip().startswith("t("):
        df, t = text.split("(", 1)[1].split(")")[0], text.split("=", 1)[1].split(",")[0]
        return dict(value=2 * float(t) / math.sqrt(float(df)), n=float(df) + 2)
    if text.lstrip().startswith("F("):
        df = text.split(",", 1)[1].split(")")[0]
        sign = -1 if f["statistical_tests"][int(test)]["expected_direction"] == "negative" else 1
        return dict(value=sign * 2 * math.sqrt(float(text.split("=", 1)[1].split(",")[0])) / math.sqrt(float(df)),
                    n=float(df) + 2)
    if text.lstrip().startswith("r"):
        return dict(value=float(text.split("=", 1)[1].split(",")[0]))
    raise AssertionError(f"no reading for {key}: {text}")


DATASETS = RAW.parent  # the package's own bundled files (the seeds' human counts)
Z = 1.959963984540054  # the standard normal's 97.5% quantile: 95% intervals


def binom_two_sided(x, n, p0):
    """The exact two-sided binomial p: the outcomes no more likely than x (relative tolerance 1e-7, as
    R's binom.test), summed by hand."""
    pmf = [math.comb(n, k) * p0 ** k * (1 - p0) ** (n - k) for k in range(n + 1)]
    return min(1.0, sum(q for q in pmf if q <= pmf[x] * (1 + 1e-7)))


def fisher_two_sided(a, n1, b, n2):
    """Fisher's exact two-sided p of [[a, n1 - a], [b, n2 - b]]: the hypergeometric tables (margins fixed) no
    more likely than the observed one, summed by hand."""
    m, n = a + b, n1 + n2
    prob = {k: math.comb(n1, k) * math.comb(n2, m - k) / math.comb(n, m) for k in range(max(0, m - n2), min(m, n1) + 1)}
    return min(1.0, sum(q for q in prob.values() if q <= prob[a] * (1 + 1e-7)))


def seeds_original(key):
    """Milgram: the break-off json read by the json module, n checked against the counts, h, the Wilson interval
    and the binomial p by hand. MoCa: the story file decoded here (not moca_humans), the log odds ratio and
    Woolf's interval by hand (0.5 added to every cell when one is 0), Fisher's p by hand."""
    head, *rest = key.split(":")
    if head == "milgram1963":
        t = json.loads((DATASETS / "aher2023/milgram1963_breakoff.json").read_text(encoding="utf-8"))
        x, n, p0 = t["completed"], t["n"], float(rest[1])
        assert n == x + sum(b["count"] for b in t["breakoff"])  # the 40 subjects, every one counted once
        h = lambda p: 2 * math.asin(math.sqrt(p)) - 2 * math.asin(math.sqrt(p0))  # noqa: E731
        p = x / n
        mid, half = p + Z * Z / (2 * n), Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
        lo, hi = (mid - half) / (1 + Z * Z / n), (mid + half) / (1 + Z * Z / n)
        return dict(value=h(p), ci_low=h(lo), ci_high=h(hi), n=n, statistic=x, df=None, n_groups=None,
                    p=binom_two_sided(x, n, p0))
    task, i, j = rest[0], int(rest[1]), int(rest[2])
    raw = json.loads((DATASETS / f"moca/{task}_dataset_v1.json").read_text(encoding="utf-8"))
    (a, n1), (b, n2) = ((sum(v is True for v in s["individual_votes"]), len(s["individual_votes"]))
                        for s in (json.loads(raw[i]), json.loads(raw[j])))
    cells = [a, n1 - a, b, n2 - b]
    if 0 in cells:
        cells = [c + 0.5 for c in cells]
    lor = math.log(cells[0] * cells[3] / (cells[1] * cells[2]))
    half = Z * math.sqrt(sum(1 / c for c in cells))
    return dict(value=lor, ci_low=lor - half, ci_high=lor + half, n=n1 + n2, statistic=None, df=None,
                n_groups=(n1, n2), p=fisher_two_sided(a, n1, b, n2))


def reference(f: Finding, which: str, spec: dict):
    key, cells = str(spec["key"]), spec.get("cells")
    if spec["from"] == "seeds":
        return seeds_original(key)
    if spec["from"] == "manylabs2":
        return ml2_original(key) if which == "original" else ml2_replication(key)
    if spec["from"] == "manylabs1":
        return ml1_original(key) if which == "original" else ml1_replication(key)
    return hsb_original(key, cells)


def specs():
    """(finding id, which, the `from` mapping) of every bundled effect, read from the files by yaml."""
    import yaml

    out = []
    for f in ALL:
        path = f.study_path or (Path(__import__("simsubjects.bench.corpus", fromlist=["root"]).root()) / f.corpus
                                / "not_runnable.yaml")
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        entry = data["finding"] if f.runnable else next(x for x in data["findings"] if x["id"] == f.id)
        for which in ("original", "replication"):
            if isinstance(entry.get(which), dict) and "from" in entry[which]:
                out.append((f, which, entry[which]))
    return out


SPECS = specs()


def test_every_bundled_effect_is_read_from_a_file():
    assert len(SPECS) >= 100  # 40 runnable findings' originals, 19 replications, and the non-runnable ones'
    for f in ALL:
        if f.original is not None:
            assert any(s[0] is f and s[1] == "original" for s in SPECS), f.id  # no bundled number typed


@pytest.mark.parametrize("f,which,spec", SPECS, ids=[f"{f.id}:{w}" for f, w, _ in SPECS])
def test_effect_equals_an_independent_reading(f, which, spec):
    got = getattr(f, which)
    want = reference(f, which, spec)
    for field, value in want.items():
        have = getattr(got, field)
        if field == "n_groups":
            assert (have is None and value is None) or tuple(map(float, have)) == tuple(map(float, value)), (f.id, field)
        else:
            tol = 1e-9 if field in ("ci_low", "ci_high") else 1e-12
            assert same(have, value, tol), (f.id, which, field, have, value)
    if spec["from"] == "seeds":  # the package's own dataset files, named from the package root
        assert (DATASETS.parent / got.source.split(":", 1)[0]).is_file(), got.source
    else:
        assert got.source.split(":", 1)[0] in {str(p.relative_to(RAW)) for p in RAW.rglob("*") if p.is_file()}


# --------------------------------------------------------------------------------- the corpora

def test_corpora_and_counts():
    assert corpora() == ["humanstudy_bench", "manylabs1", "manylabs2", "seeds"]
    by = {c: sum(f.runnable for f in ALL if f.corpus == c) for c in corpora()}
    assert sum(by[c] for c in ("manylabs1", "manylabs2", "humanstudy_bench")) >= 40, by
    assert all(by[c] >= 8 for c in ("manylabs1", "manylabs2", "humanstudy_bench")), by
    assert by["seeds"] >= 3, by  # Milgram and MoCa causal/moral; the rest lack bundled human counts
    ids = [f.id for f in ALL]
    assert len(ids) == len(set(ids))
    for f in ALL:  # every finding says where its numbers (or, lacking an effect size, its result) come from
        assert f.original is not None or "(source: " in f.reason, f.id
        assert f.runnable == (f.reason is None) == (f.study_path is not None), f.id
        assert f.id.split(".")[0] in {"ml1", "ml2", "hsb", "seeds"} and f.citation and f.domain


@pytest.mark.parametrize("f", RUNNABLE, ids=[f.id for f in RUNNABLE])
def test_runnable_finding_passes_study_check(f):
    study = check_finding(f)  # load_study (what `study check` validates) plus the hypothesis against the study
    assert f.corpus == f.study_path.parent.parent.name
    head = f.study_path.read_text(encoding="utf-8").splitlines()[0]
    assert head.startswith("# A finding of `simsubjects bench`") and "Wording: " in head  # its wording's source
    from simsubjects.studyfile.design import build_trials

    trials, _ = build_trials(study)
    # small enough for the embedded model: a few prompts per finding at the default scale
    assert len(trials) <= 20, (f.id, len(trials))


# ----------------------------------------------------------------------------- a user's own folder

FINDING = """
study: my-framing
title: My framing study
prompt: {{template: "${{question}}\\n${{options}}", answer_prefix: "\\nAnswer:"}}
design:
  factors: {{frame: {{assignment: between, levels: {{gain: "200 people will be saved", loss: "400 people will die"}}}}}}
  subjects: 2
items:
  - id: choice
    text: "Under program A, ${{frame}}. Do you choose program A?"
    response: {{type: choice, options: [{{label: sure, text: "Yes"}}, {{label: risky, text: "No"}}]}}
finding:
  id: lab.framing
  title: "Framing in our lab"
  year: 2024
  hypothesis: {{kind: {kind}, outcome: choice, factor: frame, levels: [gain, loss], measure: {{option: sure}}, direction: positive}}
  estimator: log_odds_ratio
  test: chi2
  original: {{effect: 0.9, ci: [0.4, 1.4], n: 120, n_groups: [60, 60], scale: log_or, source: "our 2024 study, Table 1"}}
"""


def test_a_users_folder_of_one_finding_loads(tmp_path):
    (tmp_path / "framing").mkdir()
    (tmp_path / "framing" / "study.yaml").write_text(FINDING.format(kind="between"), encoding="utf-8")
    (f,) = load_corpus(tmp_path)
    assert (f.id, f.corpus, f.runnable, f.citation, f.domain, f.original.value, f.original.n_groups) == \
        ("lab.framing", tmp_path.name, True, "", "unspecified", 0.9, (60, 60))
    assert f.original.source == "our 2024 study, Table 1" and f.replication is None
    check_finding(f)


def test_a_bad_finding_is_one_line_naming_file_line_and_key(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text(FINDING.format(kind="betwen"), encoding="utf-8")
    with pytest.raises(UserError) as e:
        load_corpus(tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and "finding.hypothesis.kind" in msg
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "kind: betwen" in t)
    assert f":{line}:" in msg


def test_a_key_no_file_holds_is_named(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text(FINDING.format(kind="between").replace(
        'original: {effect: 0.9, ci: [0.4, 1.4], n: 120, n_groups: [60, 60], scale: log_or, source: "our 2024 study, Table 1"}',
        'original: {from: manylabs2, key: "Tversky.9"}'), encoding="utf-8")
    with pytest.raises(UserError, match=r"finding\.original\.key: .*table5data_RM.csv|Tversky\.9"):
        load_corpus(tmp_path)


def test_duplicate_ids_are_refused(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "study.yaml").write_text(FINDING.format(kind="between"), encoding="utf-8")
    with pytest.raises(UserError, match="lab.framing"):
        load_corpus(tmp_path)


def test_the_docs_walkthrough_finding_loads(tmp_path):
    """The finding file of docs/bench.md's walkthrough, copied from the page, is a corpus of one."""
    import re

    page = (Path(__file__).resolve().parents[1] / "docs" / "bench.md").read_text(encoding="utf-8")
    text = re.search(r"```yaml\n# my_lab/framing/study.yaml\n(.*?)```", page, re.S).group(1)
    (tmp_path / "framing").mkdir()
    (tmp_path / "framing" / "study.yaml").write_text(text, encoding="utf-8")
    (f,) = load_corpus(tmp_path)
    assert f.id == "lab.framing" and f.original.source and f.original.n_groups == (60, 60)
    check_finding(f)


@pytest.mark.parametrize("original,key", [
    ('{from: manylabs2}', "finding.original.key"),
    ('{from: manylabs3, key: "X.1"}', "finding.original.from"),
    ('{from: humanstudy_bench, key: "study_005:Experiment 1:Finding 1:0", cells: [1, 2]}', "finding.original.cells"),
    ('{effect: 0.9, ci: [1.4, 0.4], source: "x"}', "finding.original.ci"),
    ('{effect: 0.9}', "finding.original.source"),
])
def test_bad_effects_name_their_key(tmp_path, original, key):
    text = FINDING.format(kind="between")
    text = text[:text.index("  original:")] + f"  original: {original}\n"
    (tmp_path / "study.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as e:
        load_corpus(tmp_path)
    assert key in str(e.value) and "\n" not in str(e.value)
