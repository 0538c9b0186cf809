"""Survey response biases (Tjuatja et al. 2024): generators, released-format readers, Δb/Δp analysis."""

import csv
import math
import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from simsubjects.studies.survey_bias import analysis as an
from simsubjects.studies.survey_bias.biasmonkey import read_biasmonkey_responses, response_file_type
from simsubjects.studies.survey_bias import design as sb
from simsubjects.errors import UserError

DATA = Path(__file__).parent / "data" / "survey_bias"
TEXT = ("Thinking about 2050, people's homes will be greener overall in the U.S. cities\n"
        "Would you say transportation options improve or get worse-off by mid-century")


def tokens(text):
    return text.split()


# ----------------------------------------------------------------------------- generators

def test_option_generators():
    assert sb.reverse_options(("a", "b", "c", "d")) == ("d", "c", "b", "a")
    assert [sb.map_reversed_answer(x, 4) for x in "ABCD"] == ["D", "C", "B", "A"]
    assert sb.add_dont_know(("Yes", "No")) == ("Yes", "No", "Don't know")
    with pytest.raises(UserError):
        sb.add_dont_know(("Yes", "No", "Don't know"))
    assert sb.remove_middle(("v", "s", "MID", "n", "x")) == ("v", "s", "n", "x")
    assert sb.add_middle(("v", "s", "n", "x"), "MID") == ("v", "s", "MID", "n", "x")
    with pytest.raises(UserError):
        sb.add_middle(("v", "s", "n", "x"), "")
    with pytest.raises(UserError):
        sb.remove_middle(("v", "s", "n", "x"))


def test_qwerty_neighbours():
    assert set(sb.QWERTY_NEIGHBOURS["s"]) == set("weadzx")
    assert set(sb.QWERTY_NEIGHBOURS["g"]) == set("tyfhvb")
    assert set(sb.QWERTY_NEIGHBOURS["q"]) == set("wa")


def test_key_typo_touches_only_eligible_words_with_one_neighbour_key():
    out = sb.key_typo(TEXT, seed=3, p=1.0)
    a, b = tokens(TEXT), tokens(out)
    assert len(a) == len(b)
    changed = 0
    for w0, w1 in zip(a, b):
        if not re.fullmatch(r"[A-Za-z]{4,}", w0):
            assert w0 == w1  # digits, punctuation, short words untouched
            continue
        diff = [i for i, (x, y) in enumerate(zip(w0, w1)) if x != y]
        assert len(diff) == 1 and len(w0) == len(w1)
        i = diff[0]
        assert w1[i].lower() in sb.QWERTY_NEIGHBOURS[w0[i].lower()]
        assert w1[i].isupper() == w0[i].isupper()
        changed += 1
    # eligible: Thinking about homes will greener overall cities Would transportation options improve;
    # not: 2050, people's U.S. worse-off mid-century (digits/punctuation) and words under 4 letters
    assert changed == 11
    assert sb.key_typo(TEXT, seed=3, p=0.0) == TEXT
    assert "\n" in out  # whitespace kept


def test_key_typo_rate_and_random_letters():
    text = " ".join(["abcdef"] * 4000)
    out = tokens(sb.key_typo(text, seed=1, p=0.2))
    rate = sum(w != "abcdef" for w in out) / 4000
    # binomial(4000, 0.2): sd = 0.0063; 5 sd bounds
    assert 0.168 < rate < 0.232
    out = tokens(sb.key_typo(text, seed=1, p=1.0, replacement="random"))
    assert all(w != "abcdef" and len(w) == 6 for w in out)


def test_middle_random_swaps_two_adjacent_inner_letters():
    out = sb.middle_random(TEXT, seed=5)
    for w0, w1 in zip(tokens(TEXT), tokens(out)):
        if not re.fullmatch(r"[A-Za-z]{4,}", w0):
            assert w0 == w1
            continue
        assert (w0[0], w0[-1]) == (w1[0], w1[-1])
        diff = [i for i, (x, y) in enumerate(zip(w0, w1)) if x != y]
        assert diff == [] or (len(diff) == 2 and diff[1] == diff[0] + 1 and w0[diff[0]] == w1[diff[1]]
                              and w0[diff[1]] == w1[diff[0]] and 1 <= diff[0] and diff[1] <= len(w0) - 2)
    # 'abcd': the only inner pair is (b, c)
    assert sb.middle_random("abcd", seed=0) == "acbd"


