"""Write the runnable finding files of simsubjects/bench/corpora/ from the shared raw files.

The wording of each finding is copied by this script, not retyped: from the HumanStudy-Bench materials
JSON and the Many Labs 1 codebook (read here), and from the Many Labs 2 registered protocol (quoted below
as the protocol prints it, section named in each file's first line). The numbers are NOT written: each
file names a reader key (simsubjects/datasets/replications/readers.py). The committed YAML files are
what the package ships; rerun this only to regenerate them (the not_runnable.yaml files are written by
hand).

    python scripts/bundle_bench_findings.py simsubjects/bench/corpora [PATH/TO/shared/data/replications]
"""
import json
import re
import sys
from pathlib import Path

import yaml

OUT = Path(sys.argv[1])
SH = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parents[2] / "shared/data/replications"
HSB = SH / "humanstudy-bench/studies"

def mat(study, name):
    return json.loads((HSB / study / "source/materials" / f"{name}.json").read_text())

def ml1(var):
    import csv
    for r in csv.reader(open(SH / "manylabs1/Codebook.csv")):
        if r[0] == var:
            return r[1]
    raise KeyError(var)

class Lit(str): pass
yaml.SafeDumper.add_representer(Lit, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|"))

PEOPLE = ["Alex Smith", "Maria Lopez", "James Johnson", "Aisha Khan", "Chen Wang", "Sofia Rossi", "David Cohen", "Fatima Ali"]
CHOICE_PROMPT = {"template": "${question}\n\n${options}", "answer_prefix": "\nAnswer:"}
PERSONA_PROMPT = {"template": "${persona} ${question}\n\n${options}", "answer_prefix": "\nAnswer:"}
EST_PROMPT = {"template": "${question}\nAnswer (a number): ["}

def est(maxv):
    return {"type": "estimate", "min": 0, "max": maxv, "terminator": "]", "max_tokens": 10}

def est_free(maxv):
    """An estimate answered after "Answer:" (no bracket): the first number in the generated text."""
    return {"type": "estimate", "min": 0, "max": maxv, "max_tokens": 8}


def pct_scale():
    """A share of peers as 11 options, 0% to 100% (positions = percent): scored exactly in one pass,
    where a generated number is rarely valid from a small model."""
    return {"type": "choice", "options": [{"label": str(v), "text": f"{v}%", "position": v} for v in range(0, 101, 10)]}


def choice(*opts):
    return {"type": "choice", "options": [{"label": l, "text": t} for l, t in opts]}

def scale(lo, hi, lo_text, hi_text):
    return {"type": "choice", "style": "words", "option_format": "${text}",
            "options": [{"label": str(v), "position": v,
                         "text": f"{v}" + (f" ({lo_text})" if v == lo and lo_text else f" ({hi_text})" if v == hi and hi_text else "")}
                        for v in range(lo, hi + 1)]}

def esc(t):
    return t.replace("$", "$$")  # study-file texts are templates: a dollar sign is $$


def esc_resp(r):
    if "type" not in r:
        return {k: {lv: esc_resp(v) for lv, v in by.items()} for k, by in r.items()}
    if r.get("options"):
        r = dict(r, options=[dict(o, text=esc(o["text"])) if "text" in o else o for o in r["options"]])
    return r


def binary(r):
    if "type" not in r:
        return all(binary(v) for by in r.values() for v in by.values())
    return r.get("type") == "choice" and len(r.get("options", [])) == 2


def esc_item(it):
    it = dict(it)
    t = it["text"]
    it["text"] = esc(t) if isinstance(t, str) else {k: {lv: esc(v) for lv, v in by.items()} for k, by in t.items()}
    return it


def write(corpus, fid, *, study, title, citation, license, wording, factor=None, levels=None, items, finding,
          prompt=CHOICE_PROMPT, subjects=None, analyses=None, people=False, seed=1,
          numbers="The numbers of `original`/`replication` are read from simsubjects/datasets/replications/ by key"):
    d = {"study": study, "title": title, "citation": citation, "license": license}
    design = {}
    if factor:
        design["factors"] = {factor: {"assignment": "between", "levels": levels}}
    if people:
        design["subjects"] = {"table": "people.csv", "id": "name", "template": "My name is ${name}."}
    else:
        design["subjects"] = subjects or (len(levels) if levels else 1)
    design["seed"] = seed
    d["design"] = design
    d["items"] = [esc_item(it) for it in items]
    if all(binary(it["response"]) for it in items):
        d["option_order"] = {"mode": "averaged"}  # both orders of two options: no first-option bias in the effect
    d["prompt"] = prompt
    if analyses:
        d["analyses"] = analyses
    d["finding"] = finding
    folder = OUT / corpus / fid.split(".", 1)[1]
    folder.mkdir(parents=True, exist_ok=True)
    head = (f"# A finding of `simsubjects bench` (docs/bench.md). Wording: {wording}\n"
            f"# {numbers}.\n"
            f"#   simsubjects study check THIS.yaml\n")
    (folder / "study.yaml").write_text(head + yaml.safe_dump(d, sort_keys=False, width=110, allow_unicode=True))
    if people:
        (folder / "people.csv").write_text("name\n" + "\n".join(PEOPLE) + "\n")

def fnd(fid, title, corpus, citation, year, domain, hyp, estimator, test, original, replication=None):
    f = {"id": fid, "title": title, "corpus": corpus, "citation": citation, "year": year, "domain": domain,
         "hypothesis": hyp, "estimator": estimator, "test": test, "original": original}
    if replication:
        f["replication"] = replication
    return f

def between(outcome, factor, levels, measure, direction="positive"):
    return {"kind": "between", "outcome": outcome, "factor": factor, "levels": levels, "measure": measure,
            "direction": direction}

def item_by(iid, factor, texts, response):
    return [{"id": iid, "text": {factor: texts}, "response": response}]

# ------------------------------------------------------------------ Many Labs 2
ML2C = "Klein et al. (2018), Many Labs 2"
ML2L = "GPL-3.0 (Many Labs 2 registered protocol; datasets/replications/manylabs2/SOURCE.md)"
PROT = "../shared/data/replications/manylabs2/ML2_PoPS_proposal.md"
def ml2(key, fid, title, cite, year, domain, *, factor, levels, texts, response, hyp, est_, test, prompt=CHOICE_PROMPT, section, subjects=None):
    write("manylabs2", fid, study=fid.replace(".", "-").replace("_", "-"), title=title,
          citation=f"{cite}; replicated in {ML2C}", license=ML2L, wording=f"{PROT}, {section}, 'Materials and procedure'",
          factor=factor, levels=levels, items=item_by(hyp["outcome"], factor, texts, response),
          prompt=prompt, subjects=subjects,
          finding=fnd(fid, title, "manylabs2", f"{cite}; replicated in {ML2C}", year, domain, hyp, est_, test,
                      {"from": "manylabs2", "key": key}, {"from": "manylabs2", "key": key}))

ml2("Rottenstreich.1", "ml2.rottenstreich1", "Affect and risk: the affect-rich option is preferred more under a 1% chance",
    "Rottenstreich & Hsee (2001), Study 1", 2001, "judgment", section="§5 Rottenstreich",
    factor="probability", levels=["low", "certain"],
    texts={"certain": "Imagine that you have the opportunity to either meet and kiss your favorite movie star or receive $50 in cash. Which would you choose?",
           "low": "Imagine that you have the opportunity to take part either in a lottery that offers a 1% chance to meet and kiss your favorite movie star or a lottery that offers a 1% chance to receive $50 in cash. Which would you choose?"},
    response=choice(("kiss", "Meet and kiss my favorite movie star"), ("cash", "$50 in cash")),
    hyp=between("choice", "probability", ["low", "certain"], {"option": "kiss"}), est_="log_odds_ratio", test="chi2")

PHONE = ("The Sony Ericsson {p} is an Android-powered smartphone with a 5.2\" Full HD resolution display. The {p} is designed to be lightweight and compact, and features the most up-to-date processor and battery components. Purchasing a {p} allows one to use Sony cloud storage app for a year for no additional charge. The Sony Ericsson {p} has also been made to be compatible with other Sony products, making transferring data from them to your Ericsson {p} as easy as a click of a button.\n"
         "The phone will be introduced in the U.S. and Europe. What percentage of the smartphones do you estimate will be sold in the U.S.?")
ml2("Critcher.1", "ml2.critcher1", "Incidental anchors: a P97 phone is expected to sell a larger share in the U.S. than a P17",
    "Critcher & Gilovich (2008), Study 2", 2008, "judgment", section="§9 Critcher (the estimate question follows the protocol's description)",
    factor="phone", levels=["p97", "p17"], texts={"p97": PHONE.format(p="P97"), "p17": PHONE.format(p="P17")},
    response=est(100), prompt=EST_PROMPT, subjects=4,
    hyp=between("share_us", "phone", ["p97", "p17"], {"mean": True}), est_="cohens_d", test="welch_t")

DENISE = "Denise is a passenger on a train whose driver has just shouted that the train's brakes have failed, and who then fainted of the shock. On the track ahead are five people; the banks are so steep that they will not be able to get off the track in time. The track has a side track leading off to the right, and Denise can turn the train onto it. Unfortunately there is one person on the right hand track. Denise can turn the train, killing the one; or she can refrain from turning the train, letting the five die.\nIs it morally permissible for Denise to switch the train to the side track?"
FRANK = "Frank is on a footbridge over the train tracks. He knows trains and can see that the one approaching the bridge is out of control. On the track under the bridge there are five people; the banks are so steep that they will not be able to get off the track in time. Frank knows that the only way to stop an out-of-control train is to drop a very heavy weight into its path. But the only available, sufficiently heavy weight is a large man wearing a backpack, also watching the train from the footbridge. Frank can shove the man with the backpack onto the track in the path of the train, killing him; or he can refrain from doing this, letting the five die.\nIs it morally permissible for Frank to shove the man?"
YESNO = choice(("yes", "Yes"), ("no", "No"))
ml2("Hauser.1", "ml2.hauser1", "Trolley dilemma: a foreseen side effect is judged more permissible than harm as a means (Denise vs Frank)",
    "Hauser, Cushman, Young, Kang-Xing & Mikhail (2007), Scenarios 1+2", 2007, "moral", section="§11 Hauser",
    factor="scenario", levels=["side_effect", "means"], texts={"side_effect": DENISE, "means": FRANK}, response=YESNO,
    hyp=between("permissible", "scenario", ["side_effect", "means"], {"option": "yes"}), est_="log_odds_ratio", test="chi2")

NED = "Ned is taking his daily walks near the train tracks when he notices that the train that is approaching is out of control. Ned sees what has happened: the driver of the train saw five men walking across the tracks and slammed on the brakes, but the brakes failed and they will not be able to get off the tracks in time. Fortunately, Ned is standing next to a switch, which he can throw, that will temporarily turn the train onto a side track. There is a heavy object on the side track. If the train hits the object, the object will slow the train down, thereby giving the men time to escape. Unfortunately, the heavy object is a man, standing on the side track with his back turned. Ned can throw the switch, preventing the train from killing the men, but killing the man. Or he can refrain from doing this, letting the five die.\nIs it morally permissible for Ned to throw the switch?"
OSCAR = "Oscar is taking his daily walk near the train tracks when he notices that the train that is approaching is out of control. Oscar sees what has happened: the driver of the train saw five men walking across the tracks and slammed on the brakes, but the brakes failed and the driver fainted. The train is now rushing toward the five men. It is moving so fast that they will not be able to get off the track in time. Fortunately, Oscar is standing next to a switch, which he can throw, that will temporarily turn the train onto a side track. There is a heavy object on the side track. If the train hits the object, the object will slow the train down, thereby giving the men time to escape. Unfortunately, there is a man standing on the side track in front of the heavy object, with his back turned. Oscar can throw the switch, preventing the train from killing the men, but killing the man. Or he can refrain from doing this, letting the five die.\nIs it morally permissible for Oscar to throw the switch?"
ml2("Hauser.4", "ml2.hauser4", "Trolley dilemma 2: a foreseen side effect is judged more permissible than harm as a means (Oscar vs Ned)",
    "Hauser et al. (2007), Study 1, Scenarios 3+4", 2007, "moral", section="§17 Hauser (ML2 showed an illustration too; text only here)",
    factor="scenario", levels=["side_effect", "means"], texts={"side_effect": OSCAR, "means": NED}, response=YESNO,
    hyp=between("permissible", "scenario", ["side_effect", "means"], {"option": "yes"}), est_="log_odds_ratio", test="chi2")

ml2("Tversky.1", "ml2.tversky1", "Mental accounting: more people travel to save $10 on a cheap item than on an expensive one",
    "Tversky & Kahneman (1981), Problem 10", 1981, "judgment", section="§16 Tversky",
    factor="discounted", levels=["cheap", "expensive"],
    texts={"cheap": "Imagine that you are about to purchase a wall hanging for $250, and ceramic vase for $30. The salesman informs you that the ceramic vase you wish to buy is on sale for $20 at the other branch of the store, located 20 minutes drive away. Would you make the trip to the other store?",
           "expensive": "Imagine that you are about to purchase a ceramic vase for $30, and a wall hanging for $250. The salesman informs you that the wall hanging you wish to buy is on sale for $240 at the other branch of the store, located 20 minutes drive away. Would you make the trip to the other store?"},
    response=choice(("yes", "Yes, I would go to the other branch"), ("no", "No, I would not go to the other branch")),
    hyp=between("trip", "discounted", ["cheap", "expensive"], {"option": "yes"}), est_="log_odds_ratio", test="z_proportions")

LECT = "Imagine that you are in a large lecture with a few hundred students and you are sitting in the middle section, a little more than half-way back in the room. The professor asks a question about the readings, but no one raises his or her hand to answer. {mid} The class sits in silence for two minutes before the professor explains that if no one volunteers, he will choose someone.\nHow likely do you believe it is that the professor will call on you?"
ml2("Risen.3", "ml2.risen3", "Tempting fate: not having done the reading makes being called on seem more likely",
    "Risen & Gilovich (2008), Study 2", 2008, "judgment", section="§18 Risen",
    factor="fate", levels=["tempted", "control"],
    texts={"tempted": LECT.format(mid="You have not done the reading and feel confident that you would not be able to answer the question."),
           "control": LECT.format(mid="You have done the reading and feel confident that the professor would like your answer, but prefer not to volunteer answers in large classes.")},
    response=scale(1, 10, "Not at all likely", "Extremely likely"),
    hyp=between("likelihood", "fate", ["tempted", "control"], {"mean": True}), est_="cohens_d", test="student_t")

GIFT = "Imagine that you are about to leave the country and have received a goodbye gift from a friend. {g}\nHow generous is your friend? Answer on a scale from 0 to 6, where 0 indicates \"not generous at all\" and 6 indicates \"extremely generous\"."
ml2("Hsee.1", "ml2.hsee1", "Less is better: a $90 scarf (of $10-$100) seems more generous than a $110 coat (of $100-$1,000)",
    "Hsee (1998), Study 1", 1998, "judgment", section="§21 Hsee",
    factor="gift", levels=["scarf", "coat"],
    texts={"scarf": GIFT.format(g="It is a wool scarf, from a nearby department store. The store carries a variety of wool scarves. The worst costs $10 and the best costs $100. The one your friend bought you costs $90."),
           "coat": GIFT.format(g="It is a wool coat, from a nearby department store. The store carries a variety of wool coats. The worst costs $100 and the best costs $1,000. The one your friend bought you costs $110.")},
    response=scale(0, 6, "not generous at all", "extremely generous"),
    hyp=between("generosity", "gift", ["scarf", "coat"], {"mean": True}), est_="cohens_d", test="student_t")

JURY = ("Imagine that you serve on the jury of an only-child sole-custody case following a relatively messy divorce. The facts of the case are complicated by ambiguous economic, social, and emotional considerations, and you decide to base your decision entirely on the following few observations.\n"
        "Parent A: average income, average health, average working hours, reasonable rapport with the child, relatively stable social life.\n"
        "Parent B: above-average income, very close relationship with the child, extremely active social life, lots of work-related travel, minor health problems.\n{q}")
# Shafir's test: P(award B) + P(deny B) > 1. Recording the parent who ends up WITH custody makes it a
# difference of one option's share: P(B has custody | award) - P(B has custody | deny) = that sum - 1.
write("manylabs2", "ml2.shafir1", study="ml2-shafir1",
      title="Choosing vs rejecting: the enriched parent is both awarded and denied custody more often",
      citation=f"Shafir (1993), Study 1; replicated in {ML2C}", license=ML2L,
      wording=f"{PROT}, §25 Shafir, 'Materials and procedure' (the table of features as two lines)",
      factor="task", levels=["award", "deny"],
      items=[{"id": "custody", "text": {"task": {"award": JURY.format(q="To which parent would you award sole custody of the child?"),
                                                  "deny": JURY.format(q="Which parent would you deny sole custody of the child?")}},
              "response": {"task": {"award": {"type": "choice", "options": [{"label": "A_has_custody", "text": "Parent A", "position": 0}, {"label": "B_has_custody", "text": "Parent B", "position": 1}]},
                                    "deny": {"type": "choice", "options": [{"label": "B_has_custody", "text": "Parent A", "position": 1}, {"label": "A_has_custody", "text": "Parent B", "position": 0}]}}}}],
      finding=fnd("ml2.shafir1", "Choosing vs rejecting: the enriched parent is both awarded and denied custody more often", "manylabs2",
                  f"Shafir (1993), Study 1; replicated in {ML2C}", 1993, "judgment",
                  between("custody", "task", ["award", "deny"], {"option": "B_has_custody"}), "diff_proportions", "z_proportions",
                  {"from": "manylabs2", "key": "Shafir.1"}, {"from": "manylabs2", "key": "Shafir.1"}))

KN = "The vice-president of a company went to the chairman of the board and said, ‘We are thinking of starting a new program. It will help us increase profits, but it will also {v} the environment.’ The chairman of the board answered, ‘I don’t care at all about {g} the environment. I just want to make as much profit as I can. Let’s start the new program.’ They started the new program. Sure enough, the environment was {p}.\nHow much do you agree with this statement: \"The chairman {p} the environment intentionally.\""
ml2("Knobe.1", "ml2.knobe1", "Side-effect effect: a harmful side effect is judged more intentional than a helpful one",
    "Knobe (2003), Study 1", 2003, "moral", section="§27 Knobe",
    factor="side_effect", levels=["harm", "help"],
    texts={"harm": KN.format(v="harm", g="harming", p="harmed"), "help": KN.format(v="help", g="helping", p="helped")},
    response=scale(1, 7, "strongly disagree", "strongly agree"),
    hyp=between("intentional", "side_effect", ["harm", "help"], {"mean": True}), est_="cohens_d", test="chi2")

def ross(key, fid, story, est_q, opts, section, title):
    items = [{"id": "estimate", "text": story + "\n" + est_q, "response": pct_scale()},
             {"id": "choice", "text": story + "\nWhat would you do?", "response": choice(*opts)}]
    write("manylabs2", fid, study=fid.replace(".", "-"), title=title,
          citation=f"Ross, Greene & House (1977), Study 1; replicated in {ML2C}", license=ML2L,
          wording=f"{PROT}, {section}", items=items, people=True,
          prompt={"template": "${persona} ${question}\n${options}", "answer_prefix": "\nAnswer:"},
          finding=fnd(fid, title, "manylabs2", f"Ross, Greene & House (1977), Study 1; replicated in {ML2C}", 1977, "social",
                      {"kind": "association", "outcomes": ["choice", "estimate"], "measure": {"option": opts[0][0]}, "direction": "positive"},
                      "r", "student_t", {"from": "manylabs2", "key": key}, {"from": "manylabs2", "key": key}))
SUPER = "As you are leaving your neighborhood supermarket a man in a business suit asks you whether you like shopping in that store. You reply quite honestly that you do like shopping there and indicate that in addition to being close to your home the supermarket seems to have very good meats and produce at reasonably low prices. The man then reveals that a videotape crew has filmed your comments and asks you to sign a release allowing them to use the unedited film for a TV commercial that the supermarket chain is preparing."
TICKET = "While driving through a rural area near your home you are stopped by a county police officer who informs you that you have been clocked (with radar) at 38 miles per hour in a 25-mph zone. You believe this information to be accurate. After the policeman leaves, you inspect your citation and find that the details on the summons regarding weather, visibility, time, and location of violation are highly inaccurate. The citation informs you that you may either pay a $80 fine by mail without appearing in court or you must appear in municipal court within the next two weeks to contest the charge."
ross("Ross.1", "ml2.ross1", SUPER, "What % of your peers do you estimate would sign the release?",
     [("sign", "Sign the release"), ("refuse", "Refuse to sign it")], "§13 Ross1",
     "False consensus (supermarket): those who would sign think more peers would sign")
ross("Ross.2", "ml2.ross2", TICKET, "What % of your peers do you estimate would pay the $80 fine by mail?",
     [("pay", "Pay the $80 fine by mail"), ("court", "Appear in court")], "§14 Ross2",
     "False consensus (traffic ticket): those who would pay think more peers would pay")

# ------------------------------------------------------------------ Many Labs 1
ML1C = "Klein et al. (2014), Many Labs 1"
ML1L = "CC0-1.0 (Many Labs 1 codebook, Data/Codebook.xlsx; datasets/replications/manylabs1/SOURCE.md)"
CB = "../shared/data/replications/manylabs1/Codebook.csv"
def ml1w(key, fid, title, cite, year, domain, *, factor, levels, texts, response, hyp, est_, test, prompt=CHOICE_PROMPT, wording, subjects=None, items=None):
    write("manylabs1", fid, study=fid.replace(".", "-").replace("_", "-"), title=title,
          citation=f"{cite}; replicated in {ML1C}", license=ML1L, wording=wording,
          factor=factor, levels=levels, items=items or item_by(hyp["outcome"], factor, texts, response), prompt=prompt, subjects=subjects,
          finding=fnd(fid, title, "manylabs1", f"{cite}; replicated in {ML1C}", year, domain, hyp, est_, test,
                      {"from": "manylabs1", "key": key}, {"from": "manylabs1", "key": key}))

def strip_scale(t):
    return re.sub(r"\s*\(1-stay at home, 9-go to game\)", "", t)
ml1w("study1", "ml1.sunk_cost", "Sunk costs: a ticket paid for makes going to the game in the cold more likely",
     "Oppenheimer, Meyvis & Davidenko (2009)", 2009, "judgment", wording=f"{CB}, rows sunkcosta and sunkcostb",
     factor="ticket", levels=["paid", "free"],
     texts={"paid": strip_scale(ml1("sunkcosta")), "free": strip_scale(ml1("sunkcostb"))},
     response=scale(1, 9, "stay at home", "go to game"),
     hyp=between("go", "ticket", ["paid", "free"], {"mean": True}), est_="cohens_d", test="student_t")

P1, P2 = mat("study_003", "problem_1"), mat("study_003", "problem_2")
ml1w("study2", "ml1.gain_loss", "Gain vs loss framing: the sure program is chosen more when lives are saved than when they are lost",
     "Tversky & Kahneman (1981), Problems 1-2", 1981, "judgment",
     wording="../shared/data/replications/humanstudy-bench/studies/study_003/source/materials/problem_1.json and problem_2.json (ML1's codebook abbreviates it; manylabs1/SOURCE.md)",
     factor="frame", levels=["gain", "loss"], texts=None, response=None,
     items=[{"id": "program", "text": {"frame": {"gain": P1["instructions"] + "\n" + P1["items"][0]["question"],
                                                 "loss": P2["instructions"] + "\n" + P2["items"][0]["question"]}},
             "response": {"frame": {"gain": choice(("sure", "Program A"), ("risky", "Program B")),
                                    "loss": choice(("sure", "Program C"), ("risky", "Program D"))}}}],
     hyp=between("program", "frame", ["gain", "loss"], {"option": "sure"}), est_="log_odds_ratio", test="chi2")

ANCH = [("study3a", "anchoring1", "NYC distance (miles)", 20000), ("study3b", "anchoring2", "Chicago population", 100000000),
        ("study3c", "anchoring3", "Mount Everest height (feet)", 1000000), ("study3d", "anchoring4", "U.S. births per day", 10000000)]
for key, var, what, top in ANCH:
    ml1w(key, f"ml1.{var}", f"Anchoring ({what}): a high anchor raises the estimate",
         "Jacowitz & Kahneman (1995)", 1995, "judgment",
         wording=f"{CB}, rows {var}a (low anchor) and {var}b (high anchor); ML1's study labels 3a-3d follow its MLforR sheets {var.title()} (manylabs1/SOURCE.md, Known problems)",
         factor="anchor", levels=["high", "low"], texts={"high": ml1(var + "b"), "low": ml1(var + "a")},
         response=est(top), prompt=EST_PROMPT, subjects=4,
         hyp=between("estimate", "anchor", ["high", "low"], {"mean": True}), est_="cohens_d", test="student_t")

GF_B = ml1("gamblerfallacyb")
if GF_B.endswith("before you"):  # the codebook cell is cut; the question ends as version a's does
    GF_B += " walked by?"
ml1w("study4", "ml1.gamblers_fallacy", "Retrospective gambler's fallacy: three sixes suggest more earlier rolls",
     "Oppenheimer & Monin (2009)", 2009, "judgment", wording=f"{CB}, rows gamblerfallacya and gamblerfallacyb (b's cell is cut after 'before you'; completed as in a)",
     factor="roll", levels=["three_sixes", "two_sixes"], texts={"three_sixes": ml1("gamblerfallacya"), "two_sixes": GF_B},
     response=est(100000), prompt=EST_PROMPT, subjects=4,
     hyp=between("rolls", "roll", ["three_sixes", "two_sixes"], {"mean": True}), est_="cohens_d", test="student_t")

# allowed/forbidden: record what the answer means (permit/prohibit), so "No" to allow and "Yes" to forbid are one label
ml1w("study7", "ml1.allowed_forbidden", "Allowed vs forbidden: people would rather 'not allow' speeches than 'forbid' them",
     "Rugg (1941)", 1941, "survey", wording=f"{CB}, rows allowedforbiddena and allowedforbiddenb",
     factor="wording", levels=["allow", "forbid"], texts=None, response=None,
     items=[{"id": "speeches", "text": {"wording": {"allow": ml1("allowedforbiddenb"), "forbid": ml1("allowedforbiddena")}},
             "response": {"wording": {"allow": {"type": "choice", "options": [{"label": "permit", "text": "Yes", "position": 0}, {"label": "prohibit", "text": "No", "position": 1}]},
                                      "forbid": {"type": "choice", "options": [{"label": "prohibit", "text": "Yes", "position": 1}, {"label": "permit", "text": "No", "position": 0}]}}}}],
     hyp=between("speeches", "wording", ["allow", "forbid"], {"option": "prohibit"}), est_="log_odds_ratio", test="chi2")

# ------------------------------------------------------------------ HumanStudy-Bench
HL = "MIT (HumanStudy-Bench materials; datasets/replications/humanstudy_bench/LICENSE-MIT.txt)"
HSBC = "; materials and result from HumanStudy-Bench (Liu et al. 2026)"
def hsb(fid, title, cite, year, domain, *, wording, factor, levels, items, hyp, est_, test, key, cells=None, prompt=CHOICE_PROMPT, subjects=None, people=False):
    orig = {"from": "humanstudy_bench", "key": key}
    if cells:
        orig["cells"] = cells
    write("humanstudy_bench", fid, study=fid.replace(".", "-").replace("_", "-"), title=title, citation=cite + HSBC, license=HL,
          wording=f"../shared/data/replications/humanstudy-bench/studies/{wording}", factor=factor, levels=levels, items=items,
          prompt=prompt, subjects=subjects, people=people,
          finding=fnd(fid, title, "humanstudy_bench", cite + HSBC, year, domain, hyp, est_, test, orig))

TK = "Tversky & Kahneman (1981)"
hsb("hsb.s003_asian_disease", "Asian disease: the sure program is chosen in the gain frame, the risky one in the loss frame", TK, 1981, "judgment",
    wording="study_003/source/materials/problem_1.json, problem_2.json", factor="frame", levels=["gain", "loss"],
    items=[{"id": "program", "text": {"frame": {"gain": P1["instructions"] + "\n" + P1["items"][0]["question"], "loss": P2["instructions"] + "\n" + P2["items"][0]["question"]}},
            "response": {"frame": {"gain": choice(("sure", "Program A"), ("risky", "Program B")), "loss": choice(("sure", "Program C"), ("risky", "Program D"))}}}],
    hyp=between("program", "frame", ["gain", "loss"], {"option": "sure"}), est_="diff_proportions", test="chi2",
    key="study_003:Problem 1 & 2:F1:0", cells=["Problem 1 (Gains)/program_a_certain", "Problem 2 (Losses)/program_c_certain"])

def opt_strip(o):
    return re.sub(r"^[A-F]\.\s*", "", o)
P5, P6, P7 = mat("study_003", "problem_5"), mat("study_003", "problem_6"), mat("study_003", "problem_7")
def gamble_text(p):
    return (p["instructions"] + "\n" if p["instructions"] else "") + p["items"][0]["question"]
for fid, a, b, an, bn, cell_a, title in [
        ("hsb.s003_certainty", P5, P7, "certain", "probabilistic", "Problem 5 (Certain)/option_a_30_sure", "Certainty effect: the sure $30 is preferred more than the same option at a quarter of the chances"),
        ("hsb.s003_pseudocertainty", P6, P7, "pseudocertain", "probabilistic", "Problem 6 (Pseudocertain)/option_c_30_contingent", "Pseudocertainty: a two-stage 'sure' $30 is preferred as if it were certain")]:
    hsb(fid, title, TK, 1981, "judgment", wording="study_003/source/materials/problem_5.json, problem_6.json, problem_7.json",
        factor="problem", levels=[an, bn],
        items=[{"id": "gamble", "text": {"problem": {an: gamble_text(a), bn: gamble_text(b)}},
                "response": {"problem": {an: choice(("smaller_gain", opt_strip(a["items"][0]["options"][0])), ("larger_gain", opt_strip(a["items"][0]["options"][1]))),
                                         bn: choice(("smaller_gain", opt_strip(b["items"][0]["options"][0])), ("larger_gain", opt_strip(b["items"][0]["options"][1])))}}}],
        hyp=between("gamble", "problem", [an, bn], {"option": "smaller_gain"}), est_="diff_proportions", test="chi2",
        key="study_003:Problem 5, 6, & 7:F3:0", cells=[cell_a, "Problem 7 (Probabilistic)/option_e_30_at_25pct"])

P8, P9 = mat("study_003", "problem_8"), mat("study_003", "problem_9")
hsb("hsb.s003_lost_ticket", "Mental accounting: a lost $10 bill deters buying a ticket less than a lost ticket does", TK, 1981, "judgment",
    wording="study_003/source/materials/problem_8.json, problem_9.json", factor="loss", levels=["cash", "ticket"],
    items=item_by("buy", "loss", {"cash": P8["items"][0]["question"], "ticket": P9["items"][0]["question"]}, YESNO),
    hyp=between("buy", "loss", ["cash", "ticket"], {"option": "yes"}), est_="diff_proportions", test="chi2",
    key="study_003:Problem 8 & 9:F4:0", cells=["Problem 8 (Lost $10 bill)/yes_pay", "Problem 9 (Lost ticket)/yes_pay"])

P10a, P10b = mat("study_003", "problem_10_version_1"), mat("study_003", "problem_10_version_2")
hsb("hsb.s003_calculator", "Mental accounting: a 20-minute drive is worth $5 off a $15 calculator more than off a $125 one", TK, 1981, "judgment",
    wording="study_003/source/materials/problem_10_version_1.json, problem_10_version_2.json", factor="price", levels=["cheap", "expensive"],
    items=item_by("trip", "price", {"cheap": P10a["items"][0]["question"], "expensive": P10b["items"][0]["question"]}, YESNO),
    hyp=between("trip", "price", ["cheap", "expensive"], {"option": "yes"}), est_="diff_proportions", test="chi2",
    key="study_003:Problem 10:F5:0", cells=["Version 1 (Calculator $15)/willing_to_trip", "Version 2 (Calculator $125)/willing_to_trip"])

KB = "Knobe (2003)"
for exp, fid, files_, title in [("Experiment 1", "hsb.s005_exp1_intentional", ("experiment_1_harm", "experiment_1_help"), "Side-effect effect (chairman): harm is judged intentional, help is not"),
                                ("Experiment 2", "hsb.s005_exp2_intentional", ("experiment_2_harm", "experiment_2_help"), "Side-effect effect (lieutenant): harm is judged intentional, help is not")]:
    harm, help_ = mat("study_005", files_[0]), mat("study_005", files_[1])
    hsb(fid, title, KB, 2003, "moral", wording=f"study_005/source/materials/{files_[0]}.json, {files_[1]}.json",
        factor="side_effect", levels=["harm", "help"],
        items=item_by("intentional", "side_effect", {"harm": harm["instructions"] + "\n" + harm["items"][0]["question"],
                                                     "help": help_["instructions"] + "\n" + help_["items"][0]["question"]}, YESNO),
        hyp=between("intentional", "side_effect", ["harm", "help"], {"option": "yes"}), est_="diff_proportions", test="chi2",
        key=f"study_005:{exp}:Finding 1:0", cells=["Harm condition/percentage", "Help condition/percentage"])
harm, help_ = mat("study_005", "experiment_1_harm"), mat("study_005", "experiment_1_help")
hsb("hsb.s005_exp1_blame", "Blame for a harmful side effect exceeds praise for a helpful one", KB, 2003, "moral",
    wording="study_005/source/materials/experiment_1_harm.json, experiment_1_help.json (items exp1_*_blame/praise)",
    factor="side_effect", levels=["harm", "help"],
    items=item_by("blame_praise", "side_effect", {"harm": harm["instructions"] + "\n" + harm["items"][1]["question"],
                                                  "help": help_["instructions"] + "\n" + help_["items"][1]["question"]}, scale(0, 6, None, None)),
    hyp=between("blame_praise", "side_effect", ["harm", "help"], {"mean": True}), est_="cohens_d", test="student_t",
    key="study_005:Experiment 1:Finding 2:0")

# false consensus: own choice vs estimated share, over simulated people who differ (names)
S1 = mat("study_001", "study_1_hypothetical_stories")
RG = "Ross, Greene & House (1977)"
for it in S1["items"]:
    q = it["metadata"]["estimation_questions"][0]
    m = re.search(r"would (.+)\?$", q)
    first = next(o for o in it["options"] if m and m.group(1).split()[0].lower() in o.lower()) if m else it["options"][0]
    opts = [("first", first), ("second", next(o for o in it["options"] if o != first))]
    fid = "hsb.s001_" + it["id"].replace("_story", "").replace("_referendum", "")
    items = [{"id": "estimate", "text": it["question"] + "\n" + q, "response": pct_scale()},
             {"id": "choice", "text": it["question"] + "\nWhat would you do?", "response": choice(*opts)}]
    write("humanstudy_bench", fid, study=fid.replace(".", "-").replace("_", "-"),
          title=f"False consensus ({it['id'].replace('_', ' ')}): choosers of an option think more peers choose it",
          citation=RG + HSBC, license=HL, wording=f"../shared/data/replications/humanstudy-bench/studies/study_001/source/materials/study_1_hypothetical_stories.json, item {it['id']}",
          items=items, people=True, prompt={"template": "${persona} ${question}\n${options}", "answer_prefix": "\nAnswer:"},
          finding=fnd(fid, f"False consensus ({it['id'].replace('_', ' ')}): choosers of an option think more peers choose it", "humanstudy_bench",
                      RG + HSBC, 1977, "social",
                      {"kind": "association", "outcomes": ["choice", "estimate"], "measure": {"option": "first"}, "direction": "positive"},
                      "r", "student_t", {"from": "humanstudy_bench", "key": "study_001:Study 1:F1:0", "cells": [f"{it['id']}/consensus_f"]}))
S3 = mat("study_001", "study_3_sandwich_board_hypothetical")
for it in S3["items"]:
    label = it["metadata"]["gt_key"]
    fid = "hsb.s001_sandwich_" + it["id"].replace("_version", "").replace("eat_at_joes", "joes")
    items = [{"id": "estimate", "text": it["question"] + "\nWhat % of your peers do you estimate would agree to wear the sign?", "response": pct_scale()},
             {"id": "choice", "text": it["question"] + "\nWhat would you do?", "response": choice(("agree", it["options"][0]), ("refuse", it["options"][1]))}]
    write("humanstudy_bench", fid, study=fid.replace(".", "-").replace("_", "-"),
          title=f"False consensus (sandwich board '{label}'): those who agree think more peers agree",
          citation=RG + HSBC, license=HL, wording=f"../shared/data/replications/humanstudy-bench/studies/study_001/source/materials/study_3_sandwich_board_hypothetical.json, item {it['id']} (the estimate question after study 1's)",
          items=items, people=True, prompt={"template": "${persona} ${question}\n${options}", "answer_prefix": "\nAnswer:"},
          finding=fnd(fid, f"False consensus (sandwich board '{label}'): those who agree think more peers agree", "humanstudy_bench",
                      RG + HSBC, 1977, "social",
                      {"kind": "association", "outcomes": ["choice", "estimate"], "measure": {"option": "agree"}, "direction": "positive"},
                      "r", "student_t", {"from": "humanstudy_bench", "key": "study_001:Study 3:F4:0", "cells": [f"{label}/consensus_f"]}))

# pluralistic ignorance: own comfort vs the average student's, the same person answering both
S8 = mat("study_008", "study_1_comfort_estimation")
sc = {"type": "choice", "style": "words", "option_format": "${text}",
      "options": [{"label": str(i + 1), "text": o, "position": i + 1} for i, o in enumerate(S8["items"][0]["options"])]}
write("humanstudy_bench", "hsb.s008_comfort", study="hsb-s008-comfort",
      title="Pluralistic ignorance: students rate their own comfort with campus drinking below the average student's",
      citation="Prentice & Miller (1993), Study 1" + HSBC, license=HL,
      wording="../shared/data/replications/humanstudy-bench/studies/study_008/source/materials/study_1_comfort_estimation.json",
      items=[{"id": "self", "text": S8["items"][0]["question"], "response": sc}, {"id": "average", "text": S8["items"][1]["question"], "response": sc}],
      subjects=1, prompt={"template": "${question}\n${options}", "answer_prefix": "\nAnswer:"},
      finding=fnd("hsb.s008_comfort", "Pluralistic ignorance: students rate their own comfort with campus drinking below the average student's",
                  "humanstudy_bench", "Prentice & Miller (1993), Study 1" + HSBC, 1993, "social",
                  {"kind": "within", "outcomes": ["average", "self"], "measure": {"mean": True}, "direction": "positive"},
                  "cohens_d", "paired_t", {"from": "humanstudy_bench", "key": "study_008:Study 1:F1:0"}))

# anchoring (Jacowitz & Kahneman 1995): the paper's pooled point-biserial r = .42 over its items, one finding per item
S2 = mat("study_002", "exp_1_anchored_estimation")
JK = "Jacowitz & Kahneman (1995), Experiment 1"
judg = [it for it in S2["items"] if it["id"].endswith("_judgment")][:6]
for it in judg:
    md = it["metadata"]
    estimate = next(x for x in S2["items"] if x["id"] == it["id"].replace("_judgment", "_estimate"))
    slug = re.sub(r"[^a-z0-9]+", "_", md["label"].lower()).strip("_")
    fid = f"hsb.s002_{slug}"
    texts = {lv: it["question"].replace("[ANCHOR]", f"{md[lv + '_anchor']:,}") + "\n" + estimate["question"] for lv in ("high", "low")}
    hsb(fid, f"Anchoring ({md['label']}): a high anchor raises the estimate", JK, 1995, "judgment",
        wording=f"study_002/source/materials/exp_1_anchored_estimation.json, items {it['id']} and {estimate['id']} (anchors from their metadata)",
        factor="anchor", levels=["high", "low"], items=item_by("estimate", "anchor", texts, est(10 ** 9)), prompt=EST_PROMPT, subjects=4,
        hyp=between("estimate", "anchor", ["high", "low"], {"mean": True}), est_="cohens_d", test="correlation",
        key="study_002:Experiment 1:F1:1")
print("written")

# ------------------------------------------------------------------ the seeds (the built-in studies' findings)
# Wording from the package's own bundled files (simsubjects/datasets/), the human counts read by the
# `seeds` reader (datasets/replications/seeds.py). Milgram and MoCa only: the other seeds' human results
# are not bundled (seeds/not_runnable.yaml says why).
PKG = Path(__file__).resolve().parents[1] / "simsubjects" / "datasets"
SEEDL = "see the bundled dataset's SOURCE.md"

def moca_pair(task, i, j):
    stories = [json.loads(s) if isinstance(s, str) else s for s in json.loads((PKG / "moca" / f"{task}_dataset_v1.json").read_text())]
    return [stories[k]["story"] + "\n" + stories[k]["question"] for k in (i, j)]

MOCA = "Nie et al. (2023), MoCa (human votes)"
for task, (i, j), fid, fac, lv, title, cite, year, domain in [
        ("causal", (2, 3), "seeds.moca_causal", "event_normality", ["abnormal", "normal"],
         "Event normality (MoCa, pen vignette): the norm-violating professor is judged a cause more than the assistant",
         "Knobe & Fraser (2008), pen vignette; human votes from Nie et al. (2023), MoCa", 2008, "causal"),
        ("moral", (18, 19), "seeds.moca_moral", "personal_force", ["personal", "impersonal"],
         "Personal force (MoCa, crying-baby dilemma): smothering by hand vs by a noisy boiler",
         "Christensen et al. (2014), personal-force dilemma; human votes from Nie et al. (2023), MoCa", 2014, "moral")]:
    a, b = moca_pair(task, i, j)
    write("seeds", fid, study=fid.replace(".", "-").replace("_", "-"), title=title, citation=cite,
          license="CC BY 4.0 (MoCa; datasets/moca/SOURCE.md)",
          wording=f"simsubjects/datasets/moca/{task}_dataset_v1.json, stories {i} and {j} (the first pair with the same story text that differs in one annotated factor)",
          factor=fac, levels=lv, items=item_by("judgment", fac, {lv[0]: a, lv[1]: b}, YESNO),
          numbers=f"The numbers of `original` are the votes of simsubjects/datasets/moca/{task}_dataset_v1.json, read by the seeds reader (datasets/replications/seeds.py)",
          finding=fnd(fid, title, "seeds", cite, year, domain,
                      between("judgment", fac, list(lv), {"option": "yes"}), "log_odds_ratio", "fisher",
                      {"from": "seeds", "key": f"moca:{task}:{i}:{j}"}))

# Milgram (1963) as one prompt: the classic scenario's introduction and stage texts (Aher et al. 2023,
# Figures 17, 18, 20; datasets/aher2023/milgram_classic.yaml), then whether the subject goes on to 450 V.
MC = yaml.safe_load((PKG / "aher2023" / "milgram_classic.yaml").read_text())["obedience"]
def tmpl(t):
    return re.sub(r"\$(subject|poss_obj|poss)\b", lambda m: "${" + {"subject": "name"}.get(m.group(1), m.group(1)) + "}", t)
stage = {s["level"]: s["text"] for s in MC["stages"]}
# The introduction's setup paragraphs (the call, the chair, the generator, the rules, the formal start);
# the record's first line and the preliminary round's steps are left out to keep the prompt short.
INTRO = [tmpl(p) for k, p in enumerate(MC["introduction"].split("\n\n")) if k in (1, 2, 3, 6, 17)]
MILGRAM_Q = "\n\n".join([*INTRO, tmpl(stage[21]), tmpl(MC["prods"][3]), tmpl(stage[23]),
                         "Question: Does ${name} go on, one level higher after each wrong or missing answer, "
                         "up to the last switch, 450 volts?"])
names = json.loads((PKG / "aher2023" / "names.json").read_text())["groups"]
fid = "seeds.milgram"
title = "Milgram obedience: 26 of 40 subjects administered the 450-volt shock, tested against one half"
cite = "Milgram (1963), Experiment 1; scenario text from Aher, Arriaga & Kalai (2023), §6"
d = {"study": "seeds-milgram", "title": title, "citation": cite,
     "license": "transcribed from Aher et al. (2023) for research use, with attribution (datasets/aher2023/SOURCE.md)",
     "design": {"subjects": {"table": "subjects.csv", "id": "name"}, "seed": 1},
     "items": [{"id": "obey", "text": MILGRAM_Q, "response": YESNO}],
     "option_order": {"mode": "averaged"}, "prompt": CHOICE_PROMPT,
     "finding": fnd(fid, title, "seeds", cite, 1963, "social",
                    {"kind": "one_sample", "outcome": "obey", "measure": {"option": "yes"}, "null": 0.5, "direction": "positive"},
                    "cohens_h", "binomial", {"from": "seeds", "key": "milgram1963:completed:0.5"})}
folder = OUT / "seeds" / "milgram"
folder.mkdir(parents=True, exist_ok=True)
(folder / "study.yaml").write_text(
    "# A finding of `simsubjects bench` (docs/bench.md). Wording: simsubjects/datasets/aher2023/milgram_classic.yaml\n"
    "# (the introduction's setup paragraphs 2-4, 7 and 18, stages 21 and 23, prod 4), asked once: does the subject\n"
    "# go on to 450 volts? Milgram's subjects were men: the two Mr. names Aher et al.'s Milgram figures print.\n"
    "# The numbers of `original` are the counts of simsubjects/datasets/aher2023/milgram1963_breakoff.json, read by\n"
    "# the seeds reader (datasets/replications/seeds.py).\n"
    "#   simsubjects study check THIS.yaml\n" + yaml.safe_dump(d, sort_keys=False, width=110, allow_unicode=True))
# the two subjects Aher et al.'s Milgram section prints (Figure 6: Mr. Wagner; E.1's record: Mr. Lopez),
# both in datasets/aher2023/names.json
assert all(any(s in v for v in names.values()) for s in ("Wagner", "Lopez"))
(folder / "subjects.csv").write_text("name,poss,poss_obj\nMr. Wagner,his,him\nMr. Lopez,his,him\n")
print("seeds written")
