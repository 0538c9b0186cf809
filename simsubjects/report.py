"""`simsubjects report DIR`: one self-contained HTML file for a run folder or a replication folder.

Every figure is embedded as a base64 PNG and every table written as HTML, so the file can be
mailed or attached to a paper's supplement and opened anywhere. Each study gets a section with
the model's results beside the human references and the numbers the paper printed; a study
without a section of its own below still gets the generic one (its analysis views and figures),
so new studies are reported the day they are registered.

Published numbers that the bundled datasets do not hold are transcribed here, with their place
in the paper: Aher et al. (2023) Table 1 and §4/App. C statements, Tjuatja et al. (2024) Table 4,
Nie et al. (2023) Table 1.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from . import __version__
from .collect.store import atomic_write_bytes
from .output import write_error
from .runcheck import check_manifest
from .errors import UserError

NUMBER = re.compile(r"[-−]?[\d,]*\.?\d+( \(.*\)| \[.*\])?|–")
MAX_ROWS = 40  # longer tables are cut in the page; the CSV beside them has every row

# ---------------------------------------------------------------- published numbers

# Aher et al. (2023) Table 1: valid generation rates (%). The extracted text leaves the first cell of
# the garden-path and wisdom rows empty, so their four values sit under LM-2..LM-5 as printed.
AHER_TABLE1 = {
    "ultimatum": {"LM-1": 97.6, "LM-2": 93.8, "LM-3": 99.4, "LM-4": 98.6, "LM-5": 99.5},
    "garden_path": {"LM-1": None, "LM-2": 99.2, "LM-3": 97.9, "LM-4": 95.5, "LM-5": 95.5},
    "wisdom": {"LM-1": None, "LM-2": 94.4, "LM-3": 88.0, "LM-4": 98.0, "LM-5": 99.0},
}
# Aher et al. App. C: garden-path sentences (of the 24 published) rated LESS ungrammatical than their control.
AHER_GP_LOWER = {"LM-3": 0, "LM-4": 3, "LM-5": 0}

# Tjuatja et al. (2024) Table 4 (Δ in percentage points, p of the one-sample t-test, Pearson r of
# uncertainty vs |Δb|), transcribed as printed: model|bias|Δb|p|Δp key typo|p|Δp middle random|p|
# Δp letter swap|p|r|p.
TJUATJA_TABLE4 = """\
Llama2 7b|Acquiescence|1.921|0.021|-3.920|0.007|-4.480|0.000|-4.840|0.004|0.182|0.015
Llama2 7b|Response Order|24.915|0.000|1.680|0.382|-0.320|0.871|2.320|0.151|-0.503|0.000
Llama2 7b|Odd/even|1.095|0.206|0.720|0.625|1.360|0.355|1.680|0.221|-0.102|0.255
Llama2 7b|Opinion Float|4.270|0.000|0.720|0.625|1.360|0.355|1.680|0.221|-0.252|0.004
Llama2 7b|Allow/forbid|-60.350|0.000|-5.400|0.007|-10.250|0.000|-7.700|0.000|-0.739|0.000
Llama2 13b|Acquiescence|-11.852|0.000|-6.800|0.001|-5.760|0.000|-9.320|0.000|-0.412|0.000
Llama2 13b|Response Order|45.757|0.000|11.600|0.000|11.640|0.000|11.720|0.000|-0.664|0.000
Llama2 13b|Odd/even|-3.492|0.000|5.840|0.000|3.600|0.031|4.000|0.007|0.192|0.031
Llama2 13b|Opinion Float|4.127|0.000|5.840|0.000|3.600|0.031|4.000|0.007|-0.023|0.799
Llama2 13b|Allow/forbid|-55.100|0.000|-9.100|0.000|-5.700|0.000|-7.600|0.000|-0.739|0.000
Llama2 70b|Acquiescence|7.296|0.000|-2.440|0.218|-3.080|0.173|-3.320|0.146|-0.018|0.809
Llama2 70b|Response Order|5.122|0.000|-1.080|0.597|3.240|0.113|2.000|0.306|-0.140|0.021
Llama2 70b|Odd/even|12.191|0.000|0.920|0.540|0.600|0.687|-0.800|0.618|0.12|0.179
Llama2 70b|Opinion Float|2.444|0.000|0.920|0.540|0.600|0.687|-0.800|0.618|-0.033|0.714
Llama2 70b|Allow/forbid|-42.200|0.000|-6.200|0.004|2.250|0.332|0.350|0.877|-0.628|0.000
Llama2 7b-chat|Acquiescence|1.136|0.647|-7.807|0.000|-12.034|0.000|-5.546|0.000|-0.099|0.189
Llama2 7b-chat|Response Order|-9.801|0.000|7.173|0.000|12.679|0.000|1.594|0.253|-0.315|0.000
Llama2 7b-chat|Odd/even|20.079|0.000|8.460|0.000|15.810|0.000|9.175|0.000|-0.315|0.000
Llama2 7b-chat|Opinion Float|-1.254|0.283|8.460|0.000|15.801|0.000|9.175|0.000|-0.086|0.339
Llama2 7b-chat|Allow/forbid|-7.050|0.367|-18.700|0.000|-24.600|0.000|-16.200|0.002|-0.161|0.321
Llama2 13b-chat|Acquiescence|1.909|0.434|-9.239|0.000|-11.534|0.000|-5.284|0.000|-0.095|0.209
Llama2 13b-chat|Response Order|-9.292|0.000|7.653|0.000|10.753|0.000|0.472|0.719|-0.324|0.000
Llama2 13b-chat|Odd/even|21.254|0.000|10.159|0.000|14.460|0.000|9.492|0.000|-0.163|0.069
Llama2 13b-chat|Opinion Float|-0.191|0.870|10.159|0.000|14.460|0.000|9.492|0.000|-0.106|0.238
Llama2 13b-chat|Allow/forbid|-7.300|0.333|-15.950|0.000|-23.450|0.000|-16.200|0.000|-0.131|0.422
Llama2 70b-chat|Acquiescence|11.114|0.000|2.320|0.523|-5.280|0.312|4.040|0.166|0.452|0.000
Llama2 70b-chat|Response Order|-0.495|0.745|0.200|0.904|15.040|0.002|1.200|0.459|0.465|0.000
Llama2 70b-chat|Odd/even|26.476|0.000|3.280|0.210|-2.040|0.656|-7.240|0.018|-0.231|0.009
Llama2 70b-chat|Opinion Float|1.556|0.039|3.280|0.210|-2.040|0.656|-7.240|0.018|0.440|0.000
Llama2 70b-chat|Allow/forbid|4.000|0.546|-4.750|0.258|-16.000|0.021|-0.950|0.811|0.280|0.080
Solar|Acquiescence|18.511|0.000|0.120|0.970|2.560|0.596|0.600|0.833|0.187|0.013
Solar|Response Order|9.683|0.000|2.280|0.336|8.680|0.012|4.360|0.017|0.248|0.000
Solar|Odd/even|17.508|0.000|0.480|0.815|2.960|0.223|-1.000|0.661|-0.385|0.000
Solar|Opinion Float|1.921|0.017|0.480|0.815|-2.960|0.223|-1.000|0.661|0.291|0.001
Solar|Allow/forbid|6.800|0.207|-2.950|0.343|-8.500|0.131|-8.050|0.001|0.145|0.373
GPT 3.5 Turbo|Acquiescence|5.523|0.040|-11.720|0.008|-28.680|0.000|-19.120|0.000|0.334|0.000
GPT 3.5 Turbo|Response Order|-2.709|0.147|4.960|0.121|15.960|0.002|8.000|0.011|0.198|0.001
GPT 3.5 Turbo|Odd/even|25.048|0.000|-5.480|0.082|-14.800|0.001|-5.800|0.062|-0.273|0.002
GPT 3.5 Turbo|Opinion Float|-11.905|0.000|-5.480|0.082|-14.800|0.001|-5.800|0.062|0.467|0.000
GPT 3.5 Turbo|Allow/forbid|25.300|0.000|-12.000|0.008|-23.200|0.001|-6.950|0.058|0.206|0.202
GPT 3.5 Turbo Instruct|Acquiescence|6.455|0.024|2.600|0.445|-11.800|0.008|-2.800|0.326|0.334|0.000
GPT 3.5 Turbo Instruct|Response Order|-11.114|0.000|3.880|0.169|11.920|0.001|3.800|0.147|0.275|0.000
GPT 3.5 Turbo Instruct|Odd/even|2.032|0.390|1.560|0.433|-7.120|0.061|-0.840|0.711|-0.073|0.416
GPT 3.5 Turbo Instruct|Opinion Float|0.143|0.891|1.560|0.433|-7.120|0.061|-0.840|0.711|0.360|0.000
GPT 3.5 Turbo Instruct|Allow/forbid|8.550|0.111|-4.500|0.216|-10.050|0.139|4.100|0.261|0.437|0.005
"""
TABLE4_COLUMNS = ["model", "bias", "delta_b", "p_bias", "delta_p_key_typo", "p_key_typo", "delta_p_middle_random",
                  "p_middle_random", "delta_p_letter_swap", "p_letter_swap", "pearson_r", "pearson_p"]
BIAS_NAMES = {"Acquiescence": "acquiescence", "Response Order": "response_order", "Odd/even": "odd_even",
              "Opinion Float": "opinion_float", "Allow/forbid": "allow_forbid"}

# Nie et al. (2023) Table 1: stories and human label classes (Yes p > 0.6, No p < 0.4).
NIE_TABLE1 = pd.DataFrame({"task": ["causal", "moral"], "stories": [144, 62], "Yes": [48, 23], "No": [50, 10],
                           "ambiguous": [46, 29]})

STUDY_TITLES = {
    "ultimatum": "Ultimatum Game (Aher et al. 2023, §4)",
    "garden_path": "Garden Path sentences (Aher et al. 2023, §5, App. C)",
    "wisdom": "Wisdom of Crowds (Aher et al. 2023, §7, App. D)",
    "milgram": "Milgram obedience, classic scenario (Aher et al. 2023, §6, App. E.1)",
    "milgram_novel": "Milgram obedience, novel scenario (Aher et al. 2023, App. E.2)",
    "survey_bias": "Survey response biases (Tjuatja et al. 2024)",
    "moca": "Causal and moral judgments, MoCa (Nie et al. 2023)",
    "opinion_survey": "Opinion survey beside people by group, personas and order effects (Santurkar et al. 2023)",
}


def table4_published() -> pd.DataFrame:
    rows = [line.split("|") for line in TJUATJA_TABLE4.strip().splitlines()]
    df = pd.DataFrame(rows, columns=TABLE4_COLUMNS)
    for c in TABLE4_COLUMNS[2:]:
        df[c] = df[c].astype(float)
    df["bias"] = df["bias"].map(BIAS_NAMES)
    return df


# ---------------------------------------------------------------- HTML pieces

def fmt(v) -> str:
    """Numbers people read: p-values small in e-notation, whole numbers without decimals."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT:
        return "–"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):d}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == int(v) and abs(v) < 1e15:
            return f"{int(v):d}"
        if abs(v) < 1e-3:
            return f"{v:.2e}"
        return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 1000 else f"{v:,.1f}"
    return str(v)