def test_letter_swap_keeps_ends_and_letters():
    out = sb.letter_swap(TEXT, seed=2)
    moved = 0
    for w0, w1 in zip(tokens(TEXT), tokens(out)):
        if not re.fullmatch(r"[A-Za-z]{4,}", w0):
            assert w0 == w1
            continue
        assert (w0[0], w0[-1]) == (w1[0], w1[-1]) and sorted(w0[1:-1]) == sorted(w1[1:-1])
        moved += w0 != w1
    assert moved > 0


@pytest.mark.parametrize("name", ["key_typo", "middle_random", "letter_swap"])
def test_perturbations_are_seeded(name):
    kw = {"p": 0.5} if name == "key_typo" else {}
    assert sb.perturb(TEXT, name, 11, **kw) == sb.perturb(TEXT, name, 11, **kw)
    assert len({sb.perturb(TEXT, name, s, **kw) for s in range(6)}) > 1


def test_words_with_digits_or_punctuation_never_change():
    text = "2050 years? U.S. don't e-mail wow3 worse-off (always) cats."
    for name in sb.PERTURBATIONS:
        kw = {"p": 1.0} if name == "key_typo" else {}
        for seed in range(20):
            assert sb.perturb(text, name, seed, **kw) == text


# ----------------------------------------------------------------------------- items

def test_read_released_question_files():
    items = sb.read_biasmonkey_questions(DATA)
    assert len(items) == 36  # 6 files x 3 keys x 2 forms
    assert items["item"].is_unique
    by = items.set_index("item")
    # response order: ENVC_W41 reversed form shows (same, worse, better) = original C, B, A
    rev = by.loc["response_order/ENVC_W41/modified"]
    assert rev["options"] == ("About the same as it is now", "Worse than it is now", "Better than it is now")
    assert rev["labels"] == ("C", "B", "A")
    # odd/even: the no-middle form's options are the middle form's A, B, D, E
    oe = by.loc["odd_even/HAPPEN2a_W41/modified"]
    assert oe["labels"] == ("A", "B", "D", "E") and oe["num_options"] == 4
    # Pew asked HAPPEN2a without a middle (orig middle option False): the added middle sits at 2.5
    assert by.loc["odd_even/HAPPEN2a_W41/original", "positions"] == (1.0, 2.0, 2.5, 3.0, 4.0)
    assert by.loc["odd_even/HAPPEN2a_W41/original", "orig_middle_option"] == False  # noqa: E712
    raw = sb.read_biasmonkey_questions(DATA, align_odd_even=False).set_index("item")
    assert raw.loc["odd_even/HAPPEN2a_W41/modified", "labels"] == ("A", "B", "C", "D")
    # opinion float: a sixth, refusal option
    of = by.loc["opinion_float/HAPPEN2a_W41/modified"]
    assert of["num_options"] == 6 and of["refusal"] == (False,) * 5 + (True,) and of["options"][-1] == "Don't know"
    assert math.isnan(of["positions"][-1])
    # perturbation file with its unnamed index column; only the stem is perturbed
    kt = by.loc["acquiescence-key_typo/ELDCARE_W41/modified"]
    assert kt["question"].startswith("Thinking ahedd 30 years from nof")
    assert kt["options"] == by.loc["acquiescence-key_typo/ELDCARE_W41/original", "options"]
    assert by.loc["acquiescence/ELDCARE_W41/modified", "options"] == ("Yes", "No")


def test_question_files_round_trip(tmp_path):
    items = sb.read_biasmonkey_questions(DATA)
    sb.write_biasmonkey_questions(items, tmp_path)
    again = sb.read_biasmonkey_questions(tmp_path)
    cols = [c for c in sb.ITEM_COLUMNS if c != "source"]
    pd.testing.assert_frame_equal(items[cols], again[cols])
    # the written perturbation file keeps the released leading index column
    with open(tmp_path / "acquiescence-key_typo.csv", newline="") as f:
        assert next(csv.reader(f))[0] == ""


def test_question_file_errors(tmp_path):
    (tmp_path / "acquiescence.csv").write_text('key,num options,orig alpha\nK,2,"Q\nA. x\nB. y"\n')
    with pytest.raises(UserError, match="acquiescence.csv.*'pos alpha'"):
        sb.read_biasmonkey_questions(tmp_path)
    (tmp_path / "acquiescence.csv").write_text('key,num options,orig alpha,pos alpha\nK,2,"Q\nA. x\nB. y","Q2 without options"\n')
    with pytest.raises(UserError, match="record 1 .*pos alpha"):
        sb.read_biasmonkey_questions(tmp_path)
    (tmp_path / "acquiescence.csv").write_text('key,num options,orig alpha,pos alpha\nK,3,"Q\nA. x\nB. y","Q\nA. Yes\nB. No"\n')
    with pytest.raises(UserError, match="num options"):
        sb.read_biasmonkey_questions(tmp_path)


