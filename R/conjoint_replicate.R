# The R side of the immigration conjoint in a replication folder: the same tables as the Python
# analysis (simsubjects/studies/conjoint/analysis.py: amce.csv, mm.csv), from the exported profile-level
# table, so no level list is written anywhere but in the export's factor order (issue 29).

.hhy_features <- c("Gender", "Education", "Job", "LanguageSkills", "CountryOfOrigin",
                   "ReasonForApplication", "JobExperience", "JobPlans", "PriorEntry")

#' Immigration conjoint: AMCEs and marginal means for the model and HHY's respondents
#'
#' Reads the run's profile-level table (\code{read_run(folder)$profiles}: one row per profile shown,
#' the model's P(profile chosen) and the 13,960 profiles of Hainmueller, Hopkins & Yamamoto's (2014)
#' respondents, attributes as factors with the design's baseline first) and computes, per source,
#' the AMCEs with the design's restriction interactions (\code{\link{conjoint_amce}}) and the
#' marginal means (\code{\link{conjoint_mm}}, tested against 0.5 for a forced choice, 4 for a 1-7
#' rating), errors clustered by respondent (\code{id}), as \code{cregg::cj(immigration,
#' ChosenImmigrant ~ Gender + Education * Job + ..., id = ~CaseID)}.
#'
#' @template folder
#' @param features the attribute columns, in the order of the rows of the result (HHY's formula).
#' @param constraints the restricted pairs of the design, \code{"A:B"}.
#' @param format passed to \code{\link{read_run}}: \code{"auto"}, \code{"dta"} or \code{"sav"}.
#' @return A named list of data frames with the names and columns of the Python tables:
#'   \code{amce} and \code{mm} (\code{source, feature, level, estimate, std.error, statistic, p.value,
#'   conf.low, conf.high, n, model}) and, for each model beside the people,
#'   \code{mm_diff_model_minus_people} (\code{\link{conjoint_mm_diffs}}) and
#'   \code{anova_model_vs_people} (\code{\link{conjoint_wald}}).
#' @examples
#' folder <- system.file("extdata", "replication", "conjoint_immigration", package = "simsubjects")
#' \donttest{
#' # ~8 s (HHY's 13,960 profiles); the vignette runs these lines, the tests check the numbers
#' res <- replicate_conjoint(folder)
#' check_results(res, folder)
#' head(as_cregg(res$amce, outcome = "chosen"))
#' }
#' @family replication
#' @export
replicate_conjoint <- function(folder, features = .hhy_features,
                               constraints = c("Education:Job", "CountryOfOrigin:ReasonForApplication"),
                               format = getOption("simsubjects.format", "auto")) {
  run <- read_run(folder, format)
  p <- run$profiles
  if (is.null(p)) {
    stop(sprintf("%s: no export/profiles.rds; re-export with `simsubjects export %s --to rds`",
                 folder, folder), call. = FALSE)
  }
  p$source <- as.character(p$source)
  p$id <- as.character(p$id)
  p$outcome_kind <- as.character(p$outcome_kind)
  amce_rows <- list()
  mm_rows <- list()
  mms <- list()
  for (src in unique(p$source)) {
    g <- p[p$source == src, , drop = FALSE]
    h0 <- if (g$outcome_kind[1] == "rating") 4 else 0.5
    amce_rows[[src]] <- cbind(source = src, conjoint_amce(g, "chosen", features, id = "id",
                                                          constraints = constraints), model = src)
    mms[[src]] <- tidy.simsubjects_result(conjoint_mm(g, "chosen", features, id = "id", h0 = h0))
    mm_rows[[src]] <- cbind(source = src, mms[[src]], model = src)
  }
  out <- list(amce = .rows(amce_rows), mm = .rows(mm_rows))
  # each model beside the people: MM differences and the omnibus Wald F clustered by respondent (a
  # respondent answers several tasks; cregg's F takes profiles as independent): the Python cj_anova
  people <- "HHY 2014 respondents"
  choice <- p[p$outcome_kind == "choice", , drop = FALSE]
  diffs <- list()
  tests <- list()
  for (m in setdiff(unique(choice$source), people)) {
    if (!people %in% choice$source) break
    pair <- choice[choice$source %in% c(people, m), , drop = FALSE]
    pair$group <- factor(ifelse(pair$source == people, "people", "model"), c("people", "model"))
    # conjoint_mm_diffs(pair, "chosen", features, by = "group", id = "id"), from the MMs above (the
    # same rows of each source; estimate and std.error do not depend on h0)
    diffs[[m]] <- cbind(.mm_diff_rows(mms[c(people, m)], c("people", "model")), model = m)
    tests[[m]] <- cbind(conjoint_wald(pair, "chosen", features, by = "group", id = "id",
                                      constraints = constraints), model = m)
  }
  if (length(diffs)) {
    out$mm_diff_model_minus_people <- .keys(.rows(diffs), c("BY", "feature", "level", "model"))
    out$anova_model_vs_people <- .keys(.rows(tests), c("by", "model"))
  }
  lapply(out, function(d) {
    rownames(d) <- NULL
    d
  })
}