def _decimals(col: pd.Series) -> int | None:
    """Decimals that show every value of a float column to 3 places, the same for the whole column."""
    if not pd.api.types.is_float_dtype(col):
        return None
    v = col.to_numpy(float)
    v = v[np.isfinite(v) & (np.abs(v) >= 1e-3) & (np.abs(v) < 1000)]
    return max((len(f"{x:.3f}".rstrip("0").split(".")[1]) for x in v), default=0)


def _cell(v, decimals: int | None = None) -> str:
    num = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
    text = fmt(v)
    if isinstance(v, str) and NUMBER.fullmatch(v):  # numbers formatted upstream still align right
        return f'<td class="n">{html.escape(text)}</td>'
    if num and decimals is not None and isinstance(v, (float, np.floating)) and math.isfinite(v) \
            and (v == 0 or 1e-3 <= abs(v) < 1000):
        text = f"{float(v):.{decimals}f}"
    return f'<td class="n">{html.escape(text)}</td>' if num else f"<td>{html.escape(text)}</td>"


def table(df: pd.DataFrame, max_rows: int = MAX_ROWS, csv: str | None = None) -> str:
    if df is None or df.empty:
        return '<p class="note">(empty table)</p>'
    shown = df.head(max_rows)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
    dec = [_decimals(shown[c]) for c in shown.columns]
    body = "".join("<tr>" + "".join(_cell(v, d) for v, d in zip(row, dec)) + "</tr>"
                   for row in shown.itertuples(index=False, name=None))
    more = ""
    if len(df) > max_rows:
        where = f' (all rows: <a href="{html.escape(csv)}">{html.escape(csv)}</a>)' if csv else ""
        more = f'<p class="note">first {max_rows} of {len(df)} rows{where}</p>'
    return f'<div class="tw"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}'