def test_bundled_set_has_every_form_and_matches_its_generator():
    from simsubjects.datasets.registry import data_path

    items = sb.load_bundled_items(seed=0)
    assert set(items["bias"]) == set(sb.BIASES)
    assert 8 <= items["key"].nunique() <= 12
    assert set(items["perturbation"]) == {"", *sb.PERTURBATIONS}
    by = items.set_index("item")
    assert by.loc["acquiescence/LIBRARY_TOOLS/modified", "options"] == ("Yes", "No")
    assert "forbid" in by.loc["allow_forbid/CAFE_DOGS/modified", "question"]
    # an even scale got its middle from questions.csv; an odd one lost it
    assert by.loc["odd_even/TRANSIT_SATISFIED/original", "options"][2] == "Neither satisfied nor dissatisfied"
    assert by.loc["odd_even/GROW_FOOD/modified", "num_options"] == 4
    # the stored systematic forms are exactly what the generators make from questions.csv
    q = pd.read_csv(data_path("survey_bias") / "questions.csv", dtype=str, keep_default_na=False)
    gen = sb.generate_pairs(q).set_index("item")
    stored = items[items["perturbation"] == ""].set_index("item")
    assert set(gen.index) == set(stored[stored["bias"].isin(["response_order", "odd_even", "opinion_float"])].index)
    for col in ("question", "options", "labels", "positions", "refusal"):
        assert [tuple(x) if isinstance(x, tuple) else x for x in gen[col]] == list(stored.loc[gen.index, col]), col
    # perturbations are reproducible and touch the stem only
    again = sb.load_bundled_items(seed=0)
    pd.testing.assert_frame_equal(items, again)
    other = sb.load_bundled_items(seed=1)
    pert = items["perturbation"] != ""
    assert (items.loc[pert, "question"].to_numpy() != other.loc[pert, "question"].to_numpy()).any()
    mod = items[pert & (items["form"] == "modified")].set_index(["bias", "perturbation", "key"])
    org = items[pert & (items["form"] == "original")].set_index(["bias", "perturbation", "key"])
    assert (mod["options"] == org.loc[mod.index, "options"]).all()
    assert "opinion_float" not in set(items.loc[pert, "bias"])  # shared with odd_even, as released


def test_generate_pairs_needs_middle_label_for_even_scales():
    q = pd.DataFrame({"key": ["E4", "O5"], "question": ["How?", "How?"],
                      "options": ["a | b | c | d", "a | b | c | d | e"], "middle_label": ["", ""]})
    items = sb.generate_pairs(q)
    assert set(items.loc[items["key"] == "E4", "bias"]) == {"response_order"}
    assert set(items.loc[items["key"] == "O5", "bias"]) == {"response_order", "odd_even", "opinion_float"}
    oe = items.set_index("item").loc["odd_even/O5/original"]
    assert oe["orig_middle_option"] == True and oe["positions"] == (1.0, 2.0, 3.0, 4.0, 5.0)  # noqa: E712


# ----------------------------------------------------------------------------- prompt and trials

def test_prompt_is_appendix_b2():
    p = sb.format_prompt("Is it?", ("Yes", "No"))
    assert p == ("Please answer the following question with one of the alphabetical options provided.\n"
                 "Question: Is it?\nA. Yes\nB. No\nAnswer:")


def test_build_trials_schema():
    items = sb.read_biasmonkey_questions(DATA)
    t = sb.build_trials(items)
    assert list(t.columns[:7]) == ["trial", "item", "condition", "subject", "prompt", "options", "labels"]
    assert {"key", "bias", "perturbation", "form", "num_options"} <= set(t.columns)
    rev = t.set_index("item").loc["response_order/ENVC_W41/modified"]
    assert rev["options"] == (" A", " B", " C") and rev["labels"] == ("C", "B", "A")
    assert rev["condition"] == "modified" and rev["subject"] == ""
    assert rev["prompt"].endswith("C. Better than it is now\nAnswer:")
    assert t["trial"].is_unique


def _exact_rows():
    rows = []
    for trial, probs in {"t1": (0.7, 0.2, 0.1), "t2": (1.0, 0.0, 0.0), "t3": (0.25, 0.25, 0.5)}.items():
        for lab, p in zip("ABC", probs):
            rows.append({"trial": trial, "item": trial, "response": lab, "weight": p, "method": "exact"})
    return pd.DataFrame(rows)


