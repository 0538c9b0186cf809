# The R side of the immigration conjoint in a replication folder: the same tables as the Python
# analysis (simsubjects/analyze/conjoint_study.py: amce.csv, mm.csv), from the exported profile-level
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
#' @return A named list of two data frames, \code{amce} and \code{mm}, with the columns of the
#'   Python tables \file{analysis/amce.csv} and \file{analysis/mm.csv}: \code{source, feature, level,
#'   estimate, std.error, statistic, p.value, conf.low, conf.high, n, model}.
#' @examples
#' folder <- system.file("extdata", "replication", "conjoint_immigration", package = "simsubjects")
#' res <- replicate_conjoint(folder)
#' check_results(res, folder)
#' head(as_cregg(res$amce, outcome = "chosen"))
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
  for (src in unique(p$source)) {
    g <- p[p$source == src, , drop = FALSE]
    h0 <- if (g$outcome_kind[1] == "rating") 4 else 0.5
    amce_rows[[src]] <- cbind(source = src, conjoint_amce(g, "chosen", features, id = "id",
                                                          constraints = constraints), model = src)
    mm_rows[[src]] <- cbind(source = src, conjoint_mm(g, "chosen", features, id = "id", h0 = h0),
                            model = src)
  }
  out <- list(amce = .rows(amce_rows), mm = .rows(mm_rows))
  lapply(out, function(d) {
    rownames(d) <- NULL
    d
  })
}
