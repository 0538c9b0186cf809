# Package documentation (roxygen2 writes man/simsubjects-package.Rd from it).

#' R Twins of the simsubjects Analyses
#'
#' The repository of the Python package \samp{simsubjects} (language models as simulated participants
#' in human-subject studies, analyzed beside real people) is also this R package. Its functions read
#' what \samp{simsubjects export RUN --to rds} writes and compute the same statistics as the Python
#' modules with R's own tools, so that \samp{simsubjects analyze RUN --check-r} can compare them.
#'
#' Every function returns a data frame with broom/estimatr-style columns (\code{term},
#' \code{estimate}, \code{std.error}, \code{statistic}, \code{df}, \code{p.value}, \code{conf.low},
#' \code{conf.high}, where they apply).
#' \itemize{
#'   \item \code{\link{read_run}}, \code{\link{prob_of}}: read an exported run, per-trial probabilities.
#'   \item \code{\link{amce}}: average marginal component effects, story-clustered errors (estimatr).
#'   \item \code{\link{welch_test}}, \code{\link{one_sample_test}}: t-tests (t.test).
#'   \item \code{\link{delta_bias}}, \code{\link{delta_tests}}: survey response-bias deltas and tests.
#'   \item \code{\link{representativeness}}, \code{\link{wasserstein_by_question}},
#'     \code{\link{wasserstein_ordinal}}: Wasserstein-1 representativeness on ordinal answers.
#'   \item \code{\link{milgram_survival}}: share still obeying by shock level.
#' }
#'
#' The R side of a replication folder (\code{simsubjects replicate}) calls one function per study:
#' \code{\link{replicate_ultimatum}}, \code{\link{replicate_garden_path}}, \code{\link{replicate_wisdom}},
#' \code{\link{replicate_milgram}}, \code{\link{replicate_survey_bias}}, \code{\link{replicate_moca}},
#' whose tables \code{\link{write_results}} writes.
#' @keywords internal
"_PACKAGE"