def test_exact_to_sample():
    r = _exact_rows()
    s = sb.exact_to_sample(r, n=50, seed=4)
    assert (s.groupby("trial")["weight"].sum() == 50).all()
    assert set(s["method"]) == {"sampled_from_exact"} and (s["n_samples"] == 50).all()
    assert s.loc[(s["trial"] == "t2") & (s["response"] == "A"), "weight"].item() == 50
    pd.testing.assert_frame_equal(s, sb.exact_to_sample(r, n=50, seed=4))
    shuffled = sb.exact_to_sample(r.sample(frac=1, random_state=0), n=50, seed=4)
    key = ["trial", "response"]
    assert shuffled.sort_values(key)["weight"].tolist() == s.sort_values(key)["weight"].tolist()
    assert not sb.exact_to_sample(r, n=50, seed=5)["weight"].equals(s["weight"])
    with pytest.raises(UserError):
        sb.exact_to_sample(r.assign(method="sampled"))


# ----------------------------------------------------------------------------- released responses

def _raw_counts(path):
    with open(path, newline="") as f:
        return Counter((r["key"], r["group"], r["response"]) for r in csv.DictReader(f))


def test_response_file_names():
    assert response_file_type(Path("acquiescence.csv")) == ("acquiescence", "")
    assert response_file_type(Path("odd_even-key_typo.csv")) == ("odd_even", "key_typo")
    assert response_file_type(Path("responses-odd_even.sample.csv")) == ("odd_even", "")
    assert response_file_type(Path("acquiescence_reword.csv")) is None
    assert response_file_type(Path("question_order-sample.csv")) is None


def test_released_responses_round_trip():
    resp, items = read_biasmonkey_responses(DATA, "llama2-7b")
    assert set(resp["model"]) == {"llama2-7b"} and set(resp["method"]) == {"sampled"}
    for name, bias in (("responses-acquiescence.sample.csv", "acquiescence"), ("responses-odd_even.sample.csv", "odd_even")):
        raw = _raw_counts(DATA / name)
        col0, col1 = sb.RELEASED_COLUMNS[bias]
        for (key, group, letter), n in raw.items():
            form = "original" if group == col0 else "modified"
            got = resp[(resp["item"] == sb.item_id(bias, "", key, form)) & (resp["response"] == letter.upper())]
            assert got["weight"].item() == n
        assert resp.loc[resp["bias"] == bias, "weight"].sum() == sum(raw.values())
    # each form: 50 samples
    assert (resp.groupby("trial")["weight"].sum() == 50).all() and (resp["n_samples"] == 50).all()
    by = items.set_index("item")
    # odd/even answers are kept as shown (the release did not relabel them)
    assert by.loc["odd_even/HAPPEN2a_W41/modified", "labels"] == ("A", "B", "C", "D")
    assert by.loc["odd_even/HAPPEN2a_W41/modified", "num_options"] == 4
    assert by.loc["odd_even/HAPPEN2a_W41/modified", "positions"] == (1.0, 2.0, 4.0, 5.0)


def test_released_responses_with_prompts_attach_texts():
    resp, items = read_biasmonkey_responses(DATA, "m", prompts_dir=DATA)
    by = items.set_index("item")
    assert by.loc["acquiescence/ELDCARE_W41/modified", "options"] == ("Yes", "No")
    assert by.loc["odd_even/HAPPEN2a_W41/modified", "labels"] == ("A", "B", "C", "D")


def test_released_responses_errors(tmp_path):
    (tmp_path / "acquiescence.csv").write_text("key,response,group,num_options\nK,a,orig alpha,2\nK,b,forbid alpha,2\n")
    with pytest.raises(UserError, match=r"acquiescence.csv:3: group 'forbid alpha'"):
        read_biasmonkey_responses(tmp_path, "m")
    (tmp_path / "acquiescence.csv").write_text("key,response,group,num_options\nK,ab,orig alpha,2\n")
    with pytest.raises(UserError, match=r"acquiescence.csv:2: response 'ab'"):
        read_biasmonkey_responses(tmp_path, "m")
    with pytest.raises(UserError, match="not a directory"):
        read_biasmonkey_responses(tmp_path / "nope", "m")


def test_sample_files_delta_b_as_the_release_computes_it():
    """Δb from the raw sample files with the release's rule, written out here, vs the analysis."""
    resp, items = read_biasmonkey_responses(DATA, "m")
    d = an.question_deltas(resp, items).set_index(["bias", "key"])["delta"]
    raw = _raw_counts(DATA / "responses-acquiescence.sample.csv")
    for key in ("ELDCARE_W41", "HAPPENa_W41"):
        expect = (raw[(key, "pos alpha", "a")] - raw[(key, "orig alpha", "a")]) / 50 * 100
        assert d[("acquiescence", key)] == pytest.approx(expect)
    assert d[("acquiescence", "ELDCARE_W41")] == pytest.approx((30 - 40) / 50 * 100)
    raw = _raw_counts(DATA / "responses-odd_even.sample.csv")
    for key in ("HAPPEN2a_W41", "HAPPEN2b_W41"):
        nm = raw[(key, "no middle alpha", "b")] + raw[(key, "no middle alpha", "d")]
        m = raw[(key, "middle alpha", "b")] + raw[(key, "middle alpha", "d")]
        assert d[("odd_even", key)] == pytest.approx((nm - m) / 50 * 100)


