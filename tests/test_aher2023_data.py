"""Integrity checks for the Aher, Arriaga & Kalai (2023) stimuli and reference tables.

The files live in simsubjects/datasets/aher2023 and are transcribed from the paper; see SOURCE.md there.
"""

import importlib.resources
import json
import re
from string import Template

import pytest

DATA = importlib.resources.files("simsubjects.datasets") / "aher2023"

GROUPS = [
    "American Indian and Alaska Native",
    "Asian and Native Hawaiian and Other Pacific Islander",
    "Black or African American",
    "Hispanic or Latino",
    "White",
]


def load(name):
    if name.endswith(".yaml"):  # a Milgram study file: the scenario is its obedience: section
        import yaml

        return yaml.safe_load((DATA / name).read_text(encoding="utf-8"))["obedience"]
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def placeholders(template):
    """Named placeholders of a string.Template ($$ is a literal dollar sign)."""
    names = set()
    for m in Template.pattern.finditer(template):
        if m.group("invalid") is not None:
            raise AssertionError(f"invalid placeholder in {template!r}")
        name = m.group("named") or m.group("braced")
        if name:
            names.add(name)
    return names


# --------------------------------------------------------------------------- names


def test_names_five_groups_of_100_distinct():
    groups = load("names.json")["groups"]
    assert list(groups) == GROUPS
    for g in GROUPS:
        assert len(groups[g]) == 100, g
        assert len(set(groups[g])) == 100, g
        assert all(re.fullmatch(r"[A-Z][a-z]+", n) for n in groups[g]), g
    allnames = [n for g in GROUPS for n in groups[g]]
    assert len(set(allnames)) == 500


def test_names_known_positions():
    groups = load("names.json")["groups"]
    assert groups["American Indian and Alaska Native"][0] == "Begay"
    assert groups["American Indian and Alaska Native"][-1] == "Littlewhiteman"
    assert groups["White"][:3] == ["Olson", "Snyder", "Wagner"]
    assert groups["Hispanic or Latino"][4] == "Lopez"
    assert groups["Asian and Native Hawaiian and Other Pacific Islander"][3] == "Tran"


# --------------------------------------------------------------------------- garden path


def test_garden_path_counts_and_types():
    rows = load("garden_path.json")
    assert len(rows) == 48
    for setname in ("published", "novel"):
        sub = [r for r in rows if r["set"] == setname]
        assert [r["id"] for r in sub] == [f"{setname}-{i:02d}" for i in range(1, 25)]
        assert [r["type"] for r in sub] == ["OT"] * 12 + ["RAT"] * 12
    assert len({r["garden_path"] for r in rows}) == 48
    assert len({r["control"] for r in rows}) == 48


def test_control_minus_comma_is_garden_path():
    for r in load("garden_path.json"):
        assert r["control"].count(",") == 1, r["id"]
        assert "," not in r["garden_path"], r["id"]
        assert r["control"].replace(",", "", 1) == r["garden_path"], r["id"]
        assert r["garden_path"].endswith("."), r["id"]
        assert "  " not in r["control"] and "- " not in r["control"], r["id"]


def test_garden_path_figure_1_example():
    rows = {r["id"]: r for r in load("garden_path.json")}
    assert rows["published-05"]["garden_path"] == (
        "While the student read the notes that were long and boring blew off the desk."
    )
    assert rows["published-05"]["control"] == (
        "While the student read, the notes that were long and boring blew off the desk."
    )


# --------------------------------------------------------------------------- wisdom of crowds


def test_wisdom_questions():
    rows = load("wisdom.json")
    assert len(rows) == 10
    assert [r["source"] for r in rows] == ["moussaid2013"] * 5 + ["novel"] * 5
    for r in rows:
        assert type(r["truth"]) is int
        assert sorted(r["lm"]) == [f"LM-{k}" for k in range(1, 7)]
        for v in r["lm"].values():
            assert type(v["median"]) is int and type(v["iqr"]) is int
    for r in rows[:5]:
        assert type(r["human_median"]) is int and type(r["human_iqr"]) is int
    for r in rows[5:]:
        assert r["human_median"] is None and r["human_iqr"] is None
    light = [r for r in rows if "speed of light" in r["question"]]
    assert len(light) == 1 and light[0]["truth"] == 299792458
    assert [light[0]["lm"][f"LM-{k}"]["median"] for k in (4, 5, 6)] == [299792458] * 3
    assert rows[0]["truth"] == 206 and rows[0]["human_median"] == 190


# --------------------------------------------------------------------------- Milgram


@pytest.mark.parametrize("name", ["milgram_classic.yaml", "milgram_novel.yaml"])
def test_milgram_structure(name):
    m = load(name)
    for key in ("name", "introduction", "stages", "judgments", "prods", "special_prods", "notes",
                "canned_texts", "record"):
        assert key in m, key
    stages = m["stages"]
    assert [s["level"] for s in stages] == list(range(1, 31))
    volts = [s["voltage"] for s in stages]
    assert all(a < b for a, b in zip(volts, volts[1:]))
    assert all(s["text"] for s in stages)
    # six "no punishment" steps (correct answer / drives safely), as in Figure 18
    assert [s["level"] for s in stages if s["no_punish_text"]] == [4, 6, 10, 13, 14, 16]
    assert len(m["prods"]) == 4
    assert len(m["special_prods"]) == 1
    sp = m["special_prods"][0]
    assert sp["stage_level"] == 21 and sp["when"] == "first disobedience"
    for j in ("termination", "obedience"):
        jd = m["judgments"][j]
        assert len(jd["completions"]) == 2 and jd["positive"] in jd["completions"]
        assert jd["scored_completion"] in jd["completions"]
        assert jd["template"].endswith("did")
        assert "$subject$action" in jd["template"]
    assert m["judgments"]["termination"]["positive"] == " stop"
    assert isinstance(m["notes"], list) and m["notes"]


