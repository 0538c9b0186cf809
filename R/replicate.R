# The R side of `simsubjects replicate`: one exported function per study, called by the analysis.R
# of a replication folder on that study's run folder. Each returns its result tables as a named
# list; write_results() prints and writes them. Their Python twins are in simsubjects/analyze.

.chr <- function(d) {
  for (c in names(d)) if (is.factor(d[[c]])) d[[c]] <- as.character(d[[c]])
  d
}

# the columns that identify a row of a result table (check_results matches R and Python rows on them)
.keys <- function(d, keys) {
  attr(d, "keys") <- keys
  d
}

.rows <- function(lst) {
  lst <- Filter(Negate(is.null), lst)
  if (length(lst)) do.call(rbind, lst) else data.frame()
}

#' Write and print a replication's result tables
#'
#' Prints the first rows of each table and writes it to \code{<dir>/<name>.csv}.
#'
#' @param results A named list of data frames, as returned by the \code{replicate_*()} functions.
#' @param dir Folder to write into (created if missing).
#' @param show Rows printed per table.
#' @return \code{results}, invisibly.
#' @examples
#' folder <- system.file("extdata", "replication", "wisdom", package = "simsubjects")
#' write_results(replicate_wisdom(folder), file.path(tempdir(), "r_results"), show = 5)
#' @family replication
#' @export
write_results <- function(results, dir = "r_results", show = 40) {
  dir.create(dir, showWarnings = FALSE, recursive = TRUE)
  for (name in names(results)) {
    df <- results[[name]]
    cat(sprintf("\n== %s (%d rows) ==\n", name, nrow(df)))
    print(utils::head(df, show), row.names = FALSE, digits = 4)
    utils::write.csv(df, file.path(dir, paste0(name, ".csv")), row.names = FALSE)
  }
  invisible(results)
}

#' Ultimatum Game: acceptance by offer and the gender-pairing contrast
#'
#' P(accept) per trial (\code{\link{prob_of}}); per model and offer its mean with a one-sample t-test
#' (\code{\link{one_sample_test}}); per model, over all offers and per offer, the Welch test of the pairing
#' "Mr-Ms minus Ms-Mr" (\code{\link{welch_test}}) on one value per name pair (its mean over the offers
#' taken together). Aher et al. (2023), section 4.
#'
#' @template folder
#' @examples
#' folder <- system.file("extdata", "replication", "ultimatum", package = "simsubjects")
#' res <- replicate_ultimatum(folder)
#' check_results(res, folder)
#' @export
replicate_ultimatum <- function(folder) {
  r <- .chr(read_run(folder)$responses)
  p <- prob_of(r[r$source == "model", ], "accept", keep = c("model", "offer", "pairing", "pair"))
  p$offer <- as.numeric(p$offer)
  by_offer <- .rows(lapply(split(p, list(p$model, p$offer), drop = TRUE), function(g) {
    t <- one_sample_test(g$p_accept)
    cbind(model = g$model[1], offer = g$offer[1], mean = t$estimate, t[setdiff(names(t), "estimate")])
  }))
  welch <- .rows(lapply(split(p, p$model), function(gm) .rows(lapply(c("all", sort(unique(gm$offer))), function(o) {
    g <- if (o == "all") gm else gm[gm$offer == as.numeric(o), ]
    # the name pair is the unit: its mean P(accept) over the offers (one offer: its value)
    g <- stats::aggregate(p_accept ~ pairing + pair, data = g, FUN = mean)
    x <- g$p_accept[g$pairing == "Mr-Ms"]
    y <- g$p_accept[g$pairing == "Ms-Mr"]
    if (length(x) < 2 || length(y) < 2) return(NULL)
    w <- welch_test(x, y)
    names(w)[names(w) %in% c("n1", "n2")] <- c("n_x", "n_y")
    cbind(model = gm$model[1], offer = o, comparison = "Mr-Ms minus Ms-Mr", test = "Welch two-sample t-test", w)
  }))))
  list(acceptance_by_offer = .keys(by_offer, c("model", "offer")),
       pairing_tests = .keys(welch, c("model", "offer", "comparison", "test")))
}