def block(title: str, content: str, note: str = "", kind: str = "") -> str:
    n = f'<p class="note">{note}</p>' if note else ""
    cls = f' class="{kind}"' if kind else ""
    return f"<div{cls}><h4>{html.escape(title)}</h4>{n}{content}</div>"


def figure(path: Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    name = html.escape(Path(path).name)
    return (f'<figure><img alt="{name}" src="data:image/png;base64,{data}">'
            f"<figcaption>{name}</figcaption></figure>")


def pre(text: str) -> str:
    return f"<pre>{html.escape(text)}</pre>"


# ---------------------------------------------------------------- study sections

@dataclass
class Run:
    """One study run folder and what the report shows of it."""

    folder: Path
    rel: str  # path shown in links, relative to the report
    manifest: dict
    entry: dict = field(default_factory=dict)  # the replicate manifest's entry, if any
    analysis: object | None = None
    error: str = ""


def _spec(run: Run) -> str:
    return run.manifest.get("model", {}).get("spec", "model")


def _model_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df if "source" not in df else df[df["source"] != "human"]


def _validity_vs_table1(study: str, value: float | None, model: str = "this run") -> str:
    ref = AHER_TABLE1[study]
    pct = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731 - one decimal, as Table 1 prints
    row = {"": "valid answers (%)", **{k: pct(v) for k, v in ref.items()},
           f"this run: {model}": pct(None if value is None else 100 * value)}
    return block("Validity rate beside the paper's Table 1 (LM-1..LM-5 = GPT-3 models)", table(pd.DataFrame([row])),
                 "Share of probability (k-choice) or of completions (free text) on valid answers. "
                 + ("Table 1's extracted text leaves this row's first cell empty; its values sit under LM-2..LM-5 "
                    "as printed." if ref.get("LM-1") is None else ""))


def _ultimatum(run: Run) -> list[str]:
    t = run.analysis.tables
    v = t["validity"]
    val = v.loc[v["offer"] == "all", "validity"]
    out = [_validity_vs_table1("ultimatum", float(val.mean()) if len(val) else None, _spec(run))]
    by = t["acceptance_by_offer"]
    bands = [("$0-$1 (0-10% of $10)", [0, 1], "rarely accepted"), ("$5-$10 (50-100%)", list(range(5, 11)),
                                                                    "almost always accepted")]
    rows = []
    for label, offers, human in bands:
        g = by[by["offer"].isin(offers)]
        for m, gm in g.groupby("model"):
            rows.append({"offers": label, "human studies and LM-5 (§4)": human, "model": m,
                         "mean P(accept)": gm["mean"].mean()})
    out.append(block("Acceptance beside the human findings", table(pd.DataFrame(rows)),
                     "§4: in human studies (Houser & McCabe 2014; Krawczyk 2018), offers of 50-100% of the "
                     "endowment are almost always accepted and offers of 0-10% rarely; LM-5 agreed, smaller models "
                     "were flat across offers."))
    bp = t["acceptance_by_pairing"]
    b2 = bp[bp["offer"] == 2]
    paper = {"Ms-Mr": 0.60, "Mr-Ms": 0.20}
    rows = [{"pairing (proposer-responder)": k, "LM-5, §4 (approx.)": paper.get(k), "model": m, "mean P(accept)": g["mean"].mean(),
             "n": int(g["n"].sum())}
            for (m, k), g in b2.groupby(["model", "pairing"])]
    out.append(block("Gender pairing at an offer of $2", table(pd.DataFrame(rows)),
                     "§4, LM-5: men accepted an unfair $2 offer from a woman at a mean rate of 60%, women one from a "
                     "man at 20%; same-title pairings were similar to each other."))
    return out


def _garden_path(run: Run) -> list[str]:
    t = run.analysis.tables
    v = t["validity"]
    val = v[(v["version"] == "all")]
    val = val[val["set"] == "both"] if (val["set"] == "both").any() else val
    out = [_validity_vs_table1("garden_path", float(val["validity"].mean()) if len(val) else None, _spec(run))]
    pt = t["paired_tests"]
    pub = pt[(pt["set"] == "published") & (pt["type"] == "all")].drop_duplicates("model")
    rows = [{"system": k, "GP rated less ungrammatical than control": n, "sentences": 24, "source": "App. C"}
            for k, n in AHER_GP_LOWER.items()]
    rows += [{"system": r.model, "GP rated less ungrammatical than control": r.n_gp_lower,
              "sentences": r.n_sentences, "source": "this run"} for r in pub.itertuples()]
    out.append(block("Garden path vs control, Christianson et al. (2001) sentences", table(pd.DataFrame(rows)),
                     "People find garden-path sentences harder to parse; a faithful simulation rates the garden-path "
                     "version more ungrammatical than its comma control for (nearly) every sentence."))
    return out


def _wisdom(run: Run) -> list[str]:
    from .collect.studies.wisdom import paper_lm_reference, questions

    t = run.analysis.tables
    v = t["validity"]
    val = v.loc[v["condition"] == "all", "validity"]
    out = [_validity_vs_table1("wisdom", float(val.mean()) if len(val) else None, _spec(run))]
    q = questions().set_index("item")
    lm = paper_lm_reference()
    pq = t["per_question"]

    def cell(med, iqr):
        return "–" if med is None or pd.isna(med) else f"{fmt(med)} ({fmt(iqr)})"

    rows = []
    for item, r in q.iterrows():
        row = {"question": item.replace("wisdom-", "Q"), "truth": fmt(r["truth"]),
               "human (Moussaïd et al.)": cell(r["human_median"], r["human_iqr"])}
        for _, x in lm[lm["item"] == item].iterrows():
            row[x["model"]] = cell(x["median"], x["iqr"])
        for m, g in pq[pq["item"] == item].groupby("model"):
            row[f"this run: {m}"] = cell(g["median"].iat[0], g["iqr"].iat[0])
        rows.append(row)
    out.append(block("Table 2 layout: median (IQR) of the estimates", table(pd.DataFrame(rows)),
                     "Q01-Q05 from Moussaïd et al. (2013), with human medians and IQRs; Q06-Q10 written by the "
                     "authors. LM-1..LM-6 as printed in Table 2. An IQR of 0 with the true median is the paper's "
                     "hyper-accuracy distortion."))
    return out


def _milgram(run: Run) -> list[str]:
    from .collect.human.milgram1963 import load_milgram1963, paper_lm5

    t = run.analysis.tables
    ob = t["obedience"]
    scen = "milgram_classic" if run.manifest.get("study") == "milgram" else "milgram_novel"
    lm5 = paper_lm5(scen)
    human = load_milgram1963()
    rows = [{"system": "Milgram (1963) Exp. 1, people", "n": len(human),
             "% obedient (completed all 30)": 100 * float((human["breakoff_level"] == 30).mean()),
             "median break-off": float(human["breakoff_level"].median())},
            {"system": f"LM-5 (paper, Figure {'21' if scen == 'milgram_classic' else '29'})", "n": int(lm5["count"].sum()),
             "% obedient (completed all 30)": 100 * lm5.loc[lm5["level"] == 30, "count"].sum() / lm5["count"].sum(),
             "median break-off": float(np.median(np.repeat(lm5["level"], lm5["count"])))}]
    for r in _model_rows(ob.rename(columns={"model": "system"}).assign(source="model")).itertuples():
        if r.system == "milgram1963":
            continue
        rows.append({"system": f"this run: {r.system}", "n": r.n, "% obedient (completed all 30)": r.percent_obedient,
                     "median break-off": r.median_breakoff})
    note = ("Break-off = the last level whose punishment the subject administered (30 = completed). "
            + ("" if scen == "milgram_classic" else "The human row is Milgram's classic experiment, as in Figure 29."))
    return [block("Obedience beside Milgram (1963) and the paper's LM-5", table(pd.DataFrame(rows)), note)]


def _survey_bias(run: Run) -> list[str]:
    t = run.analysis.tables
    mine = t["table4"]
    human = pd.DataFrame([{"bias": b, "Δb (people, survey literature)": "> 0, significant",
                           "Δp key typo / middle random / letter swap (people)": "≈ 0, not significant"}
                          for b in BIAS_NAMES.values()])
    pub = table4_published()
    order = {b: i for i, b in enumerate(BIAS_NAMES.values())}
    side = []
    for bias in sorted(set(mine["bias"]), key=lambda b: order.get(b, 99)):
        for r in mine[mine["bias"] == bias].itertuples():
            side.append({"bias": bias, "system": f"this run: {r.model}", "Δb": r.delta_b, "p": r.p_bias,
                         "Δp key typo": r.delta_p_key_typo, "Δp middle random": r.delta_p_middle_random,
                         "Δp letter swap": r.delta_p_letter_swap, "r (uncertainty, |Δb|)": r.pearson_r})
        for model in ("Llama2 7b", "Llama2 70b", "GPT 3.5 Turbo"):
            p = pub[(pub["model"] == model) & (pub["bias"] == bias)]
            for r in p.itertuples():
                side.append({"bias": bias, "system": f"paper: {model}", "Δb": r.delta_b, "p": r.p_bias,
                             "Δp key typo": r.delta_p_key_typo, "Δp middle random": r.delta_p_middle_random,
                             "Δp letter swap": r.delta_p_letter_swap, "r (uncertainty, |Δb|)": r.pearson_r})
    return [
        block("What people do (the paper's reference pattern)", table(human),
              "Tjuatja et al. §2.3/§3.1: a human-like respondent shows a significant positive Δb for each bias and no "
              "significant change under the non-bias perturbations (Figure 2, 'most human-like')."),
        block("Table 4 layout: this run beside three of the paper's models", table(pd.DataFrame(side), max_rows=60),
              "Δ in percentage points; p of the one-sample t-test across questions; r = Pearson correlation of "
              "normalized entropy with |Δb|. Opinion-float Δp are the odd/even perturbation pairs, as in the paper."),
        "<details><summary>Published Table 4, all nine models</summary>" + table(pub, max_rows=60) + "</details>",
    ]


def _moca(run: Run) -> list[str]:
    t = run.analysis.tables
    t1 = t["table1"].rename(columns={"n": "stories"})
    both = pd.concat([NIE_TABLE1.assign(source="Nie et al. Table 1"),
                      t1.assign(source="bundled votes, stories in this run")], ignore_index=True)
    both = both[["source", "task", "stories", "Yes", "No", "ambiguous"]]
    out = [block("Table 1: human label classes", table(both),
                 "25 votes per story; Yes if P(Yes) > 0.6, No if < 0.4, else ambiguous. At scale < 1 the run uses "
                 "the first stories of each task, so its counts are those of the subset.")]
    a = t["amce"]
    method = next((m for m in ("bootstrap-story", "ols-cluster", "difference-in-means") if (a["method"] == m).any()),
                  a["method"].iloc[0] if len(a) else None)
    g = a[a["method"] == method]
    rows = {}
    for r in g.itertuples():
        key = (r.task, r.term)
        who = "people (25 votes per story)" if r.source == "human" else f"this run: {r.model}"
        ci = "" if pd.isna(r.ci_low) else f" [{fmt(r.ci_low)}, {fmt(r.ci_high)}]"
        rows.setdefault(key, {"task": r.task, "contrast": r.term})[who] = f"{fmt(r.estimate)}{ci}"
    out.append(block(f"AMCE per factor: people beside the model ({method}, 95% interval)",
                     table(pd.DataFrame(list(rows.values())), max_rows=60),
                     "Change in P(Yes) when the first attribute replaces the second (Nie et al. §3, radar charts "
                     "Figures 2-3); an interval crossing 0 is inconclusive."))
    from .analyze.ppi_moca import report_blocks

    return out + report_blocks(t, block, table, fmt)


SECTIONS: dict[str, Callable[[Run], list[str]]] = {
    "ultimatum": _ultimatum, "garden_path": _garden_path, "wisdom": _wisdom, "milgram": _milgram,
    "milgram_novel": _milgram, "survey_bias": _survey_bias, "moca": _moca,
    "opinion_survey": lambda run: _opinion_survey(run),
}


def _opinion_survey(run: Run) -> list[str]:
    from .analyze.opinion import report_section  # the study keeps its report pieces beside its analysis

    return report_section(run)


def section(run: Run) -> str:
    m = run.manifest
    study = m.get("study", run.entry.get("study", "?"))
    title = STUDY_TITLES.get(study) or _study_help(study) or study
    c = m.get("counts", {})
    facts = {
        "folder": run.rel + "/", "model": m.get("model", {}).get("spec"), "method": m.get("parameters", {}).get("method"),
        "parameters": ", ".join(f"{k}={v}" for k, v in m.get("parameters", {}).items()
                                if k not in ("method", "n", "chat_template") and v not in (None, "")),
        "trials answered": (f"{c.get('answered', '–')} of {c.get('trials', '–')}" if m.get("status") == "complete"
                            else "– (the collection did not finish)"),
        "mean validity": fmt(c.get("mean_validity")),
        "collection time": f"{fmt(m.get('timings', {}).get('collection_seconds'))} s",
        "failures": len(m.get("failures", [])),
    }
    if m.get("short"):  # sampled trials that stopped at the draw budget with fewer valid answers
        facts["short of --n valid answers"] = len(m["short"])
    parts = [f'<section id="{html.escape(study)}"><h2>{html.escape(title)}</h2>',
             '<dl class="facts">' + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>"
                                            for k, v in facts.items()) + "</dl>"]
    if run.entry.get("error") and not run.error:
        parts.append(f'<p class="error">Not everything was written: {html.escape(run.entry["error"])}</p>')
    if run.error or run.analysis is None:
        parts.append(f'<p class="error">No analysis: {html.escape(run.error or "not analyzed")}</p></section>')
        return "".join(parts)
    a = run.analysis
    extra = SECTIONS.get(study)
    if extra is not None:
        try:
            refs = extra(run)
        except Exception as e:  # noqa: BLE001 - a reference table must not hide the run's own results
            refs = [f'<p class="error">reference tables failed: {html.escape(type(e).__name__)}: {html.escape(str(e))}</p>']
        parts.append('<div class="refs"><h3>Beside people and the paper</h3>' + "".join(refs) + "</div>")
    if a.figures:
        parts.append("<h3>Figures</h3>" + "".join(figure(p) for p in a.figures if Path(p).is_file()))
    parts.append("<h3>This run's analysis</h3>")
    names = {id(df): name for name, df in a.tables.items()}
    for name, df in a.shown.items():
        csv = f"{run.rel}/analysis/{names[id(df)]}.csv" if id(df) in names else None
        parts.append(block(name, table(df, csv=csv)))
    listing = ", ".join(f'<a href="{html.escape(run.rel)}/analysis/{html.escape(k)}.csv">{html.escape(k)}</a>'
                        for k in a.tables)
    parts.append(f'<p class="note">All tables as CSV: {listing}.</p></section>')
    return "".join(parts)