def test_milgram_classic_values():
    m = load("milgram_classic.yaml")
    assert [s["voltage"] for s in m["stages"]] == list(range(15, 451, 15))
    assert m["stages"][0]["label"] == "slight shock"
    assert m["stages"][-1]["label"] == "XXX shock"
    assert m["special_prods"][0]["voltage"] == 315
    assert m["prods"][0] == 'The experimenter tells $subject, "please continue."'
    assert m["judgments"]["obedience"]["positive"] == " shock"
    assert m["stages"][20]["text"].endswith("starts pounding on the walls of his room.")
    n_steps = sum(1 + bool(s["no_punish_text"]) for s in m["stages"])
    assert n_steps == 36


def test_milgram_novel_values():
    m = load("milgram_novel.yaml")
    assert m["judgments"]["obedience"]["positive"] == " punish"
    assert m["stages"][0]["text"] == "The driver drives dangerously."
    assert m["stages"][3]["no_punish_text"] == "The driver drives safely."
    assert m["stages"][21]["text"].startswith("The driver still does not drive forward.")


@pytest.mark.parametrize(
    "name,required",
    [("milgram_classic.yaml", {"subject", "poss", "poss_obj"}), ("milgram_novel.yaml", {"subject", "poss"})],
)
def test_milgram_placeholders(name, required):
    m = load(name)
    assert placeholders(m["introduction"]) == required
    allowed = {"subject", "poss", "poss_obj", "action"}
    texts = [s["text"] for s in m["stages"]] + [s["no_punish_text"] for s in m["stages"] if s["no_punish_text"]]
    texts += m["prods"] + [p["text"] for p in m["special_prods"]] + list(m["canned_texts"].values())
    texts += [m["judgments"][j]["template"] for j in ("termination", "obedience")]
    for t in texts:
        assert placeholders(t) <= allowed, t
        assert "$subject" in t or t == "The experimenter ends the experiment." or t.startswith("The driver")
    # filling works and leaves no placeholder behind
    filled = Template(m["introduction"]).substitute(subject="Mr. Lopez", poss="his", poss_obj="him")
    assert "$" not in filled and filled.startswith("This document contains a record of Mr. Lopez's actions")


def test_milgram1963_breakoff():
    t = load("milgram1963_breakoff.json")
    assert t["n"] == 40
    assert t["completed"] == 26
    assert sum(b["count"] for b in t["breakoff"]) + t["completed"] == 40
    assert [b["voltage"] for b in t["breakoff"]] == [300, 315, 330, 345, 360, 375]
    assert all(b["voltage"] == 15 * b["level"] for b in t["breakoff"])
    assert round(100 * t["completed"] / t["n"], 1) == 65.0 == t["percent_obedient"]
    for key in ("lm5", "lm5_novel"):
        lm = t[key]
        assert sum(b["count"] for b in lm["breakoff"]) + lm["completed"] == lm["n"] == 100
        assert lm["completed"] == 75 and lm["percent_obedient"] == 75.0


# --------------------------------------------------------------------------- prompts


def test_prompts_fill_to_paper_figures():
    p = load("prompts.json")
    gp = Template(p["garden_path"]["template"]).substitute(
        name="Ms. Olson",
        sentence="While the student read the notes that were long and boring blew off the desk.",
    )
    assert gp.endswith("Answer: Ms. Olson indicated that the sentence was")
    assert p["garden_path"]["completions"] == [" grammatical", " ungrammatical"]
    ug = Template(p["ultimatum"]["template"]).substitute(
        responder="Ms. Huang", proposer="Mr. Wagner", proposer_self="himself", offer=4, keep=6
    )
    assert "Mr. Wagner is given $10." in ug
    assert "Mr. Wagner takes $6 for himself and offers Ms. Huang $4" in ug
    assert ug.endswith("Answer: Ms. Huang decides to")
    assert p["ultimatum"]["completions"] == [" accept", " reject"]
    w = Template(p["wisdom"]["template"]).substitute(
        name="Ms. Huang", question="How many bones does an adult human have?"
    )
    assert "Question (text): [How many bones does an adult human have?]" in w
    assert "$" not in gp + w
    assert re.findall(r"\$\S*", ug) == ["$10.", "$6", "$4"]


def test_wisdom_validity_rule():
    v = load("prompts.json")["wisdom"]["validity"]

    def parse(completion):
        if v["terminator"] not in completion:
            return None
        s = completion.split(v["terminator"], 1)[0]
        for ch in v["strip"]:
            s = s.replace(ch, "")
        return int(s) if re.fullmatch(v["regex"], s) else None

    assert parse("299,792,458]") == 299792458
    assert parse(" 206]") == 206
    assert parse("about 200]") is None
    assert parse("206") is None
