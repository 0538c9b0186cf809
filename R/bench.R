# R twins of `simsubjects bench report`'s effect sizes and across-finding statistics
# (simsubjects/bench/score.py, simsubjects/analyze/methods/effects.py and power.py), computed with
# effectsize (conversions), pwr (power of t tests) and metafor (Fisher's z) from the scorecard.

.bench_d <- function(value, scale) {
  vapply(seq_along(value), function(i) {
    v <- value[i]
    s <- scale[i]
    if (is.na(v) || is.na(s)) return(NA_real_)
    switch(s,
           d = v, h = v,
           r = effectsize::r_to_d(v),
           z = effectsize::r_to_d(metafor::transf.ztor(v)),
           log_or = effectsize::logoddsratio_to_d(v),
           or = effectsize::oddsratio_to_d(v),
           NA_real_)
  }, numeric(1))
}

.bench_model_d <- function(card) {
  # a binary outcome between two groups: Chinn's d of the 2 x 2 table's odds ratio, whatever scale the
  # estimator reports (difference of proportions, h, log OR), as score.py's model_d; aligned by the
  # hypothesis' direction. Every other outcome: its effect on its own scale, converted.
  d <- .bench_d(card$model_effect, card$model_scale)
  binary <- card$kind == "between" & !is.na(card$model_p1) & !is.na(card$model_p2)
  binary[is.na(binary)] <- FALSE
  or <- effectsize::probs_to_odds(card$model_p1[binary]) / effectsize::probs_to_odds(card$model_p2[binary])
  d[binary] <- card$direction[binary] * effectsize::oddsratio_to_d(or)
  d
}

.bench_power_fisher <- function(p1, p2, n1, n2) {
  # the exact double sum over the two binomials of the tables Fisher's exact test rejects at .05 with
  # p1-hat > p2-hat; each table's two-sided p-value by fisher.test's own rule for a 2 x 2 table (odds
  # ratio 1): the hypergeometric mass of the tables of its margin no likelier than it, relative error 1e-7
  x1 <- 0:n1
  x2 <- 0:n2
  reject <- matrix(FALSE, n1 + 1, n2 + 1)
  for (m in 0:(n1 + n2)) {
    k <- max(0, m - n2):min(m, n1)
    d <- stats::dhyper(k, n1, n2, m)
    p <- vapply(d, function(dk) sum(d[d <= dk * (1 + 1e-7)]), numeric(1))
    reject[cbind(k + 1, m - k + 1)] <- p <= 0.05 & k / n1 > (m - k) / n2
  }
  sum(outer(stats::dbinom(x1, n1, p1), stats::dbinom(x2, n2, p2)) * reject)
}

.bench_power_binary <- function(p1, p2, n1, n2) {
  # the exact double sum over the two binomials of the tables Pearson's chi-square (no continuity
  # correction) rejects at .05 with p1-hat > p2-hat
  x1 <- 0:n1
  x2 <- 0:n2
  pool <- outer(x1, x2, "+") / (n1 + n2)
  diff <- outer(x1 / n1, x2 / n2, "-")
  z2 <- diff^2 / (pool * (1 - pool) * (1 / n1 + 1 / n2))
  reject <- !is.na(z2) & z2 > stats::qchisq(0.95, 1) & diff > 0
  sum(outer(stats::dbinom(x1, n1, p1), stats::dbinom(x2, n2, p2)) * reject)
}

.bench_power_binom <- function(p, n, p0) {
  # binom.test's two-sided rule at each count, summed under Bin(n, p), counts above n p0 only
  x <- 0:n
  rej <- vapply(x, function(k) stats::binom.test(k, n, p0)$p.value <= 0.05 && k / n > p0, logical(1))
  sum(stats::dbinom(x, n, p)[rej])
}

#' Effect Sizes and Significance of a Bench Scorecard, Recomputed in R
#'
#' The R twin of the per-finding columns of \samp{simsubjects bench report}: the model's and the
#' original's effects as Cohen's d (\code{effectsize}'s conversions), the ratio of the model's to the
#' replication's effect on Fisher's z scale (\code{metafor::transf.rtoz}), and the probability that a
#' study of the original's size from the model's population is significant in the original direction,
#' by the computation the scorecard's \code{power_method} names: \code{pwr::pwr.t2n.test} (two-group t
#' tests, association findings included) or \code{pwr::pwr.t.test} (one sample, paired differences);
#' an exact double binomial sum (chi-square and z tests of a binary outcome; Fisher's exact test with
#' \code{fisher.test}'s two-sided rule on every table); \code{binom.test} summed over the binomial
#' (one-sample binomial tests); \code{pwr::pwr.chisq.test} (a multinomial outcome's w); Fisher's z
#' (\code{metafor::transf.rtoz}) against the normal critical value (a correlation test). A binary
#' outcome's model d is Chinn's d of its odds ratio (\code{effectsize::probs_to_odds},
#' \code{oddsratio_to_d}) whatever scale its estimator reports.
#'
#' @param card the scorecard, \samp{scorecard.csv}: one row per finding (the unit).
#' @return a data frame, one row per finding: \code{finding}, \code{model_d}, \code{original_d},
#'   \code{ratio_z}, \code{sig_at_original_n}.
#' @export
bench_effects <- function(card) {
  model_d <- .bench_model_d(card)
  original_d <- .bench_d(card$original_effect, card$original_scale)
  rep_d <- .bench_d(card$replication_effect, card$replication_scale)
  z <- function(d) metafor::transf.rtoz(effectsize::d_to_r(d))
  ratio_z <- ifelse(is.na(rep_d) | rep_d == 0, NA_real_, z(model_d) / z(rep_d))
  sig <- vapply(seq_len(nrow(card)), function(i) .bench_sig(card[i, ], model_d[i]), numeric(1))
  data.frame(finding = card$finding, model_d = model_d, original_d = original_d, ratio_z = ratio_z,
             sig_at_original_n = sig, stringsAsFactors = FALSE)
}