def _write_release(path, forms):
    """A released-format response file: forms = [(key, group, num_options, {letter: count})]."""
    lines = ["key,response,group,num_options"]
    for key, group, n, counts in forms:
        for letter, c in counts.items():
            lines += [f"{key},{letter},{group},{n}"] * c
    path.write_text("\n".join(lines) + "\n")


def test_released_blank_answers_and_per_form_option_counts(tmp_path):
    """Some released files (gpt-3.5-turbo-instruct, llama2-7b) record each form's own num_options
    (4 without the middle, with answers relabelled a,b,d,e; 6 with "Don't know") and blank answers.
    The release counts the matching letters / 50 * 100: a blank is one of the 50 samples."""
    _write_release(tmp_path / "odd_even.csv", [
        ("S1", "middle alpha", 5, {"a": 10, "b": 10, "c": 25, "d": 5}),
        ("S1", "no middle alpha", 4, {"a": 10, "b": 12, "d": 8, "e": 5, "": 15}),
        ("S2", "middle alpha", 5, {"a": 30, "b": 20}),
        ("S2", "no middle alpha", 4, {"b": 5, "": 45}),
    ])
    _write_release(tmp_path / "opinion_float.csv", [
        ("S1", "orig alpha", 5, {"a": 30, "c": 20}),
        ("S1", "float alpha", 6, {"c": 10, "f": 30, "": 10}),
    ])
    resp, items = read_biasmonkey_responses(tmp_path, "m")
    by = items.set_index("item")
    assert by.loc["odd_even/S1/modified", "num_options"] == 4
    assert by.loc["odd_even/S1/modified", "labels"] == ("A", "B", "D", "E")
    assert by.loc["odd_even/S1/modified", "positions"] == (1.0, 2.0, 4.0, 5.0)
    assert by.loc["opinion_float/S1/modified", "num_options"] == 6
    assert (resp.groupby("trial")["weight"].sum() == 50).all()
    d = an.question_deltas(resp, items).set_index(["bias", "key"])["delta"]
    assert d[("odd_even", "S1")] == pytest.approx(((12 + 8) - (10 + 5)) / 50 * 100)  # 10
    assert d[("odd_even", "S2")] == pytest.approx((5 - 20) / 50 * 100)  # -30
    assert d[("opinion_float", "S1")] == pytest.approx((20 - 10) / 50 * 100)  # 20
    t = an.delta_tests(an.question_deltas(resp, items))
    row = t[(t["bias"] == "odd_even") & (t["perturbation"] == "") & (t["test"] == "One-sample t-test")].iloc[0]
    assert row["estimate"] == pytest.approx(-10) and row["n"] == 2
    assert row["p.value"] == pytest.approx(stats.ttest_1samp([10, -30], 0).pvalue)


def test_released_results_folder_layout(tmp_path):
    """results/<model>/csv (the release's layout) is found from results/<model> and results/."""
    csv_dir = tmp_path / "results" / "llama2-7b" / "csv"
    csv_dir.mkdir(parents=True)
    _write_release(csv_dir / "acquiescence.csv", [("K", "orig alpha", 2, {"a": 20, "b": 30}),
                                                   ("K", "pos alpha", 2, {"a": 35, "b": 15})])
    for folder in (csv_dir, csv_dir.parent, tmp_path / "results"):
        resp, items = read_biasmonkey_responses(folder, "llama2-7b")
        assert an.question_deltas(resp, items)["delta"].item() == pytest.approx((35 - 20) / 50 * 100)


