"""The milgram study: its declaration, joined by imports to its design (design.py), analysis (analysis.py)
and report block (report.py)."""

from __future__ import annotations

from simsubjects.collect.sample_kinds import CENSUS
from simsubjects.collect.studies.registry import Plan, StudyDef, size
from simsubjects.studies._papers import AHER2023
from .analysis import analyze_milgram, plot_milgram, summary
from .check_r import check_milgram
from .design import COLUMNS, _options, build_trials, make_collect, scenario, validate, with_humans
from .report import milgram


def _def(study: str, help_: str, title: str, design: str, order: int, aliases: tuple[str, ...] = ()) -> StudyDef:
    return StudyDef(
        name=study, aliases=aliases, help=help_,
        build=lambda subjects=4, max_stages=30, seed=0: build_trials(study, subjects, max_stages, seed),
        options=_options(),
        datasets=["milgram" if study == "milgram" else "milgram_novel", "names", "milgram1963"],
        templates=lambda: [scenario(study)["introduction"],
                           *(j["template"] for j in scenario(study)["judgments"].values())],
        collect=make_collect(study),
        validate=validate,
        finalize=with_humans,
        analyze=analyze_milgram,
        plot=plot_milgram,
        summary=summary,
        methods=("exact", "sampled"),
        title=title,
        columns=COLUMNS,
        papers=(Plan(AHER2023, lambda s: {"subjects": size(100, s), "max_stages": 30}, design, order=order),),
        report=milgram,
        check_r=check_milgram,
        r_function="replicate_milgram",
        sample=CENSUS,  # the first N subjects of the 100-name pool, each once
    )
MILGRAM = _def("milgram", "Milgram obedience, classic shock scenario: break-off levels of simulated teachers "
                          "beside Milgram (1963) Experiment 1 (Aher et al. 2023, §6, App. E.1).",
               "Milgram obedience, classic scenario (Aher et al. 2023, §6, App. E.1)",
               "100 subjects, all 30 shock levels", 4)
MILGRAM_NOVEL = _def("milgram_novel", "Milgram obedience, novel sleepy-driver scenario: the same simulator, break-off "
                                      "by number of submersions beside Milgram (1963) (Aher et al. 2023, App. E.2).",
                     "Milgram obedience, novel scenario (Aher et al. 2023, App. E.2)",
                     "100 subjects, all 30 submersions", 5, aliases=("milgram-novel",))