def _study_help(study: str) -> str:
    try:
        from .collect.studies.registry import get_study

        return get_study(study).help.split(":")[0]
    except Exception:  # noqa: BLE001 - a title is cosmetic
        return ""


# ---------------------------------------------------------------- finding runs

def find_runs(path: Path) -> tuple[dict | None, list[Run]]:
    """(replicate manifest or None, the complete study runs under `path`)."""
    from .replicate import KIND

    mpath = path / "manifest.json"
    top = _read_json(mpath) if mpath.is_file() else None
    if mpath.exists() and not isinstance(top, dict):
        raise UserError(f"{mpath}: not a JSON object; is this a folder written by simsubjects?")
    if top is not None:
        check_manifest(top, mpath)
    if top is not None and top.get("kind") == KIND:
        runs = []
        for e in top.get("studies", []):
            folder = path / e.get("folder", e["study"])
            man = _read_json(folder / "manifest.json") if (folder / "manifest.json").is_file() else None
            try:
                man = check_manifest(man, folder / "manifest.json") if isinstance(man, dict) else None
            except UserError as bad:  # shown in this study's section; the others still render
                e = {**e, "error": str(bad)}
                man = None
            if man is None or man.get("status") != "complete":
                runs.append(Run(folder, e.get("folder", e["study"]), man or {"study": e["study"]}, e,
                                error=e.get("error") or "the collection did not finish"))
            else:
                runs.append(Run(folder, e.get("folder", e["study"]), man, e))
        return top, runs
    if top is not None and top.get("study"):
        from .collect.store import load_run

        load_run(path)  # a single run that is unfinished, damaged or mistyped is an error, not a page
        return None, [Run(path, ".", top)]
    runs = []
    for sub in sorted(p for p in path.iterdir() if p.is_dir()) if path.is_dir() else []:
        man = _read_json(sub / "manifest.json") if (sub / "manifest.json").is_file() else None
        try:
            man = check_manifest(man, sub / "manifest.json") if isinstance(man, dict) else None
        except UserError:
            man = None  # not listed, like any folder that holds no finished run
        if man and isinstance(man.get("study"), str) and man.get("status") == "complete":
            runs.append(Run(sub, sub.name, man))
    if not runs:
        raise UserError(f"{path}: no run folder here (no manifest.json of a finished `simsubjects collect` or "
                        "`simsubjects replicate`)")
    return None, runs


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def collect_command(man: dict, folder: str) -> str:
    """An equivalent `simsubjects collect` command for a single run folder."""
    study = man.get("study", "?")
    params = dict(man.get("parameters", {}))
    args = ["simsubjects", "collect", study.replace("_", "-"), "--model", man.get("model", {}).get("spec", "?")]
    studyfile = params.pop("studyfile", None)
    if isinstance(studyfile, dict) and studyfile.get("file"):  # a study file: its copy in the run folder
        args[2] = f"{folder}/{studyfile['file']}"
        args += ["--judge-model", params["judge_model"]] if params.get("judge_model") else []
    try:
        from .collect.studies.registry import get_study

        options = get_study(study).options
    except Exception:  # noqa: BLE001 - an unregistered study still gets its parameters listed
        options = []
    for o in options:
        flag = o.flags[0]
        key = flag.lstrip("-").replace("-", "_")
        if key in params and params[key] not in (None, o.kwargs.get("default")):
            args += [flag] if o.kwargs.get("is_flag") else [flag, str(params[key])]
    if params.get("method") and params["method"] not in ("exact", "generated"):
        args += ["--method", params["method"]] + (["--n", str(params["n"])] if params.get("n") else [])
    if params.get("seed"):
        args += ["--seed", str(params["seed"])]
    if params.get("chat_template"):
        args.append("--chat-template")
    return shlex.join(args + ["--out", folder])