.bench_sig <- function(r, d) {
  # the computation the scorecard names in power_method, each from its own R function
  m <- r$power_method
  if (is.na(m) || m == "") return(NA_real_)
  if (m == "noncentral t" && r$kind %in% c("between", "association")) {
    return(pwr::pwr.t2n.test(n1 = r$original_n1, n2 = r$original_n2, d = d, sig.level = 0.025,
                             alternative = "greater")$power)
  }
  if (m == "noncentral t") {  # one sample, or the paired differences of a within finding
    return(pwr::pwr.t.test(n = r$original_n, d = d, sig.level = 0.025, type = "one.sample",
                           alternative = "greater")$power)
  }
  # the exact sums count rejections with p1-hat > p2-hat; an original that found levels[0] below levels[1]
  # is the same sum with the groups swapped (both tests are symmetric in the two rows)
  g <- if (isTRUE(r$direction < 0)) list(r$model_p2, r$model_p1, r$original_n2, r$original_n1) else
    list(r$model_p1, r$model_p2, r$original_n1, r$original_n2)
  if (m %in% c("exact sum (chi2)", "exact sum (z_proportions)")) return(do.call(.bench_power_binary, g))
  if (m == "exact sum (fisher)") return(do.call(.bench_power_fisher, g))
  if (m == "exact sum (binomial)") {
    if (isTRUE(r$direction < 0)) return(.bench_power_binom(1 - r$model_p1, r$original_n, 1 - r$null))
    return(.bench_power_binom(r$model_p1, r$original_n, r$null))
  }
  if (m == "Fisher z normal") {  # the test of a correlation: Fisher's z against the normal critical value
    z <- metafor::transf.rtoz(r$model_effect) * sqrt(r$original_n - 3)
    return(stats::pnorm(z - stats::qnorm(0.975)))
  }
  if (startsWith(m, "noncentral chi-square")) {
    return(pwr::pwr.chisq.test(w = r$model_effect, N = r$original_n, df = r$chi2_df, sig.level = 0.05)$power)
  }
  NA_real_
}

#' Across-Finding Statistics of a Bench Scorecard, Recomputed in R
#'
#' The R twin of the model's rows of \samp{across.csv} over all findings (unit: the finding): the
#' share of directions right, Pearson's r (\code{cor}), Lin's concordance (its formula with population
#' moments, as HumanStudy-Bench's ECS), the disattenuated correlation of Hewitt et al. (2024): r over
#' the square root of the replication effects' reliability, (var - mean se^2) / var; the rate of
#' significance at the original's N among findings the replication did not support; the mean PAS.
#' Findings whose d is infinite on either side (a model answer without spread) are left out, as in
#' \samp{across.csv}.
#'
#' @param card the scorecard, \samp{scorecard.csv}.
#' @return a data frame with \code{statistic} and \code{estimate}.
#' @export
bench_across <- function(card) {
  ccc <- function(x, y) {
    mx <- mean(x); my <- mean(y)
    2 * mean((x - mx) * (y - my)) / (mean((x - mx)^2) + mean((y - my)^2) + (mx - my)^2)
  }
  # the findings with a finite d on both sides, as score.py: a model answer without spread (d = +-Inf)
  # has no place in a correlation, and the direction share is taken over the same findings
  rep <- card[is.finite(card$replication_d) & is.finite(card$model_d), ]
  x <- rep$model_d
  y <- rep$replication_d
  nz <- x != 0 & y != 0
  r <- if (nrow(rep) >= 3) stats::cor(x, y) else NA_real_
  se <- is.finite(rep$replication_se_d)  # the disattenuated r uses the findings whose sampling error is known
  ys <- y[se]
  rel <- if (sum(se) >= 3) (stats::var(ys) - mean(rep$replication_se_d[se]^2)) / stats::var(ys) else NA_real_
  r_se <- if (sum(se) >= 3) stats::cor(x[se], ys) else NA_real_
  unsupported <- card$replication_supported %in% c("False", "FALSE", FALSE) & is.finite(card$sig_at_original_n)
  both <- is.finite(card$original_d) & is.finite(card$model_d)
  data.frame(
    statistic = c("direction_share", "pearson_r", "lins_ccc", "disattenuated_r", "false_positive_rate",
                  "pas", "ecs"),
    estimate = c(if (any(nz)) mean(sign(x[nz]) == sign(y[nz])) else NA_real_, r,
                 if (nrow(rep) >= 2) ccc(y, x) else NA_real_,
                 if (!is.na(rel) && rel > 0) r_se / sqrt(rel) else NA_real_,
                 if (any(unsupported)) mean(card$sig_at_original_n[unsupported]) else NA_real_,
                 mean(card$pas, na.rm = TRUE),
                 if (sum(both) >= 2) ccc(card$original_d[both], card$model_d[both]) else NA_real_),
    stringsAsFactors = FALSE)
}