def test_released_opinion_float_perturbation_files_give_way_to_odd_even(tmp_path):
    """Table 4's opinion-float Δp are the odd_even-<p> pairs (full_analysis.ipynb), also for the
    model whose folder holds opinion_float-<p>.csv files (llama2-70b-ift)."""
    _write_release(tmp_path / "odd_even-key_typo.csv", [
        ("S1", "middle alpha", 5, {"b": 10, "c": 30, "d": 10}),
        ("S1", "no middle alpha", 5, {"b": 20, "c": 20, "d": 10}),
        ("S2", "middle alpha", 5, {"a": 40, "b": 10}),
        ("S2", "no middle alpha", 5, {"a": 45, "b": 5}),
    ])
    _write_release(tmp_path / "opinion_float-key_typo.csv", [
        ("S1", "orig alpha", 5, {"c": 50}),
        ("S1", "float alpha", 5, {"a": 50}),
        ("S2", "orig alpha", 5, {"c": 50}),
        ("S2", "float alpha", 5, {"a": 50}),
    ])
    resp, items = read_biasmonkey_responses(tmp_path, "m")
    d = an.question_deltas(resp, items)
    of = d[(d["bias"] == "opinion_float") & (d["perturbation"] == "key_typo")].set_index("key")
    assert set(of["pairs_from"]) == {"odd_even"}
    assert of.loc["S1", "delta"] == pytest.approx(((20 + 10) - (10 + 10)) / 50 * 100)  # 20
    assert of.loc["S2", "delta"] == pytest.approx((5 - 10) / 50 * 100)  # -10


# ----------------------------------------------------------------------------- Δb/Δp by hand

def tidy(model, bias, pert, key, form, counts, method="sampled", num_options=None):
    """Rows of one question form: counts = {label: count}."""
    total = sum(counts.values())
    out = []
    for lab, c in counts.items():
        w = c / total if method == "exact" else float(c)
        out.append({"study": "survey_bias", "trial": f"{model}|{bias}|{pert}|{key}|{form}",
                    "item": sb.item_id(bias, pert, key, form), "condition": form, "subject": "", "source": "model",
                    "model": model, "method": method, "response": lab, "weight": w, "validity": 1.0, "key": key,
                    "bias": bias, "perturbation": pert, "form": form, "num_options": num_options or len(counts)})
    return out


def hand_fixture(method="sampled"):
    r = []
    # acquiescence: Δ = modified A - original A
    for key, (o, m) in {"K1": (30, 40), "K2": (25, 20), "K3": (10, 20)}.items():
        r += tidy("m", "acquiescence", "", key, "original", {"A": o, "B": 50 - o}, method)
        r += tidy("m", "acquiescence", "", key, "modified", {"A": m, "B": 50 - m}, method)
    # allow/forbid: Δ = original B - forbid A; excluded key GAP21Q46_W82 must not count
    for key, (ob, fa) in {"F1": (20, 30), "F2": (10, 10), "GAP21Q46_W82": (50, 0)}.items():
        r += tidy("m", "allow_forbid", "", key, "original", {"A": 50 - ob, "B": ob}, method)
        r += tidy("m", "allow_forbid", "", key, "modified", {"A": fa, "B": 50 - fa}, method)
    # allow/forbid perturbation: Δ = original B - perturbed B
    r += tidy("m", "allow_forbid", "key_typo", "F1", "original", {"A": 30, "B": 20}, method)
    r += tidy("m", "allow_forbid", "key_typo", "F1", "modified", {"A": 25, "B": 25}, method)
    r += tidy("m", "allow_forbid", "key_typo", "F2", "original", {"A": 40, "B": 10}, method)
    r += tidy("m", "allow_forbid", "key_typo", "F2", "modified", {"A": 40, "B": 10}, method)
    # response order (answers mapped back): Δ = original A - reversed A
    r += tidy("m", "response_order", "", "R1", "original", {"A": 30, "B": 15, "C": 5}, method)
    r += tidy("m", "response_order", "", "R1", "modified", {"A": 20, "B": 15, "C": 15}, method)
    r += tidy("m", "response_order", "", "R2", "original", {"A": 10, "B": 30, "C": 10}, method)
    r += tidy("m", "response_order", "", "R2", "modified", {"A": 15, "B": 25, "C": 10}, method)
    # opinion float: Δ = original C - float C
    r += tidy("m", "opinion_float", "", "S1", "original", {"A": 10, "B": 10, "C": 10, "D": 10, "E": 10}, method)
    r += tidy("m", "opinion_float", "", "S1", "modified", {"A": 10, "B": 10, "C": 4, "D": 10, "E": 10, "F": 6}, method)
    r += tidy("m", "opinion_float", "", "S2", "original", {"A": 20, "B": 10, "C": 20, "D": 0, "E": 0}, method)
    r += tidy("m", "opinion_float", "", "S2", "modified", {"A": 20, "B": 10, "C": 10, "D": 0, "E": 0, "F": 10}, method)
    # odd/even: Δ = (B+D) without middle - (B+D) with middle
    r += tidy("m", "odd_even", "", "S1", "original", {"A": 10, "B": 10, "C": 25, "D": 5, "E": 0}, method)
    r += tidy("m", "odd_even", "", "S1", "modified", {"A": 15, "B": 15, "D": 10, "E": 10}, method)
    r += tidy("m", "odd_even", "", "S2", "original", {"A": 20, "B": 10, "C": 10, "D": 10, "E": 0}, method)
    r += tidy("m", "odd_even", "", "S2", "modified", {"A": 20, "B": 20, "D": 5, "E": 5}, method)
    # odd/even perturbation pairs (also the opinion-float Δp)
    r += tidy("m", "odd_even", "letter_swap", "S1", "original", {"A": 10, "B": 10, "C": 25, "D": 5, "E": 0}, method)
    r += tidy("m", "odd_even", "letter_swap", "S1", "modified", {"A": 10, "B": 20, "C": 15, "D": 5, "E": 0}, method)
    r += tidy("m", "odd_even", "letter_swap", "S2", "original", {"A": 20, "B": 10, "C": 10, "D": 10, "E": 0}, method)
    r += tidy("m", "odd_even", "letter_swap", "S2", "modified", {"A": 20, "B": 5, "C": 10, "D": 10, "E": 5}, method)
    return pd.DataFrame(r)


