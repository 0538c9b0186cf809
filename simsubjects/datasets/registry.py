"""The dataset registry shown by `simsubjects datasets list/show`."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from ..errors import UserError

AHER = ("Aher, G., Arriaga, R. I., & Kalai, A. T. (2023). Using Large Language Models to Simulate "
        "Multiple Humans and Replicate Human Subject Studies. ICML 2023.")
NIE = ("Nie, A., Zhang, Y., Amdekar, A., Piech, C., Hashimoto, T., & Gerstenberg, T. (2023). MoCa: Measuring "
       "Human-Language Model Alignment on Causal and Moral Judgment Tasks. NeurIPS 2023.")
TJUATJA = ("Tjuatja, L., Chen, V., Wu, T., Talwalkar, A., & Neubig, G. (2024). Do LLMs Exhibit Human-like "
           "Response Biases? A Case Study in Survey Design. TACL.")
SANTURKAR = ("Santurkar, S., Durmus, E., Ladhak, F., Lee, C., Liang, P., & Hashimoto, T. (2023). Whose Opinions "
             "Do Language Models Reflect? ICML 2023.")
TRANSCRIBED = "transcribed from the paper for research use, with attribution"
HHY = ("Hainmueller, J., Hopkins, D. J., & Yamamoto, T. (2014). Causal Inference in Conjoint Analysis: Understanding "
       "Multidimensional Choices via Stated Preference Experiments. Political Analysis 22(1), 1-30.")
BMS = ("Ballard-Rosa, C., Martin, L., & Scheve, K. (2017). The Structure of American Income Tax Policy Preferences. "
       "The Journal of Politics 79(1), 1-16.")
CREGG = "MIT (cregg, T. J. Leeper; datasets/conjoint/LICENSE-cregg.txt)"


@dataclass(frozen=True)
class Dataset:
    name: str
    description: str
    n: str
    files: tuple[str, ...]
    source: str
    license: str
    citation: str
    extra: dict = field(default_factory=dict)

    def paths(self) -> list[Path]:
        return [data_path(f) for f in self.files]


def data_path(relative: str) -> Path:
    return Path(str(files("simsubjects.datasets").joinpath(relative)))


def checksum(ds: "Dataset") -> str:
    h = hashlib.sha256()
    for root in ds.paths():
        for p in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if p.is_file():
                h.update(p.name.encode())
                h.update(p.read_bytes())
    return "sha256:" + h.hexdigest()


def load_json(relative: str):
    return json.loads(data_path(relative).read_text(encoding="utf-8"))


DATASETS: dict[str, Dataset] = {d.name: d for d in [
    Dataset("names", "Surnames of five 2010 US Census groups (100 each), titles Mr./Ms./Mx.; "
            "the balanced proposer-responder pairing of the Ultimatum Game", "500 surnames, 1,000 names, 10,000 pairs",
            ("aher2023/names.json",), "Aher et al. (2023), Appendix A; 2010 US Census surname data",
            TRANSCRIBED, AHER),
    Dataset("garden_path", "Garden-path sentences and their comma controls, OT/RAT verbs", "24 published + 24 novel pairs",
            ("aher2023/garden_path.json",), "Aher et al. (2023), Figures 11 and 13; Christianson et al. (2001)",
            TRANSCRIBED, AHER),
    Dataset("wisdom", "General-knowledge questions with true answers and human medians/IQRs", "10 questions",
            ("aher2023/wisdom.json",), "Aher et al. (2023), Table 2; Moussaïd et al. (2013)", TRANSCRIBED, AHER),
    Dataset("milgram", "Milgram (1963) obedience procedure: introduction, 30 stages, judgments, prods",
            "30 stages, 4 prods + 1 special", ("aher2023/milgram_classic.yaml",),
            "Aher et al. (2023), Appendix E, Figures 17-20", TRANSCRIBED, AHER),
    Dataset("milgram_novel", "Novel destructive-obedience scenario (submerging a sleepy driver)",
            "30 stages, 4 prods + 1 special", ("aher2023/milgram_novel.yaml",),
            "Aher et al. (2023), Appendix E.2, Figures 25-28", TRANSCRIBED, AHER),
    Dataset("milgram1963", "Break-off voltages of Milgram (1963) Experiment 1", "40 participants",
            ("aher2023/milgram1963_breakoff.json",), "Milgram (1963) via Aher et al. (2023), Figure 21",
            TRANSCRIBED, AHER + " Milgram, S. (1963). Behavioral study of obedience. J. Abnorm. Soc. Psychol. 67(4), 371."),
    Dataset("prompts_aher2023", "Prompt templates of the Turing Experiments (Figures 1b, 3, 14)", "3 templates",
            ("aher2023/prompts.json",), "Aher et al. (2023)", TRANSCRIBED, AHER),
    Dataset("moca_causal", "MoCa causal-judgment stories with 25 human yes/no votes each and factor annotations",
            "144 stories", ("moca/causal_dataset_v1.json", "moca/causal_dataset_anno_utils.json"),
            "Nie et al. (2023), MoCa dataset", "CC BY 4.0", NIE),
    Dataset("moca_moral", "MoCa moral-judgment stories with 25 human yes/no votes each and factor annotations",
            "62 stories", ("moca/moral_dataset_v1.json", "moca/moral_dataset_anno_utils.json"),
            "Nie et al. (2023), MoCa dataset", "CC BY 4.0", NIE),
    Dataset("personas", "Persona sentences of the Social Simulacra condition", "25 personas", ("personas.json",),
            "Nie et al. (2023), Table A3", TRANSCRIBED, NIE),
    Dataset("aher2023_published", "Published numbers shown beside a run: Table 1 valid-answer rates, App. C counts",
            "2 tables", ("aher2023/published.json",), "Aher et al. (2023), Table 1 and Appendix C", TRANSCRIBED, AHER),
    Dataset("tjuatja2024_table4", "Published Table 4: Δb, Δp and entropy correlations of nine models",
            "45 rows", ("tjuatja2024/table4.csv",), "Tjuatja et al. (2024), Table 4 (tjuatja2024/SOURCE.md)",
            TRANSCRIBED, TJUATJA),
    Dataset("nie2023_table1", "Published Table 1: stories and human label classes per task", "2 rows",
            ("moca/table1.csv",), "Nie et al. (2023), Table 1", TRANSCRIBED, NIE),
    Dataset("survey_bias_questions", "Original attitude questions with every response-bias form, written for this package",
            "see SOURCE.md", ("survey_bias",), "simsubjects", "MIT", TJUATJA + " (question format)"),
    Dataset("conjoint_immigration", "Immigration conjoint: which of two immigrant profiles to admit (ChosenImmigrant), "
            "9 attributes, 2 restrictions, ethnocentrism", "13,960 profiles, 1,396 respondents x 5 tasks",
            ("conjoint/immigration.parquet",), "cregg 0.3.7 `immigration` (github.com/leeper/cregg)", CREGG,
            HHY + " Distributed by cregg (Leeper 2020)."),
    Dataset("conjoint_taxes", "Tax-plan conjoint: 7 attributes (six bracket rates, revenue), survey weights, party id",
            "32,000 profiles, 2,000 respondents", ("conjoint/taxes.parquet",),
            "cregg 0.3.7 `taxes` (github.com/leeper/cregg)", CREGG, BMS + " Distributed by cregg (Leeper 2020)."),
    Dataset("conjoint_immigration_design", "The HHY 2014 immigration design as data: attributes, levels with display "
            "text, the two restrictions, the prompt", "9 attributes, 49 levels", ("conjoint/immigration_design.json",),
            "HHY (2014) via cregg's documentation of `immigration`", TRANSCRIBED, HHY),
    Dataset("opinion_survey", "A synthetic 20-question ATP-style survey with answers of 336 synthetic respondents, in "
            "both OpinionQA formats (wave folder and <ATTRIBUTE>_data.json count files), and 60 synthetic "
            "respondents to draw personas from", "20 questions, 336 + 60 respondents", ("opinion_survey",),
            "simsubjects (scripts/make_opinion_fixture.py); file formats of OpinionQA", "MIT",
            SANTURKAR + " (file formats)"),
    Dataset("manylabs2", "Many Labs 2: original effects (masterkey) and pooled replications (table 5, global results) "
            "of 28 findings, read by `simsubjects bench`", "28 findings, about 60 samples each",
            ("replications/manylabs2",), "github.com/ManyLabsOpenScience/ManyLabs2 (SOURCE.md)",
            "GPL-3.0 (replications/manylabs2/LICENSE-GPL-3.0.txt)",
            "Klein, R. A., et al. (2018). Many Labs 2: Investigating variation in replicability across samples and "
            "settings. AMPPS 1(4), 443-490."),
    Dataset("manylabs1", "Many Labs 1: original effects and pooled replications of 16 tests, read by `simsubjects "
            "bench`", "16 tests of 13 effects, 36 samples", ("replications/manylabs1",),
            "github.com/ManyLabsOpenScience/ManyLabs1 (SOURCE.md)",
            "GPL-3.0 (repository), data CC0 (replications/manylabs1/)",
            "Klein, R. A., et al. (2014). Investigating variation in replicability: A \"many labs\" replication "
            "project. Social Psychology 45(3), 142-152."),
    Dataset("humanstudy_bench", "HumanStudy-Bench: the published human results of 14 classic studies and the "
            "64 published model configurations' PAS/ECS, read by `simsubjects bench`", "14 studies, 78 findings",
            ("replications/humanstudy_bench",), "github.com/HumanStudy-Hub/HumanStudy-Bench (SOURCE.md)",
            "MIT (replications/humanstudy_bench/LICENSE-MIT.txt)",
            "Liu, X., et al. (2026). HumanStudy-Bench: Towards AI Agent Design for Participant Simulation. "
            "arXiv:2602.00685."),
]}


def as_dataset(entry: "str | Dataset") -> Dataset:
    """A study's data entry: a `Dataset` declared beside the study (its folder) as it is, or the name of
    one listed here."""
    return entry if isinstance(entry, Dataset) else get(entry)


def get(name: str) -> Dataset:
    try:
        return DATASETS[name]
    except KeyError:
        raise UserError(f"unknown dataset {name!r}; `simsubjects datasets list` shows the bundled ones") from None
