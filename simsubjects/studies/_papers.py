"""The three papers whose studies are bundled; each study joins one through a `Plan` in its declaration."""

from __future__ import annotations

from simsubjects.collect.studies.registry import Paper

AHER2023 = Paper(
    key="aher2023",
    title="Using Large Language Models to Simulate Multiple Humans and Replicate Human Subject Studies",
    citation="Aher, Arriaga & Kalai (2023), ICML, PMLR 202:337-371",
    note="Turing Experiments: Ultimatum Game, Garden Path sentences, Wisdom of Crowds, Milgram obedience "
         "(classic and novel scenario).",
    order=1,
)
TJUATJA2024 = Paper(
    key="tjuatja2024",
    title="Do LLMs Exhibit Human-like Response Biases? A Case Study in Survey Design",
    citation="Tjuatja, Chen, Wu, Talwalkar & Neubig (2024), TACL 12",
    note="Survey response biases. The bundled question set is small and runs in full at every scale; "
         "the paper's own 2,578 pairs come from the BiasMonkey release "
         "(simsubjects collect survey-bias --questions PROMPTS_DIR).",
    order=2,
)
NIE2023 = Paper(
    key="nie2023",
    title="MoCa: Measuring Human-Language Model Alignment on Causal and Moral Judgment Tasks",
    citation="Nie, Zhang, Wang, Gerstenberg & Icard (2023), NeurIPS 36",
    note="Causal and moral judgments; AMCE per factor for people and the model.",
    order=3,
)
SANTURKAR2023 = Paper(
    key="santurkar2023",
    title="Whose Opinions Do Language Models Reflect?",
    citation="Santurkar, Durmus, Ladhak, Lee, Liang & Hashimoto (2023), ICML, PMLR 202:29971-30004",
    note="Opinion surveys beside people by demographic group (OpinionQA): representativeness heatmap, "
         "steerability with personas from a respondents table (Argyle et al. 2023), refusals, and the order "
         "effect of randomized options. The bundled survey and its people are synthetic; point "
         "`simsubjects collect opinion-survey --questions/--human` at OpinionQA's released folders for the real ones.",
    order=4,
)
HHY2014 = Paper(
    key="hhy2014",
    title="Causal Inference in Conjoint Analysis: Understanding Multidimensional Choices via Stated "
          "Preference Experiments",
    citation="Hainmueller, Hopkins & Yamamoto (2014), Political Analysis 22(1)",
    note="Immigration conjoint: AMCEs and marginal means of the model beside HHY's 1,396 respondents "
         "(cregg's conventions).",
    order=5,
)