HAND_DELTAS = {
    ("acquiescence", "", "K1"): (40 - 30) * 2, ("acquiescence", "", "K2"): (20 - 25) * 2,
    ("acquiescence", "", "K3"): (20 - 10) * 2,
    ("allow_forbid", "", "F1"): (20 - 30) * 2, ("allow_forbid", "", "F2"): (10 - 10) * 2,
    ("allow_forbid", "key_typo", "F1"): (20 - 25) * 2, ("allow_forbid", "key_typo", "F2"): 0,
    ("response_order", "", "R1"): (30 - 20) * 2, ("response_order", "", "R2"): (10 - 15) * 2,
    ("opinion_float", "", "S1"): (10 - 4) * 2, ("opinion_float", "", "S2"): (20 - 10) * 2,
    ("odd_even", "", "S1"): ((15 + 10) - (10 + 5)) * 2, ("odd_even", "", "S2"): ((20 + 5) - (10 + 10)) * 2,
    ("odd_even", "letter_swap", "S1"): ((20 + 5) - (10 + 5)) * 2, ("odd_even", "letter_swap", "S2"): ((5 + 10) - (10 + 10)) * 2,
    ("opinion_float", "letter_swap", "S1"): 20, ("opinion_float", "letter_swap", "S2"): -10,
}


@pytest.mark.parametrize("method", ["sampled", "exact"])
def test_question_deltas_by_hand(method):
    d = an.question_deltas(hand_fixture(method))
    got = {(b, p, k): v for b, p, k, v in zip(d["bias"], d["perturbation"], d["key"], d["delta"])}
    assert set(got) == set(HAND_DELTAS)  # GAP21Q46_W82 excluded
    for k, v in HAND_DELTAS.items():
        assert got[k] == pytest.approx(v), k
    borrowed = d[(d["bias"] == "opinion_float") & (d["perturbation"] == "letter_swap")]
    assert set(borrowed["pairs_from"]) == {"odd_even"}


def test_t_tests_by_hand():
    tests = an.delta_tests(an.question_deltas(hand_fixture()))
    row = tests[(tests["bias"] == "acquiescence") & (tests["test"] == "One-sample t-test")].iloc[0]
    # Δ = 20, -10, 20: mean 10, sd sqrt(((10)^2 + (-20)^2 + 10^2) / 2) = sqrt(300), se = 10, t = 1, df = 2
    assert row["estimate"] == pytest.approx(10) and row["std.error"] == pytest.approx(10)
    assert row["statistic"] == pytest.approx(1.0) and row["df"] == 2 and row["n"] == 3
    # Student t with 2 df: two-sided p = 1 - |t| / sqrt(t^2 + 2)
    assert row["p.value"] == pytest.approx(1 - 1 / math.sqrt(3))
    w = tests[(tests["bias"] == "acquiescence") & (tests["test"] == "Welch two-sample t-test")].iloc[0]
    x, y = [80, 40, 40], [60, 50, 20]  # modified A %, original A %
    vx = ((80 - 160 / 3) ** 2 + 2 * (40 - 160 / 3) ** 2) / 2 / 3
    vy = ((60 - 130 / 3) ** 2 + (50 - 130 / 3) ** 2 + (20 - 130 / 3) ** 2) / 2 / 3
    se = math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx**2 / 2 + vy**2 / 2)
    assert w["estimate"] == pytest.approx(10) and w["std.error"] == pytest.approx(se) and w["df"] == pytest.approx(df)
    assert w["p.value"] == pytest.approx(stats.ttest_ind(x, y, equal_var=False).pvalue)
    # allow/forbid with the excluded key gone: Δ = -20, 0
    af = tests[(tests["bias"] == "allow_forbid") & (tests["setting"] == "bias") & (tests["test"] == "One-sample t-test")].iloc[0]
    assert af["estimate"] == pytest.approx(-10) and af["n"] == 2