#' Garden Path sentences: per-sentence means and the paired tests
#'
#' Mean P(ungrammatical) per sentence and version (\code{\link{garden_path_sentences}}), then garden path
#' against control across sentences, over all sentences and per verb type (\code{\link{garden_path_tests}}).
#' Aher et al. (2023), section 5 and Appendix C.
#'
#' @template folder
#' @examples
#' folder <- system.file("extdata", "replication", "garden_path", package = "simsubjects")
#' res <- replicate_garden_path(folder)
#' check_results(res, folder)
#' @export
replicate_garden_path <- function(folder) {
  s <- garden_path_sentences(.chr(read_run(folder)$responses))
  # the sets one by one, and pooled as "both" when the run has two (as the Python table)
  sets <- if (length(unique(s$set)) > 1) rbind(s, transform(s, set = "both")) else s
  tests <- .rows(c(
    lapply(split(sets, list(sets$model, sets$set), drop = TRUE), function(g)
      cbind(model = g$model[1], set = g$set[1], type = "all", garden_path_tests(g))),
    lapply(split(sets, list(sets$model, sets$set, sets$type), drop = TRUE), function(g)
      cbind(model = g$model[1], set = g$set[1], type = g$type[1], garden_path_tests(g)))))
  names(tests)[names(tests) == "n"] <- "n_sentences"
  names(tests)[names(tests) == "estimate"] <- "mean_difference"
  list(per_sentence = .keys(s, c("model", "set", "type", "item")),
       paired_tests = .keys(tests, c("model", "set", "type", "test")))
}

#' Wisdom of Crowds: median, quartiles and exact share per question
#'
#' \code{\link{wisdom_questions}} on the run's estimates and the items' true answers (quantile type 7, numpy's
#' default). Aher et al. (2023), section 7.
#'
#' @template folder
#' @examples
#' folder <- system.file("extdata", "replication", "wisdom", package = "simsubjects")
#' res <- replicate_wisdom(folder)
#' check_results(res, folder)
#' @export
replicate_wisdom <- function(folder) {
  run <- read_run(folder)
  list(per_question = .keys(wisdom_questions(.chr(run$responses), .chr(run$items)[c("item", "truth")]),
                            c("model", "item")))
}

#' Milgram obedience: share still obeying by level (Kaplan-Meier)
#'
#' From the per-subject break-off rows, the survival table of each model and of Milgram's (1963)
#' participants (\code{\link{milgram_survival}}), levels with a refusal and the two ends. Aher et al. (2023),
#' section 6 and Appendix E. The table \code{survival} has the columns of the Python table \file{analysis/survival.csv}
#' (\code{at_risk}, \code{events}, \code{share_obeying}) beside the Kaplan-Meier errors and interval.
#'
#' @template folder
#' @examples
#' folder <- system.file("extdata", "replication", "milgram", package = "simsubjects")
#' res <- replicate_milgram(folder)
#' check_results(res, folder)
#' @export
replicate_milgram <- function(folder) {
  r <- .chr(read_run(folder)$responses)
  b <- r[r$condition %in% "breakoff", ]
  b <- data.frame(model = b$model, level = as.numeric(b$breakoff_level),
                  censored = as.logical(b$censored) %in% TRUE)
  s <- milgram_survival(b, max_level = 30, by = "model")
  s <- s[s$n.event > 0 | s$level %in% c(0, 30), ]
  # the Python table's names: at_risk, events, share_obeying
  names(s)[match(c("n.risk", "n.event", "estimate"), names(s))] <- c("at_risk", "events", "share_obeying")
  rownames(s) <- NULL
  list(survival = .keys(s, c("model", "level")))
}

#' Survey response biases: delta per question and t-tests across questions
#'
#' \code{\link{delta_bias}} per question and \code{\link{delta_tests}} across questions (the one-sample tests of
#' Tjuatja et al. 2024, Table 4).
#'
#' @template folder
#' @examples
#' folder <- system.file("extdata", "replication", "survey_bias", package = "simsubjects")
#' res <- replicate_survey_bias(folder)
#' check_results(res, folder)
#' @export
replicate_survey_bias <- function(folder) {
  run <- read_run(folder)
  d <- delta_bias(.chr(run$responses), if (is.null(run$items)) NULL else .chr(run$items))
  t <- delta_tests(d)
  t$test <- c("One Sample t-test" = "One-sample t-test",
              "Welch Two Sample t-test" = "Welch two-sample t-test")[t$method]
  keys <- c("model", "bias", "perturbation", "setting", "test")
  names(d)[names(d) == "estimate"] <- "delta"
  list(deltas = .keys(d, c("model", "bias", "perturbation", "key")),
       bias_tests = .keys(t[t$setting == "bias", , drop = FALSE], keys),
       perturbation_tests = .keys(t[t$setting != "bias", , drop = FALSE], keys))
}

