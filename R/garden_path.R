# Garden-path sentences (Aher et al. 2023, Appendix C). The sentence is the unit of inference:
# P(ungrammatical) per trial is averaged over the names that judged each version of a sentence,
# and the garden-path version is compared with the control of the same sentence across sentences.

garden_path_sentences <- function(responses) {
  d <- responses
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

garden_path_tests <- function(sentences) {
  d <- sentences$difference[!is.na(sentences$difference)]
  n <- length(d)
  base <- data.frame(n = n, n_gp_greater = sum(d > 0), n_gp_lower = sum(d < 0),
                     estimate = if (n) mean(d) else NA_real_, stringsAsFactors = FALSE)
  tt <- one_sample_test(d)  # the paired t-test: a one-sample test of the differences
  w <- data.frame(statistic = NA_real_, p.value = NA_real_)
  if (n >= 2 && any(d != 0)) {
    # scipy's default: exact null distribution up to 50 pairs, no continuity correction, and the
    # smaller of the two signed-rank sums as the statistic (R reports the positive one, V)
    r <- suppressWarnings(stats::wilcox.test(d, exact = n <= 50, correct = FALSE))
    v <- unname(r$statistic)
    w <- data.frame(statistic = min(v, n * (n + 1) / 2 - v), p.value = r$p.value)
  }
  rbind(cbind(base, test = "Paired t-test", tt[c("statistic", "df", "p.value")], stringsAsFactors = FALSE),
        cbind(base, test = "Wilcoxon signed-rank test", statistic = w$statistic, df = NA_real_,
              p.value = w$p.value, stringsAsFactors = FALSE))
}