# ---------------------------------------------------------------- the page

CSS = """
body{font:15px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1d1d1f;margin:0;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:24px 28px 60px;background:#fff}
h1{font-size:26px;margin:0 0 4px}h2{font-size:21px;margin:34px 0 8px;padding-top:14px;border-top:3px solid #2f5d8a}
h3{font-size:17px;margin:22px 0 6px;color:#2f5d8a}h4{font-size:14px;margin:14px 0 4px}
.paper{margin-top:40px;padding:10px 14px;background:#eef3f8;border-left:5px solid #2f5d8a}
.paper h2{border:0;margin:0;padding:0}.sub{color:#555;margin:0 0 14px}
.tw{overflow-x:auto;margin:4px 0 10px}table{border-collapse:collapse;font-size:12.5px}
th,td{border:1px solid #d5d9de;padding:3px 7px;text-align:left;white-space:nowrap}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f0f2f5;text-align:center}
tbody tr:nth-child(even){background:#fafbfc}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:13px;margin:6px 0}
dl.facts dt{color:#555}dl.facts dd{margin:0;font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all}
.refs{background:#fbfaf4;border:1px solid #e8e2c8;padding:4px 14px 8px;margin:10px 0}
figure{margin:10px 0;display:inline-block;max-width:100%;vertical-align:top}
figure img{max-width:100%;max-height:560px;border:1px solid #ddd}figcaption{font-size:12px;color:#666}
pre{background:#f3f4f6;padding:10px 12px;overflow-x:auto;font-size:12.5px;white-space:pre-wrap}
.note{font-size:12.5px;color:#555;margin:2px 0 6px}.error{color:#a40000;font-weight:600}
details{margin:6px 0 10px}summary{cursor:pointer;color:#2f5d8a}nav ul{columns:2;font-size:14px}
"""


