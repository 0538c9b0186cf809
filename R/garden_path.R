# Garden-path sentences (Aher et al. 2023, Appendix C). The sentence is the unit of inference:
# P(ungrammatical) per trial is averaged over the names that judged each version of a sentence,
# and the garden-path version is compared with the control of the same sentence across sentences.

#' Garden-Path Sentences: Per-Sentence Means and Paired Tests
#'
#' The Garden Path analysis of Aher et al. (2023), Appendix C, with the sentence as the unit:
#' \code{garden_path_sentences} averages P(ungrammatical) over the names that judged each version of
#' a sentence; \code{garden_path_tests} compares the garden-path version with the control of the same
#' sentence across sentences, as the Python \samp{simsubjects.studies.garden_path.analysis}.
#'
#' @param responses tidy responses of a Garden Path run: \code{trial, response, weight, model, item, condition} (\code{"garden_path"} or \code{"control"}), \code{set, type}; human rows (\code{source != "model"}) are left out.
#' @param sentences the rows of \code{garden_path_sentences} to compare (e.g. one model and type).
#' @details
#' The paired t-test is the one-sample t-test of the differences (\code{\link{one_sample_test}}). The
#' Wilcoxon signed-rank test is the package's one (Python's \samp{analyze.methods.paired.wilcoxon}): zero
#' differences dropped, the exact null distribution below 50 sentences without ties, else the normal
#' approximation with continuity correction; the statistic is V, the rank sum of the positive differences
#' (\code{wilcox.test}'s), not the smaller of the two sums.
#' @return
#' \code{garden_path_sentences}: one row per model, set, type and sentence (\code{item}) with
#' \code{garden_path, control, difference}. \code{garden_path_tests}: two rows (\code{test} =
#' "Paired t-test", "Wilcoxon signed-rank test") with \code{n, n_gp_greater, n_gp_lower, estimate}
#' (mean difference), \code{statistic, df, p.value, effect_size} (Cohen's d_z, t / sqrt(n), on the
#' paired t-test's row) and \code{effect_size_type}.
#' @examples
#' d <- expand.grid(item = c("s1", "s2", "s3"), condition = c("garden_path", "control"),
#'                  response = c("ungrammatical", "grammatical"), stringsAsFactors = FALSE)
#' d$trial <- paste(d$item, d$condition)
#' d$model <- "m"; d$set <- "published"; d$type <- "OT"
#' d$weight <- ifelse(d$response == "ungrammatical",
#'                    ifelse(d$condition == "garden_path", c(0.6, 0.7, 0.5), c(0.3, 0.4, 0.45)), 0.5)
#' s <- garden_path_sentences(d)
#' garden_path_tests(s)
#' @rdname garden_path
#' @export
garden_path_sentences <- function(responses) {
  d <- .plain(responses, "responses")
  if ("source" %in% names(d)) d <- d[d$source == "model", , drop = FALSE]
  key <- c("model", "set", "type", "item")
  miss <- setdiff(c(key, "condition"), names(d))
  if (length(miss)) stop(sprintf("responses: missing column(s) %s; expected a Garden Path run",
                                 paste(miss, collapse = ", ")), call. = FALSE)
  p <- prob_of(d, "ungrammatical", keep = c(key, "condition"))
  m <- stats::aggregate(list(p = p$p_ungrammatical), by = p[c(key, "condition")], FUN = mean)
  gp <- m[m$condition == "garden_path", c(key, "p")]
  ct <- m[m$condition == "control", c(key, "p")]
  names(gp)[5] <- "garden_path"
  names(ct)[5] <- "control"
  out <- merge(gp, ct, by = key, all = TRUE)
  out$difference <- out$garden_path - out$control
  out <- out[do.call(order, out[key]), , drop = FALSE]
  rownames(out) <- NULL
  out
}

#' @rdname garden_path
#' @export
garden_path_tests <- function(sentences) {
  d <- sentences$difference[!is.na(sentences$difference)]
  n <- length(d)
  base <- data.frame(n = n, n_gp_greater = sum(d > 0), n_gp_lower = sum(d < 0),
                     estimate = if (n) mean(d) else NA_real_, stringsAsFactors = FALSE)
  tt <- one_sample_test(d)  # the paired t-test: a one-sample test of the differences
  w <- data.frame(statistic = NA_real_, p.value = NA_real_)
  if (n >= 2 && any(d != 0)) {
    # as the package's signed-rank test (simsubjects/analyze/methods/paired.py wilcoxon): zero differences
    # dropped, the exact null distribution below 50 pairs without ties, else the normal approximation with
    # continuity correction; the statistic is V, the rank sum of the positive differences
    nz <- d[d != 0]
    exact <- length(nz) < 50 && !anyDuplicated(abs(nz))
    r <- suppressWarnings(stats::wilcox.test(nz, exact = exact, correct = !exact))
    w <- data.frame(statistic = unname(r$statistic), p.value = r$p.value)
  }
  # Cohen's d_z from t.test's own output, t / sqrt(n) (NA where no test was made)
  dz <- if (is.finite(tt$statistic)) unname(tt$statistic) / sqrt(n) else NA_real_
  rbind(cbind(base, test = "Paired t-test", tt[c("statistic", "df", "p.value")], effect_size = dz,
              effect_size_type = "cohen_d_z", stringsAsFactors = FALSE),
        cbind(base, test = "Wilcoxon signed-rank test", statistic = w$statistic, df = NA_real_,
              p.value = w$p.value, effect_size = NA_real_, effect_size_type = NA_character_,
              stringsAsFactors = FALSE))
}
