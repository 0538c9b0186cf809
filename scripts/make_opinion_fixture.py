"""Write the bundled synthetic ATP-style survey (simsubjects/datasets/opinion_survey) in BOTH OpinionQA formats.

The counts are synthetic (seeded): every respondent of responses.csv is counted once in the
per-group count files, so the wave-folder reader and the `<ATTRIBUTE>_data.json` reader must give
identical distributions. Re-run to regenerate: python scripts/make_opinion_fixture.py
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parents[1] / "simsubjects" / "datasets" / "opinion_survey"
WAVE = OUT / "American_Trends_Panel_W99"
# (key, question, ordinal option texts, ordinal values, extra non-ordinal options, lean: + = Republican-leaning first option)
QUESTIONS = [
    ("GOVSIZE_W99", "If you had to choose, would you rather have a smaller government providing fewer services, or a bigger government providing more services?",
     ["Smaller government, fewer services", "Bigger government, more services"], [1.0, 2.0], [], 1.6),
    ("ECON1_W99", "Thinking about the nation's economy, how would you rate economic conditions in this country today?",
     ["Excellent", "Good", "Only fair", "Poor"], [1.0, 2.0, 3.0, 4.0], [], 0.8),
    ("CLIM1_W99", "How much, if at all, do you think human activity contributes to global climate change?",
     ["A great deal", "Some", "Not too much", "Not at all"], [1.0, 2.0, 3.0, 4.0], [], -1.5),
    ("GUN1_W99", "Do you think gun laws in this country should be more strict, less strict, or kept as they are now?",
     ["More strict", "Kept as they are now", "Less strict"], [1.0, 2.0, 3.0], [], -1.4),
    ("IMMIG1_W99", "Do you think legal immigration into the United States should be increased, kept at its present level, or decreased?",
     ["Increased", "Kept at its present level", "Decreased"], [1.0, 2.0, 3.0], [], -1.0),
    ("HEALTH1_W99", "Do you think it is the responsibility of the federal government to make sure all Americans have health care coverage?",
     ["Yes, it is the responsibility", "No, it is not the responsibility"], [1.0, 2.0], [], -1.5),
    ("TRUST1_W99", "How much of the time do you think you can trust the federal government to do what is right?",
     ["Just about always", "Most of the time", "Only some of the time", "Never"], [1.0, 2.0, 3.0, 4.0], [], -0.3),
    ("MEDIA1_W99", "How much do you trust the information you get from national news organizations?",
     ["A lot", "Some", "Not too much", "Not at all"], [1.0, 2.0, 3.0, 4.0], [], -1.2),
    ("TAX1_W99", "Do you think the amount large corporations pay in federal taxes is too much, about right, or too little?",
     ["Too much", "About right", "Too little"], [1.0, 2.0, 3.0], [], 0.9),
    ("MIN1_W99", "Would you favor or oppose raising the federal minimum wage to $15 an hour?",
     ["Strongly favor", "Somewhat favor", "Somewhat oppose", "Strongly oppose"], [1.0, 2.0, 3.0, 4.0], [], -1.3),
    ("ENERGY1_W99", "Which of these should be the more important priority for addressing America's energy supply?",
     ["Expand production of oil, coal and natural gas", "Develop wind, solar and other alternative energy",
      "Both equally"], [1.0, 2.0, 1.5], [], 1.3),
    ("SCI1_W99", "Overall, do you think science has made life easier or more difficult for most people?",
     ["Easier", "More difficult"], [1.0, 2.0], [], 0.2),
    ("AI1_W99", "Overall, would you say the increased use of artificial intelligence in daily life makes you feel",
     ["More excited than concerned", "More concerned than excited", "Equally excited and concerned"], [1.0, 2.0, 1.5], [], 0.1),
    ("MIL1_W99", "Should the United States increase, keep the same, or decrease spending on the military?",
     ["Increase", "Keep the same", "Decrease"], [1.0, 2.0, 3.0], [], 1.1),
    ("POLICE1_W99", "Would you say police departments around the country do an excellent, good, only fair or poor job of using the right amount of force?",
     ["Excellent", "Good", "Only fair", "Poor"], [1.0, 2.0, 3.0, 4.0], [], 1.2),
    ("RELIG1_W99", "How important is religion in your life?",
     ["Very important", "Somewhat important", "Not too important", "Not at all important"], [1.0, 2.0, 3.0, 4.0], [], 1.0),
    ("TRADE1_W99", "In general, do you think free trade agreements have been a good thing or a bad thing for the United States?",
     ["A good thing", "A bad thing"], [1.0, 2.0], ["Not sure"], -0.4),
    ("FUTURE1_W99", "Thinking about the future of the country, are you generally optimistic or pessimistic?",
     ["Very optimistic", "Somewhat optimistic", "Somewhat pessimistic", "Very pessimistic"], [1.0, 2.0, 3.0, 4.0], [], 0.0),
    ("DIVERS1_W99", "Overall, would you say having an increasing number of people of many different races, ethnic groups and nationalities in the U.S. makes this country",
     ["A better place to live", "A worse place to live", "Doesn't make much difference"], [1.0, 2.0, 1.5], [], -0.9),
    ("SOCMED1_W99", "Overall, what effect do you think social media have on the way things are going in the country today?",
     ["Mostly positive", "Mostly negative", "Neither positive nor negative"], [1.0, 2.0, 1.5], [], 0.1),
]
PARTY_N = {"Democrat": 130, "Republican": 110, "Independent": 90, "Refused": 6}
LEAN = {"Democrat": -1.0, "Republican": 1.0, "Independent": 0.0, "Refused": 0.0}


def answer_probs(n_opts: int, lean: float, party: str, rng) -> np.ndarray:
    """A smooth distribution over the ordinal options, tilted toward option 1 by party x question lean."""
    pos = np.arange(n_opts) - (n_opts - 1) / 2
    tilt = -lean * LEAN[party] * 1.1
    logits = tilt * pos + rng.normal(0, 0.35, n_opts)
    p = np.exp(logits)
    return p / p.sum()


def released_mc_options(refs: list[str]) -> list[str]:
    """MC_options as the released count files write them: an option with a comma is split at it, and
    one with an apostrophe is wrapped in double quotes (e.g. "Yes", "likely" for "Yes, likely" in W27)."""
    out = []
    for r in refs:
        parts = [x.strip() for x in r.split(",")]
        out += [f'"{x}"' if "'" in x else x for x in parts]
    return out


def main() -> None:
    rng = np.random.default_rng(20231)
    WAVE.mkdir(parents=True, exist_ok=True)
    rows = []
    for party, n in PARTY_N.items():
        sex = rng.choice(["Male", "Female"], size=n)
        for i in range(n):
            rows.append({"POLPARTY": party, "SEX": str(sex[i])})
    resp = pd.DataFrame(rows)
    for key, _, opts, ordinal, extra, lean in QUESTIONS:
        col = np.empty(len(resp), dtype=object)
        for party in PARTY_N:
            idx = np.flatnonzero(resp["POLPARTY"].to_numpy() == party)
            p = answer_probs(len(opts), lean, party, rng)
            refs = [*opts, *extra, "Refused"]
            full = np.concatenate([p * 0.95, np.full(len(extra), 0.035), [0.015 if not extra else 0.015]])
            full = full / full.sum()
            col[idx] = rng.choice(refs, size=len(idx), p=full)
        rng.shuffle(col[:0])  # order within a group is already random
        col[rng.random(len(col)) < 0.03] = None  # a few respondents were not asked (form split)
        resp[key] = col
    resp["WEIGHT_W99"] = 1.0
    resp = resp[[k for k, *_ in QUESTIONS] + ["POLPARTY", "SEX", "WEIGHT_W99"]]
    resp.to_csv(WAVE / "responses.csv", index=False)

    info = []
    for i, (key, q, opts, ordinal, extra, _) in enumerate(QUESTIONS):
        refs = [*opts, *extra, "Refused"]
        codes = [float(j + 1) for j in range(len(opts) + len(extra))] + [99.0]
        info.append({"": i, "Unnamed: 0.1": i, "Unnamed: 0": i, "key": key,
                     "option_mapping": repr(dict(zip(codes, refs))), "question": q,
                     "references": repr(refs), "option_ordinal": repr(ordinal)})
    pd.DataFrame(info).to_csv(WAVE / "info.csv", index=False)
    pd.DataFrame({"": [0, 1], "key": ["POLPARTY", "SEX"],
                  "options": [repr(["Republican", "Democrat", "Independent"]), repr(["Male", "Female"])]}
                 ).to_csv(WAVE / "metadata.csv", index=False)

    for attr in ("POLPARTY", "SEX"):
        out = {}
        for key, q, opts, ordinal, extra, _ in QUESTIONS:
            entry = {"MC_options": released_mc_options([*opts, *extra, "Refused"]), "question_text": q}
            asked = resp[resp[key].notna()]
            for group, g in sorted(asked.groupby(attr), key=lambda x: x[0]):
                counts = g[key].value_counts()
                entry[group] = {k: float(counts[k]) for k in sorted(counts.index)}
            out[key] = entry
        (WAVE / f"{attr}_data.json").write_text(json.dumps(out), encoding="utf-8")

    # respondents to draw personas from: demographics + a survey weight (synthetic)
    people = []
    ages = ["18-29", "30-49", "50-64", "65+"]
    educ = ["High school graduate", "Some college, no degree", "College graduate/some postgrad", "Postgraduate"]
    regions = ["Northeast", "Midwest", "South", "West"]
    for i in range(60):
        party = ["Democrat", "Republican", "Independent"][i % 3]
        people.append({"respondent": f"R{i + 1:03d}", "POLPARTY": party, "SEX": ["Male", "Female"][(i // 3) % 2],
                       "AGE": ages[int(rng.integers(4))], "EDUCATION": educ[int(rng.integers(4))],
                       "CREGION": regions[int(rng.integers(4))], "WEIGHT": round(float(rng.uniform(0.4, 2.2)), 4)})
    pd.DataFrame(people).to_csv(OUT / "respondents.csv", index=False)


if __name__ == "__main__":
    main()