def _analyze(run: Run, analyses: dict | None) -> None:
    from .analyze.run import analyze_runs

    if run.error:
        return
    key = run.entry.get("study") or run.manifest.get("study")
    if analyses and key in analyses:
        run.analysis = analyses[key]
        return
    try:
        run.analysis = analyze_runs([run.folder])
    except Exception as e:  # noqa: BLE001 - the report still shows the other studies
        if run.rel == ".":  # a report of one run has no other studies: its failure is the command's
            raise
        run.error = f"{type(e).__name__}: {e}"


def render_report(path, analyses: dict | None = None, out=None) -> Path:
    """Write the HTML report of a run folder or a replicate folder; returns its path.

    `analyses`: {study: Analysis} already computed (replicate passes its own); other runs are analyzed here.
    """
    path = Path(path)
    if not path.is_dir():
        raise UserError(f"{path}: no such folder")
    target = Path(out) if out else path / "report.html"
    what = "--out" if out else "report"
    check_target_file(target, what)
    top, runs = find_runs(path)
    for run in runs:
        _analyze(run, analyses)
    page = _page(path, top, runs)
    for stale in target.parent.glob(f".{target.name}.*.tmp"):  # left by a report killed while writing
        stale.unlink(missing_ok=True)
    try:
        atomic_write_bytes(target, page.encode("utf-8"))
    except OSError as e:
        raise write_error(e, what, target) from None
    return target