#' The factor contrasts of MoCa: for each task and factor, the attribute pair (A, B) of A - B
#' @noRd
.moca_contrasts <- list(
  causal = list(causal_structure = c("Conjunctive", "Disjunctive"), agent_awareness = c("Aware", "Unaware"),
                norm_type = c("Prescriptive", "Statistical"), event_normality = c("Abnormal", "Normal"),
                action_omission = c("Action", "Omission"), time = c("Late", "Early")),
  moral = list(causal_role = c("Side effect", "Means"), personal_force = c("Impersonal", "Personal"),
               evitability = c("Inevitable", "Avoidable"), beneficence = c("Self-beneficial", "Other-beneficial"),
               locus_of_intervention = c("Agent of harm", "Patient of harm")))

#' MoCa: AMCE per factor for people and the model
#'
#' P(Yes) per trial (a 0/1 vote for people; "not sure" counts one half; a model trial without a
#' valid answer counts 0.5, as the released evaluator), then per system, task and factor the AMCE by
#' OLS with story-clustered CR2 errors (\code{\link{amce}}, estimatr). Nie et al. (2023).
#'
#' @template folder
#' @examples
#' folder <- system.file("extdata", "replication", "moca", package = "simsubjects")
#' res <- replicate_moca(folder)
#' check_results(res, folder)
#' @export
replicate_moca <- function(folder) {
  run <- read_run(folder)
  r <- .chr(run$responses)
  it <- .chr(run$items)
  lab <- tolower(trimws(r$response))
  r$yes <- ifelse(lab == "yes", 1, ifelse(lab == "not sure", 0.5, 0))
  r$w <- as.numeric(r$weight) * (lab %in% c("yes", "no", "not sure"))
  id <- paste(r$source, r$model, r$trial, sep = "\r")
  y <- tapply(r$w * r$yes, id, sum) / tapply(r$w, id, sum)
  tr <- r[!duplicated(id), c("source", "model", "trial", "item")]
  tr$y <- as.numeric(y[paste(tr$source, tr$model, tr$trial, sep = "\r")])
  tr$y[is.na(tr$y) & tr$source != "human"] <- 0.5
  tr <- merge(tr, it, by = "item", all.x = TRUE)
  out <- list()
  for (task in names(.moca_contrasts)) for (f in names(.moca_contrasts[[task]])) {
    if (!f %in% names(tr)) next
    for (sys in unique(paste(tr$source, tr$model, sep = "/"))) {
      g <- tr[paste(tr$source, tr$model, sep = "/") == sys & tr$task == task & !is.na(tr$y), ]
      lv <- .moca_contrasts[[task]][[f]]
      if (sum(g[[f]] %in% lv) < 2) next
      a <- amce(g, "y", f, "item", se_type = "CR2", levels = lv, baseline = lv[2])
      out[[length(out) + 1]] <- cbind(source = g$source[1], model = g$model[1], task = task, a)
    }
  }
  res <- .rows(out)
  if (!nrow(res)) {
    cat("\nmoca: no factor has two annotated stories in this run; no AMCE\n")
    return(list())
  }
  # the Python table's names: factor, level_a (A of A - B), level_b, n_a, n_b, method
  res <- data.frame(res[c("source", "model", "task")], factor = res$attribute, term = res$term,
                    level_a = res$level, level_b = res$baseline,
                    res[c("estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high", "n",
                          "n_clusters")], n_a = res$n_level, n_b = res$n_baseline, method = "ols-cluster",
                    se_type = "CR2", stringsAsFactors = FALSE, check.names = FALSE)
  list(amce = .keys(res, c("source", "model", "task", "factor", "term", "method", "se_type")))
}

#' Opinion survey: representativeness of the default prompt and the personas by group
#'
#' \code{\link{opinion_representativeness}} of the run's responses: for each prompt (the default, the
#' personas pooled), the representativeness to every human group and Overall (Santurkar et al. 2023).
#'
#' @template folder
#' @examples
#' folder <- system.file("extdata", "replication", "opinion_survey", package = "simsubjects")
#' res <- replicate_opinion_survey(folder)
#' check_results(res, folder)
#' @export
replicate_opinion_survey <- function(folder) {
  r <- opinion_representativeness(.chr(read_run(folder)$responses))
  # opinion_distributions() keys a prompt as "<model> | <prompt>"; the Python table has both columns
  cut <- regexpr(" | ", r$model, fixed = TRUE)
  last <- vapply(gregexpr(" | ", r$model, fixed = TRUE), function(m) max(m), 1)
  r <- data.frame(model = ifelse(cut > 0, substr(r$model, 1, last - 1), r$model),
                  prompt = ifelse(cut > 0, substring(r$model, last + 3), ""),
                  r[setdiff(names(r), "model")], stringsAsFactors = FALSE, check.names = FALSE)
  list(representativeness = .keys(r, c("model", "prompt", "attribute", "group")))
}