def test_entropy_by_hand():
    e = an.form_entropy(hand_fixture()).set_index(["bias", "perturbation", "key", "form"])["normalized_entropy"]
    assert e[("opinion_float", "", "S1", "original")] == pytest.approx(1.0)  # 10 each of 5
    p = 0.6  # K1 original: 30 A, 20 B
    assert e[("acquiescence", "", "K1", "original")] == pytest.approx(-(p * math.log(p) + (1 - p) * math.log(1 - p)) / math.log(2))
    assert e[("acquiescence", "", "K2", "original")] == pytest.approx(1.0)
    # odd/even S2 no-middle form: 20, 20, 5, 5 of 50 over 4 options
    ps = [0.4, 0.4, 0.1, 0.1]
    assert e[("odd_even", "", "S2", "modified")] == pytest.approx(-sum(q * math.log(q) for q in ps) / math.log(4))
    assert an.normalized_entropy([1.0, 0.0], 2) == 0.0


def test_entropy_correlation_by_hand():
    corr = an.entropy_correlation(*(lambda r: (an.question_deltas(r), an.form_entropy(r)))(hand_fixture()))
    row = corr[(corr["bias"] == "acquiescence") & (corr["entropy_form"] == "original")].iloc[0]
    h = lambda p: -(p * math.log(p) + (1 - p) * math.log(1 - p)) / math.log(2)  # noqa: E731
    x = [h(0.6), h(0.5), h(0.2)]  # original entropies of K1..K3
    y = [20, 10, 20]  # |Δb|
    mx, my = sum(x) / 3, sum(y) / 3
    r = sum((a - mx) * (b - my) for a, b in zip(x, y)) / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
    assert row["estimate"] == pytest.approx(r) and row["n"] == 3 and row["paper_convention"]
    t = r / math.sqrt(1 - r**2)  # df = 1: p = 1 - (2/pi) arctan|t|
    assert row["p.value"] == pytest.approx(1 - 2 / math.pi * math.atan(abs(t)))
    conv = corr[corr["paper_convention"]].set_index("bias")["entropy_form"].to_dict()
    assert conv == {"acquiescence": "original", "allow_forbid": "modified", "response_order": "modified",
                    "opinion_float": "modified", "odd_even": "original"}


def test_analyze_and_grid(tmp_path):
    r = hand_fixture()
    # a second model whose acquiescence Δ is large and consistent: significant positive
    r2 = []
    for i, (o, m) in enumerate([(10, 40), (12, 41), (11, 39), (10, 42)]):
        r2 += tidy("big", "acquiescence", "", f"K{i}", "original", {"A": o, "B": 50 - o})
        r2 += tidy("big", "acquiescence", "", f"K{i}", "modified", {"A": m, "B": 50 - m})
    res = an.analyze_survey_bias(pd.concat([r, pd.DataFrame(r2)], ignore_index=True))
    assert {"deltas", "bias_tests", "perturbation_tests", "entropy", "entropy_correlation", "grid", "table4"} <= set(res)
    g = res["grid"].set_index(["model", "bias", "setting"])
    assert g.loc[("big", "acquiescence", "bias"), "direction"] == "positive"
    assert g.loc[("m", "acquiescence", "bias"), "direction"] == "ns"
    assert g.loc[("m", "opinion_float", "letter_swap"), "estimate"] == pytest.approx(5.0)
    t4 = res["table4"].set_index(["model", "bias"])
    assert t4.loc[("m", "odd_even"), "delta_p_letter_swap"] == t4.loc[("m", "opinion_float"), "delta_p_letter_swap"]
    png = an.plot_grid(res["grid"], tmp_path / "fig2.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_analysis_needs_design_columns():
    r = hand_fixture().drop(columns=["bias"])
    with pytest.raises(UserError, match="bias"):
        an.question_deltas(r)


def test_analysis_joins_design_from_items():
    items = sb.read_biasmonkey_questions(DATA)
    rows = []
    for form, a in (("original", 35), ("modified", 45)):
        rows.append({"trial": f"t-{form}", "item": f"acquiescence/ELDCARE_W41/{form}", "response": "a", "weight": a,
                     "model": "m"})
        rows.append({"trial": f"t-{form}", "item": f"acquiescence/ELDCARE_W41/{form}", "response": "b", "weight": 50 - a,
                     "model": "m"})
    d = an.question_deltas(pd.DataFrame(rows), items)
    assert d["delta"].item() == pytest.approx(20.0)