def check_target_file(target: Path, what: str) -> None:
    """The report's file: not a folder, and no file in the way of its folder."""
    if target.is_dir():
        raise UserError(f"{what} {target}: is a folder; give the HTML file's name")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{what} {target}: {parent} is a file, not a folder")
            break


def _page(path: Path, top: dict | None, runs: list[Run]) -> str:
    from .replicate import PAPERS

    first = next((r.manifest for r in runs if r.manifest.get("model")), {})
    model = (top or {}).get("model") or first.get("model", {})
    if top:
        papers = [PAPERS[k] for k in top.get("papers", []) if k in PAPERS]
        command = top.get("command", "")
        heading = "Replication: " + "; ".join(p.citation for p in papers)
        created = top.get("created", "")
    else:
        study_names = [r.manifest.get("study") for r in runs]
        papers = [p for p in PAPERS.values() if any(pl.study in study_names for pl in p.plans)]
        command = "\n".join(collect_command(r.manifest, r.rel if r.rel != "." else str(path)) for r in runs)
        heading = "Run report: " + ", ".join(STUDY_TITLES.get(s, s) for s in study_names)
        created = first.get("created", "")
    versions = (top or first).get("versions", {})
    meta = {
        "simsubjects": versions.get("simsubjects", __version__),
        "model": model.get("spec", "?"),
        "model revision": model.get("revision", "?"),
        "run finished": created,
        "report written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "scale": fmt(top.get("scale")) + " (1 = the paper's full design)" if top else "–",
        "seed": (top or first).get("seed", "–"),
        "software": ", ".join(f"{k} {v}" for k, v in versions.items() if k != "simsubjects"),
    }
    vrows = []
    for r in runs:
        c = r.manifest.get("counts", {}) if r.manifest.get("status") == "complete" else {}  # no stale counts
        study = r.manifest.get("study", r.entry.get("study"))
        ref = AHER_TABLE1.get(study, {})
        vrows.append({"study": study, "method": r.manifest.get("parameters", {}).get("method", "–"),
                      "trials": c.get("trials"), "answered": c.get("answered"),
                      "mean validity (%)": None if c.get("mean_validity") is None else round(100 * c["mean_validity"], 1),
                      **{f"paper {k} (%)": v for k, v in ref.items()},
                      "status": "complete" if not r.error else "no analysis"})
    vt = pd.DataFrame(vrows)
    repro = []
    if top:
        where = "" if " --out /" in command else f" from the folder that holds {path.name}/"
        repro += [f"# re-run{where}: it resumes from each study's request cache, so finished work is not redone",
                  command, "", f"cd {shlex.quote(str(path))}", "Rscript analysis.R        # R twins on export/*.rds -> r_results/",
                  "simsubjects report .      # re-render this report"]
    else:
        repro += ["# the run's parameters, seed and model revision are in manifest.json", command, "",
                  f"simsubjects analyze {path}", f"simsubjects export {path} --to rds,dta", f"simsubjects report {path}"]
    nav = "".join(f'<li><a href="#{html.escape(r.manifest.get("study", ""))}">'
                  f'{html.escape(STUDY_TITLES.get(r.manifest.get("study", ""), r.manifest.get("study", "")))}</a></li>'
                  for r in runs)
    body = [
        f"<h1>{html.escape(heading)}</h1>",
        f'<p class="sub">Language-model participants beside people, written by simsubjects {html.escape(meta["simsubjects"])}'
        f" from {html.escape(str(path))}.</p>",
        '<dl class="facts">' + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>"
                                       for k, v in meta.items()) + "</dl>",
        "<h3>Validity rates</h3>",
        table(vt),
        '<p class="note">Validity: the probability mass (k-choice, exact) or share of samples (sampled, free text) on '
        "valid answers; the paper's columns are Aher et al. (2023) Table 1 where it applies. A low rate means the "
        "prompt does not elicit the answer format from this model, and its results should not be read.</p>",
        "<h3>How to reproduce</h3>", pre("\n".join(repro)),
        f"<nav><h3>Studies</h3><ul>{nav}</ul></nav>",
    ]
    by_paper: dict[str, list[Run]] = {}
    for r in runs:
        key = r.entry.get("paper") or next((p.key for p in PAPERS.values()
                                             if any(pl.study == r.manifest.get("study") for pl in p.plans)), "")
        by_paper.setdefault(key, []).append(r)
    for key, group in by_paper.items():
        p = PAPERS.get(key)
        if p is not None and (top or len(by_paper) > 1):
            body.append(f'<div class="paper"><h2>{html.escape(p.citation)}</h2>'
                        f'<p class="sub">{html.escape(p.title)}. {html.escape(p.note)}</p></div>')
        body += [section(r) for r in group]
    title = html.escape(heading)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>'
            f"<body><main>{''.join(body)}</main></body></html>\n")
