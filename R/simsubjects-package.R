# Package documentation (roxygen2 writes man/simsubjects-package.Rd from it).

#' R Twins of the simsubjects Analyses
#'
#' The repository of the Python package \samp{simsubjects} (language models as simulated participants
#' in human-subject studies, analyzed beside real people) is also this R package. Its functions read
#' what \samp{simsubjects export RUN} writes (\file{.rds}, \file{.csv}, and the Stata/SPSS files through
#' \pkg{haven}) and compute the same statistics as the Python modules with R's own tools, so that
#' \samp{simsubjects analyze RUN --check-r} and a replication folder's \file{analysis.R} can compare them.
#' Every function accepts what \code{read_run()}, \code{readRDS()} and \code{haven::read_dta()} /
#' \code{read_sav()} give it: value-labelled columns become factors by their labels.
#'
#' Results have broom's columns (\code{term}, \code{estimate}, \code{std.error}, \code{statistic},
#' \code{df}, \code{p.value}, \code{conf.low}, \code{conf.high}, where they apply); arguments follow one
#' convention (\code{conf.level}, \code{se_type}, \code{id}). The families:
#' \itemize{
#'   \item Reading: \code{\link{read_run}} (responses, items, a conjoint's profiles; \code{format = "dta"}
#'     or \code{"sav"} through haven), \code{\link{prob_of}} (per-trial probability of one response).
#'   \item Effects: \code{\link{amce}} (story-clustered AMCE through estimatr; with a formula, the
#'     conjoint AMCEs), \code{\link{conjoint_amce}}, \code{\link{conjoint_mm}} (cregg's conventions,
#'     formula interface, \code{by =} for estimates within groups), \code{\link{as_cregg}} (cregg's frame).
#'   \item Group differences: \code{\link{conjoint_mm_diffs}}, \code{\link{conjoint_amce_diffs}},
#'     \code{\link{conjoint_anova}}, \code{\link{conjoint_wald}} (cregg's \code{mm_diffs},
#'     \code{amce_diffs}, \code{cj_anova}, and the clustered CR2 Wald test: Python's \samp{cj_anova}).
#'   \item Result classes: \code{simsubjects_amce}, \code{simsubjects_mm}, with \code{print},
#'     \code{plot}, \code{tidy}, \code{glance} (\code{\link{simsubjects_result}}).
#'   \item Tests: \code{\link{welch_test}}, \code{\link{one_sample_test}} (t.test),
#'     \code{\link{adjust_p}} (Holm / Benjamini-Hochberg within a family).
#'   \item Studies: \code{\link{delta_bias}}, \code{\link{delta_tests}} (survey response biases);
#'     \code{\link{representativeness}}, \code{\link{wasserstein_by_question}},
#'     \code{\link{wasserstein_ordinal}}, \code{\link{opinion_distributions}},
#'     \code{\link{opinion_representativeness}} (opinion surveys); \code{\link{milgram_survival}}
#'     (obedience); \code{\link{garden_path_sentences}}, \code{\link{garden_path_tests}};
#'     \code{\link{wisdom_questions}}.
#'   \item Replication folders: \code{\link{replicate_ultimatum}}, \code{\link{replicate_garden_path}},
#'     \code{\link{replicate_wisdom}}, \code{\link{replicate_milgram}}, \code{\link{replicate_survey_bias}},
#'     \code{\link{replicate_moca}}, \code{\link{replicate_opinion_survey}},
#'     \code{\link{replicate_conjoint}} (each a study's tables under the Python tables' names),
#'     \code{\link{write_results}}, \code{\link{check_results}} (R beside \file{analysis/*.csv}).
#' }
#' The vignette (\code{vignette("simsubjects")}) reads a run, reproduces its numbers and plots AMCEs.
#' @keywords internal
"_PACKAGE"
